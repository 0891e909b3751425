// Package nri follows containerd (or CRI-O) for the agent as an NRI plugin.
package nri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"

	"colo/agent/core"
	"colo/agent/discovery"
	"colo/workload"
)

// DefaultSocket is where containerd serves NRI plugins.
const DefaultSocket = "/var/run/nri/nri.sock"

// Source follows containerd (v2; also CRI-O) as an NRI plugin (github.com/containerd/nri
// pkg/stub): Synchronize gives the full list when the plugin (re)connects, PostStart,
// StopContainer and RemoveContainer follow lifecycles. Containerd restarts close the
// connection: the plugin reports the runtime down and reconnects with back-off. A
// container's annotations count as labels (Kubernetes pod annotations carry the
// vocabulary).
type Source struct {
	Socket string // default DefaultSocket
	Log    *slog.Logger
	// Retry is the first reconnect delay (doubling up to 10 s); default 250 ms.
	Retry time.Duration
	// Index orders the plugin among others (default "50").
	Index string
}

// Name implements Discovery.
func (n *Source) Name() string { return "nri" }

// Run implements Discovery.
func (n *Source) Run(ctx context.Context, out chan<- discovery.Event) {
	sock := n.Socket
	if sock == "" {
		sock = DefaultSocket
	}
	idx := n.Index
	if idx == "" {
		idx = "50"
	}
	first := n.Retry
	if first <= 0 {
		first = 250 * time.Millisecond
	}
	wait := first
	for ctx.Err() == nil {
		closed := make(chan struct{})
		p := &nriPlugin{ctx: ctx, out: out, log: n.Log}
		s, err := stub.New(p, stub.WithPluginName("colo-agent"), stub.WithPluginIdx(idx), stub.WithSocketPath(sock),
			stub.WithOnClose(func() { close(closed) }))
		if err == nil {
			err = s.Start(ctx)
		}
		if err == nil {
			wait = first
			select {
			case <-closed:
				err = errors.New("NRI connection closed (containerd restarting?)")
			case <-ctx.Done():
			}
			s.Stop()
		} else {
			err = fmt.Errorf("NRI at %s: %w (is containerd ≥ 1.7 running with NRI enabled?)", sock, err)
		}
		if ctx.Err() != nil {
			return
		}
		if !discovery.DownThenWait(ctx, out, err, wait) {
			return
		}
		wait = min(2*wait, 10*time.Second)
	}
}

type nriPlugin struct {
	ctx context.Context
	out chan<- discovery.Event
	log *slog.Logger
}

func (p *nriPlugin) send(ev discovery.Event) {
	select {
	case p.out <- ev:
	case <-p.ctx.Done():
	}
}

// Synchronize implements stub.SynchronizeInterface: the running containers.
func (p *nriPlugin) Synchronize(_ context.Context, pods []*api.PodSandbox, cs []*api.Container) ([]*api.ContainerUpdate, error) {
	byID := map[string]*api.PodSandbox{}
	for _, pod := range pods {
		byID[pod.GetId()] = pod
	}
	var list []core.Container
	for _, c := range cs {
		if c.GetState() != api.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if ct, ok := p.container(byID[c.GetPodSandboxId()], c); ok {
			list = append(list, ct)
		}
	}
	p.send(discovery.Event{Kind: discovery.Sync, Containers: list})
	return nil, nil
}

// PostStartContainer implements stub.PostStartContainerInterface.
func (p *nriPlugin) PostStartContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	if ct, ok := p.container(pod, c); ok {
		p.send(discovery.Event{Kind: discovery.Upsert, Containers: []core.Container{ct}})
	}
	return nil
}

// StopContainer implements stub.StopContainerInterface.
func (p *nriPlugin) StopContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) ([]*api.ContainerUpdate, error) {
	p.send(discovery.Event{Kind: discovery.Gone, ID: c.GetId()})
	return nil, nil
}

// RemoveContainer implements stub.RemoveContainerInterface.
func (p *nriPlugin) RemoveContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) error {
	p.send(discovery.Event{Kind: discovery.Gone, ID: c.GetId()})
	return nil
}

// container describes an NRI container: labels and annotations merged (annotations win),
// the cgroup from its PID, or from its cgroups path when the runtime gave no PID.
func (p *nriPlugin) container(pod *api.PodSandbox, c *api.Container) (core.Container, bool) {
	labels := map[string]string{}
	for k, v := range c.GetLabels() {
		labels[k] = v
	}
	for k, v := range c.GetAnnotations() {
		labels[k] = v
	}
	if pod != nil {
		for k, v := range pod.GetAnnotations() {
			if _, ok := labels[k]; !ok {
				labels[k] = v
			}
		}
	}
	if labels[workload.LabelOwner] == workload.OwnerValue {
		return core.Container{}, false
	}
	name := c.GetName()
	if pod != nil && pod.GetName() != "" {
		name = pod.GetNamespace() + "/" + pod.GetName() + "/" + name
	}
	image := labels["io.kubernetes.cri.image-name"]
	ct := core.Container{ID: c.GetId(), Name: name, Image: image, Labels: labels, PID: int(c.GetPid())}
	var cg workload.Cgroup
	var err error
	if ct.PID > 0 {
		cg, err = workload.CgroupOfPID(ct.PID)
	} else {
		cg, err = cgroupOfPath(c.GetLinux().GetCgroupsPath())
	}
	if err != nil {
		if p.log != nil {
			p.log.Warn("container cgroup not found; it gets no PID sync or counters", "container", name, "err", err)
		}
		return ct, true
	}
	ct.Cgroup, ct.CgroupDirs, ct.CgroupV = cg.Path, cg.Dirs, cg.Version
	return ct, true
}

// cgroupOfPath resolves an OCI cgroups path: "/a/b" (cgroupfs) or "slice:prefix:name"
// (the systemd driver: <slice path>/<prefix>-<name>.scope).
func cgroupOfPath(p string) (workload.Cgroup, error) {
	if p == "" {
		return workload.Cgroup{}, errors.New("no cgroups path")
	}
	if parts := strings.Split(p, ":"); len(parts) == 3 {
		slice := parts[0]
		dir := "/"
		if slice != "" && slice != "-" {
			// a-b-c.slice lives in a.slice/a-b.slice/a-b-c.slice
			name := strings.TrimSuffix(slice, ".slice")
			acc := ""
			for _, seg := range strings.Split(name, "-") {
				if acc == "" {
					acc = seg
				} else {
					acc += "-" + seg
				}
				dir = filepath.Join(dir, acc+".slice")
			}
		}
		p = filepath.Join(dir, parts[1]+"-"+parts[2]+".scope")
	}
	cg, err := workload.CgroupAtPath(p)
	if err != nil {
		return cg, err
	}
	if _, err := os.Stat(cg.Dir("cpu")); err != nil {
		return workload.Cgroup{}, fmt.Errorf("cgroup %s: %w", p, err)
	}
	return cg, nil
}
