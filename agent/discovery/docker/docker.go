// Package docker follows dockerd for the agent (discovery.Source over the Engine API).
package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"colo/agent/core"
	"colo/agent/discovery"
	"colo/workload"
)

// Source follows dockerd through the Engine API: the event stream (start, die, destroy,
// update) plus the full list of running containers at start-up and after every
// reconnect. Containers that colo run itself started (label colo.owner=colo) are left to
// it.
type Source struct {
	Log *slog.Logger
	// Retry is the first reconnect delay (doubling up to 30 s); default 500 ms.
	Retry time.Duration
}

// Name implements Discovery.
func (d *Source) Name() string { return "docker" }

// Run implements Discovery.
func (d *Source) Run(ctx context.Context, out chan<- discovery.Event) {
	wait := d.Retry
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	first := wait
	for ctx.Err() == nil {
		synced, err := d.session(ctx, out)
		if ctx.Err() != nil {
			return
		}
		if synced {
			wait = first
		}
		if !discovery.DownThenWait(ctx, out, err, wait) {
			return
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// session connects, subscribes to events, lists the running containers and follows the
// events until the stream breaks. synced says whether the list was sent.
func (d *Source) session(ctx context.Context, out chan<- discovery.Event) (synced bool, err error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return false, err
	}
	defer cli.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = cli.Ping(pctx)
	cancel()
	if err != nil {
		return false, fmt.Errorf("%w: Docker is not reachable at %s (%v); start dockerd or set DOCKER_HOST", workload.ErrUnavailable, cli.DaemonHost(), err)
	}
	ectx, stop := context.WithCancel(ctx)
	defer stop()
	f := filters.NewArgs(filters.Arg("type", "container"))
	for _, a := range []string{"start", "die", "destroy", "update"} {
		f.Add("event", a)
	}
	msgs, errs := cli.Events(ectx, events.ListOptions{Filters: f})
	// subscribed first, listed second: nothing starting in between is missed
	list, err := cli.ContainerList(ctx, container.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("docker: list containers: %w", err)
	}
	var cs []core.Container
	for _, c := range list {
		if ct, ok := d.inspect(ctx, cli, c.ID); ok {
			cs = append(cs, ct)
		}
	}
	select {
	case out <- discovery.Event{Kind: discovery.Sync, Containers: cs}:
	case <-ctx.Done():
		return false, nil
	}
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case err := <-errs:
			if err == nil {
				err = errors.New("event stream closed")
			}
			return true, fmt.Errorf("docker event stream lost: %w", err)
		case m := <-msgs:
			var ev discovery.Event
			switch m.Action {
			case events.ActionStart, events.ActionUpdate:
				ct, ok := d.inspect(ctx, cli, m.Actor.ID)
				if !ok {
					continue // exited before it could be inspected; its die event follows
				}
				ev = discovery.Event{Kind: discovery.Upsert, Containers: []core.Container{ct}}
			case events.ActionDie, events.ActionDestroy:
				ev = discovery.Event{Kind: discovery.Gone, ID: m.Actor.ID}
			default:
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return true, nil
			}
		}
	}
}

// inspect describes a running container (ok false: not running, gone, or colo run's).
func (d *Source) inspect(ctx context.Context, cli *client.Client, id string) (core.Container, bool) {
	c, err := cli.ContainerInspect(ctx, id)
	if err != nil || c.State == nil || !c.State.Running || c.Config == nil {
		return core.Container{}, false
	}
	if c.Config.Labels[workload.LabelOwner] == workload.OwnerValue {
		return core.Container{}, false
	}
	ct := core.Container{ID: c.ID, Name: strings.TrimPrefix(c.Name, "/"), Image: c.Config.Image, Labels: c.Config.Labels, PID: c.State.Pid,
		Digest: c.Image, Command: append(append([]string(nil), c.Config.Entrypoint...), c.Config.Cmd...)}
	if c.HostConfig != nil {
		ct.CPUs = float64(c.HostConfig.NanoCPUs) / 1e9
	}
	cg, err := workload.CgroupOfPID(c.State.Pid)
	if err != nil {
		if d.Log != nil {
			d.Log.Warn("container cgroup not found; it gets no PID sync or counters", "container", ct.Name, "err", err)
		}
		return ct, true
	}
	ct.Cgroup, ct.CgroupDirs, ct.CgroupV = cg.Path, cg.Dirs, cg.Version
	return ct, true
}
