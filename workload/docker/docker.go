// Package docker runs colo workloads as Docker containers through the Docker Engine API
// (the official Go client, API version negotiated, so the Debian docker.io 20.10 engine
// works). Images must exist locally: colo never pulls (`colo image build` makes one).
package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"colo/machine"
	"colo/workload"
)

// Options configure a Runtime.
type Options struct {
	// Network is a user-defined bridge network the containers join; on it they reach
	// each other by name. Empty: Docker's default bridge (no name resolution).
	Network string
	// Labels are added to every container and to the network (e.g. colo.run).
	Labels map[string]string
	// PingTimeout bounds the first contact with dockerd (default 5 s).
	PingTimeout time.Duration
}

// Runtime implements runtime.Runtime with Docker containers.
type Runtime struct {
	cli    *client.Client
	opts   Options
	host   string
	driver string // cgroup driver reported by dockerd

	mu      sync.Mutex
	cpusets map[string]string
}

var _ workload.Runtime = (*Runtime)(nil)

// New connects to dockerd (DOCKER_HOST or the default socket), negotiates the API
// version and checks the daemon answers. If Options.Network is set, the network is
// created when missing.
func New(ctx context.Context, opts Options) (*Runtime, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	r := &Runtime{cli: cli, opts: opts, host: cli.DaemonHost(), cpusets: map[string]string{}}
	to := opts.PingTimeout
	if to <= 0 {
		to = 5 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	info, err := cli.Info(pctx)
	if err != nil {
		cli.Close()
		return nil, unavailable(r.host, err)
	}
	r.driver = info.CgroupDriver
	if opts.Network != "" {
		if err := r.EnsureNetwork(ctx, opts.Network); err != nil {
			cli.Close()
			return nil, err
		}
	}
	return r, nil
}

func unavailable(host string, err error) error {
	return fmt.Errorf("%w: Docker is not reachable at %s (%v); start dockerd (systemctl start docker, or `dockerd &` as root) or point DOCKER_HOST at it", workload.ErrUnavailable, host, err)
}

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return "docker" }

// Client exposes the Docker client for callers that need more (image build).
func (r *Runtime) Client() *client.Client { return r.cli }

// Close releases the client connection.
func (r *Runtime) Close() error { return r.cli.Close() }

// ServerInfo is what colo doctor reports about the engine.
type ServerInfo struct {
	Host          string
	Version       string
	APIVersion    string // negotiated
	CgroupDriver  string
	CgroupVersion string
	OS            string
	Kernel        string
}

// Probe contacts dockerd once and reports its version and cgroup setup.
func Probe(ctx context.Context) (ServerInfo, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return ServerInfo{}, err
	}
	defer cli.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := cli.Info(pctx)
	if err != nil {
		return ServerInfo{Host: cli.DaemonHost()}, unavailable(cli.DaemonHost(), err)
	}
	return ServerInfo{Host: cli.DaemonHost(), Version: info.ServerVersion, APIVersion: cli.ClientVersion(),
		CgroupDriver: info.CgroupDriver, CgroupVersion: info.CgroupVersion, OS: info.OperatingSystem, Kernel: info.KernelVersion}, nil
}

// CgroupDriver is the daemon's cgroup driver (cgroupfs or systemd).
func (r *Runtime) CgroupDriver() string { return r.driver }

func (r *Runtime) ownerLabels(extra map[string]string) map[string]string {
	l := map[string]string{workload.LabelOwner: workload.OwnerValue}
	for k, v := range r.opts.Labels {
		l[k] = v
	}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// EnsureNetwork creates a user-defined bridge network (labelled as colo's) unless one
// with that name exists.
func (r *Runtime) EnsureNetwork(ctx context.Context, name string) error {
	nets, err := r.cli.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("name", name))})
	if err != nil {
		return r.wrap(err, "list networks")
	}
	for _, n := range nets {
		if n.Name == name {
			return nil
		}
	}
	_, err = r.cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Labels: r.ownerLabels(nil)})
	if err != nil {
		return r.wrap(err, "create network "+name)
	}
	return nil
}

// UseNetwork creates network name if needed and attaches containers created from now on.
func (r *Runtime) UseNetwork(ctx context.Context, name string) error {
	if err := r.EnsureNetwork(ctx, name); err != nil {
		return err
	}
	r.mu.Lock()
	r.opts.Network = name
	r.mu.Unlock()
	return nil
}

// RemoveNetwork deletes a network colo created; a missing network is not an error.
func (r *Runtime) RemoveNetwork(ctx context.Context, name string) error {
	err := r.cli.NetworkRemove(ctx, name)
	if err != nil && !cerrdefs.IsNotFound(err) {
		return r.wrap(err, "remove network "+name)
	}
	return nil
}

// ListNetworks returns the names of networks carrying colo's owner label and labels.
func (r *Runtime) ListNetworks(ctx context.Context, labels map[string]string) ([]string, error) {
	f := filters.NewArgs(filters.Arg("label", workload.LabelOwner+"="+workload.OwnerValue))
	for k, v := range labels {
		f.Add("label", k+"="+v)
	}
	nets, err := r.cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, r.wrap(err, "list networks")
	}
	var out []string
	for _, n := range nets {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out, nil
}

func (r *Runtime) wrap(err error, what string) error {
	switch {
	case client.IsErrConnectionFailed(err):
		return unavailable(r.host, err)
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%s: %w: %v", what, workload.ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// ImageExists reports whether ref is present locally.
func (r *Runtime) ImageExists(ctx context.Context, ref string) (bool, error) {
	_, err := r.cli.ImageInspect(ctx, ref)
	if err == nil {
		return true, nil
	}
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return false, r.wrap(err, "inspect image "+ref)
}

// Create implements runtime.Runtime. It refuses images that are not present locally.
func (r *Runtime) Create(ctx context.Context, s workload.Spec) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	if s.Image == "" {
		return "", fmt.Errorf("workload %s: no image given", s.Name)
	}
	ok, err := r.ImageExists(ctx, s.Image)
	if err != nil {
		return "", err
	}
	if !ok {
		hint := "load or build it locally (docker load / docker build)"
		if strings.HasPrefix(s.Image, "colo") {
			hint = "build it with `colo image build --tag " + s.Image + "`"
		}
		return "", fmt.Errorf("workload %s: image %q: %w locally and colo never pulls; %s", s.Name, s.Image, workload.ErrNotFound, hint)
	}
	env := make([]string, 0, len(s.Env))
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	binds := make([]string, 0, len(s.Mounts))
	for _, m := range s.Mounts {
		b := m.Source + ":" + m.Target
		if m.ReadOnly {
			b += ":ro"
		}
		binds = append(binds, b)
	}
	cfg := &container.Config{Image: s.Image, Cmd: s.Command, Env: env, Labels: r.ownerLabels(s.Labels), Hostname: s.Name}
	hc := &container.HostConfig{Binds: binds, Privileged: s.Privileged}
	hc.Resources.CpusetCpus = s.Cpuset
	hc.Resources.CgroupParent = s.CgroupParent
	if s.MemoryBytes > 0 {
		hc.Resources.Memory = s.MemoryBytes
		hc.Resources.MemorySwap = s.MemoryBytes // no swap beyond the limit
	}
	var nc *network.NetworkingConfig
	r.mu.Lock()
	netw := r.opts.Network
	r.mu.Unlock()
	if netw != "" {
		hc.NetworkMode = container.NetworkMode(netw)
		nc = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			netw: {Aliases: append([]string{s.Name}, s.Aliases...)},
		}}
	}
	resp, err := r.cli.ContainerCreate(ctx, cfg, hc, nc, nil, s.Name)
	if err != nil {
		return "", r.wrap(err, "create container "+s.Name)
	}
	r.mu.Lock()
	r.cpusets[resp.ID] = s.Cpuset
	r.mu.Unlock()
	return resp.ID, nil
}

// Start implements runtime.Runtime.
func (r *Runtime) Start(ctx context.Context, id string) error {
	if err := r.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return r.wrap(err, "start container "+short(id))
	}
	return nil
}

// Stop implements runtime.Runtime.
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) error {
	secs := int(math.Ceil(grace.Seconds()))
	if err := r.cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs}); err != nil {
		return r.wrap(err, "stop container "+short(id))
	}
	return nil
}

// Remove implements runtime.Runtime (force: a running container is killed).
func (r *Runtime) Remove(ctx context.Context, id string) error {
	err := r.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	r.mu.Lock()
	delete(r.cpusets, id)
	r.mu.Unlock()
	if err != nil {
		return r.wrap(err, "remove container "+short(id))
	}
	return nil
}

// SetCpuset implements runtime.Runtime (docker update --cpuset-cpus).
func (r *Runtime) SetCpuset(ctx context.Context, id string, cpus string) error {
	if _, err := machine.ParseCPUList(cpus); err != nil {
		return err
	}
	_, err := r.cli.ContainerUpdate(ctx, id, container.UpdateConfig{Resources: container.Resources{CpusetCpus: cpus}})
	if err != nil {
		return r.wrap(err, "update cpuset of container "+short(id))
	}
	r.mu.Lock()
	r.cpusets[id] = cpus
	r.mu.Unlock()
	return nil
}

// SetCPUQuota implements runtime.Runtime (docker update --cpu-quota --cpu-period):
// CFS bandwidth on the running container's cgroup; quota 0 removes the limit.
func (r *Runtime) SetCPUQuota(ctx context.Context, id string, quota, period time.Duration) error {
	if period < time.Millisecond || period > time.Second || (quota != 0 && quota < workload.MinCFSQuota) {
		return fmt.Errorf("CPU quota %v per %v: the period must be 1 ms to 1 s and the quota 0 (no limit) or at least %v", quota, period, workload.MinCFSQuota)
	}
	q := quota.Microseconds()
	if quota == 0 {
		q = -1 // the kernel's "no limit"
	}
	_, err := r.cli.ContainerUpdate(ctx, id, container.UpdateConfig{Resources: container.Resources{CPUPeriod: period.Microseconds(), CPUQuota: q}})
	if err != nil {
		return r.wrap(err, "update CPU quota of container "+short(id))
	}
	return nil
}

// Wait implements runtime.Runtime.
func (r *Runtime) Wait(ctx context.Context, id string) (workload.Exit, error) {
	okc, errc := r.cli.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	select {
	case <-ctx.Done():
		return workload.Exit{}, ctx.Err()
	case err := <-errc:
		return workload.Exit{}, r.wrap(err, "wait for container "+short(id))
	case w := <-okc:
		ex := workload.Exit{Code: int(w.StatusCode)}
		if w.Error != nil {
			ex.Error = w.Error.Message
		}
		if info, err := r.cli.ContainerInspect(ctx, id); err == nil && info.State != nil {
			ex.OOMKilled = info.State.OOMKilled
			if ex.Error == "" {
				ex.Error = info.State.Error
			}
		}
		return ex, nil
	}
}

// Inspect implements runtime.Runtime. For a running container it resolves the root PID's
// cgroup from /proc (works for v1, v2, cgroupfs and systemd drivers).
func (r *Runtime) Inspect(ctx context.Context, id string) (workload.Info, error) {
	c, err := r.cli.ContainerInspect(ctx, id)
	if err != nil {
		return workload.Info{}, r.wrap(err, "inspect container "+short(id))
	}
	info := workload.Info{ID: c.ID, Name: strings.TrimPrefix(c.Name, "/")}
	if c.Config != nil {
		info.Labels = c.Config.Labels
	}
	if c.HostConfig != nil {
		info.Cpuset = c.HostConfig.CpusetCpus
	}
	st := c.State
	if st == nil {
		return info, nil
	}
	info.StartedAt, _ = time.Parse(time.RFC3339Nano, st.StartedAt)
	info.FinishedAt, _ = time.Parse(time.RFC3339Nano, st.FinishedAt)
	switch {
	case st.Running:
		info.State = workload.Running
		info.PID = st.Pid
		if cg, err := workload.CgroupOfPID(st.Pid); err == nil {
			info.Cgroup = cg
		} else if cg, err2 := r.cgroupByDriver(c.ID, c.HostConfig); err2 == nil {
			info.Cgroup = cg
		}
	case st.Status == "created":
		info.State = workload.Created
	default:
		info.State = workload.Exited
		info.Exit = workload.Exit{Code: st.ExitCode, OOMKilled: st.OOMKilled, Error: st.Error}
	}
	return info, nil
}

// cgroupByDriver derives the cgroup from the daemon's driver when /proc/<pid> is not
// visible (colo running in another PID namespace).
func (r *Runtime) cgroupByDriver(id string, hc *container.HostConfig) (workload.Cgroup, error) {
	parent := ""
	if hc != nil {
		parent = hc.CgroupParent
	}
	p, err := workload.ExpectedCgroupPath(r.driver, parent, id)
	if err != nil {
		return workload.Cgroup{}, err
	}
	cg, err := workload.CgroupAtPath(p)
	if err != nil {
		return cg, err
	}
	if _, err := os.Stat(cg.PerfEventDir()); err != nil {
		return workload.Cgroup{}, fmt.Errorf("cgroup of container %s: %w", short(id), err)
	}
	return cg, nil
}

// List implements runtime.Runtime: containers (running or not) with colo's owner label
// and all the given labels (Options.Labels are not implied: a restarted colo lists
// every run's leftovers).
func (r *Runtime) List(ctx context.Context, labels map[string]string) ([]workload.Info, error) {
	f := filters.NewArgs(filters.Arg("label", workload.LabelOwner+"="+workload.OwnerValue))
	for k, v := range labels {
		f.Add("label", k+"="+v)
	}
	cs, err := r.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, r.wrap(err, "list containers")
	}
	out := make([]workload.Info, 0, len(cs))
	for _, c := range cs {
		info, err := r.Inspect(ctx, c.ID)
		if err != nil {
			if errors.Is(err, workload.ErrNotFound) {
				continue // removed meanwhile
			}
			return nil, err
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Logs returns the last tail lines of a container's stdout and stderr (for error
// messages about containers that exited at once).
func (r *Runtime) Logs(ctx context.Context, id string, tail int) (string, error) {
	rc, err := r.cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: fmt.Sprint(tail)})
	if err != nil {
		return "", r.wrap(err, "logs of container "+short(id))
	}
	defer rc.Close()
	var out, errb bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errb, rc); err != nil {
		return "", err
	}
	return strings.TrimSpace(out.String() + errb.String()), nil
}

// Stats implements runtime.Runtime with the one-shot stats endpoint (no two-second
// streaming sample; CPU rates come from two calls, runtime.CPUCores).
func (r *Runtime) Stats(ctx context.Context, id string) (workload.Stats, error) {
	resp, err := r.cli.ContainerStatsOneShot(ctx, id)
	if err != nil {
		return workload.Stats{}, r.wrap(err, "stats of container "+short(id))
	}
	defer resp.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil && err != io.EOF {
		return workload.Stats{}, fmt.Errorf("stats of container %s: %w", short(id), err)
	}
	r.mu.Lock()
	cpuset := r.cpusets[id]
	r.mu.Unlock()
	return convertStats(s, cpuset), nil
}

// convertStats maps the Engine API stats document (cgroup v1 or v2 flavour) to Stats.
func convertStats(s container.StatsResponse, cpuset string) workload.Stats {
	out := workload.Stats{Time: s.Read, Cpuset: cpuset, PIDs: s.PidsStats.Current}
	cu := s.CPUStats.CPUUsage
	out.CPUTotalNs = cu.TotalUsage
	out.CPUAvailable = !s.Read.IsZero() && (cu.TotalUsage > 0 || s.CPUStats.SystemUsage > 0)
	if len(cu.PercpuUsage) > 0 {
		out.PerCPUNs = append([]uint64(nil), cu.PercpuUsage...)
		out.PerCPUPresent = true
	}
	out.OnlineCPUs = int(s.CPUStats.OnlineCPUs)
	ms := s.MemoryStats
	out.MemoryBytes = ms.Usage
	// Page cache is reclaimable: subtract it as the Docker CLI does
	// (v1: total_inactive_file, v2: inactive_file).
	if v, ok := ms.Stats["total_inactive_file"]; ok && v < ms.Usage {
		out.MemoryBytes = ms.Usage - v
	} else if v, ok := ms.Stats["inactive_file"]; ok && v < ms.Usage {
		out.MemoryBytes = ms.Usage - v
	}
	out.MemoryLimit = ms.Limit
	out.MemAvailable = ms.Usage > 0 || ms.Limit > 0
	for _, n := range s.Networks {
		out.NetRxBytes += n.RxBytes
		out.NetTxBytes += n.TxBytes
	}
	out.NetAvailable = s.Networks != nil
	for _, e := range s.BlkioStats.IoServiceBytesRecursive {
		switch strings.ToLower(e.Op) {
		case "read":
			out.BlockRead += e.Value
		case "write":
			out.BlockWrite += e.Value
		}
	}
	out.BlkAvailable = s.BlkioStats.IoServiceBytesRecursive != nil
	return out
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
