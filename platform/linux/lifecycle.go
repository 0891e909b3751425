package linux

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"colo/bench"
	"colo/machine"
	"colo/resctrl"
	"colo/resctrl/alloc"
	"colo/resctrl/journal"
	"colo/workload"
	"colo/workload/docker"
	"colo/workload/process"
)

// Lifecycle: New prepares the host (journal, reconcile of dead runs, runtime, network,
// machine, counters), Close undoes everything the run did.

// labelPlatform marks what this platform creates; reconcile removes only those.
// labelPID names the colo process that created a container: reconcile leaves the
// containers of live colo processes alone.
// labelPIDNS names the PID namespace of that process: a dockerd may be shared by
// several PID namespaces (containers, sandboxes), where a PID says nothing; reconcile
// only judges containers from its own namespace.
const (
	labelPlatform = "colo.platform"
	labelPID      = "colo.pid"
	labelPIDNS    = "colo.pidns"
)

// pidNamespace identifies this process's PID namespace ("pid:[4026531836]").
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "unknown"
	}
	return strings.NewReplacer("[", "", "]", "", ":", "-").Replace(ns)
}

// ownLabels are the labels of everything this process creates.
func ownLabels() map[string]string {
	return map[string]string{labelPlatform: "linux", labelPID: strconv.Itoa(os.Getpid()), labelPIDNS: pidNamespace()}
}

// alive reports whether the process with the given decimal PID exists (and is not us).
func alive(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 || n == os.Getpid() {
		return false
	}
	err = syscall.Kill(n, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// networkPID extracts the creator PID from a network name colo-<unix>-<pid>.
func networkPID(name string) string {
	i := strings.LastIndex(name, "-")
	if i < 0 {
		return ""
	}
	return name[i+1:]
}

// New prepares the host for bm: it takes the host lock, removes what a crashed colo left
// behind, connects to the runtime and resctrl, and detects the machine. bm.Machine is
// replaced by the detected host (the run loop places jobs on the real CPUs).
func New(bm *bench.Benchmark, o Options) (*Platform, error) {
	if o.Image == "" {
		o.Image = docker.DefaultImage
	}
	if o.Runtime == "" {
		o.Runtime = os.Getenv("COLO_RUNTIME")
	}
	if o.Runtime == "" {
		o.Runtime = "docker"
	}
	if o.StateDir == "" {
		o.StateDir = journal.DefaultStateDir()
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 2 * time.Second
	}
	if o.StartGrace <= 0 {
		o.StartGrace = 150 * time.Millisecond
	}
	if o.ResctrlRoot == "" {
		o.ResctrlRoot = os.Getenv("COLO_RESCTRL_ROOT")
	}
	p := &Platform{o: o, jobs: map[int]*job{},
		run: fmt.Sprintf("%d-%d", runStamp(), os.Getpid())}
	p.prefix = resctrl.DefaultPrefix + p.run + "."
	if o.Prefix != "" {
		p.prefix = o.Prefix
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			p.cancel()
			if p.jr != nil {
				p.jr.Close()
			}
		}
	}()
	// resctrl
	switch {
	case o.RDT != nil:
		p.rdt = o.RDT
	case o.ResctrlRoot == "none":
		p.notef("resctrl: disabled; no cache/bandwidth allocation or monitoring")
	default:
		root := o.ResctrlRoot
		explicit := root != ""
		if root == "" {
			root = "/sys/fs/resctrl"
		}
		if _, err := os.Stat(filepath.Join(root, "info")); err != nil {
			if explicit {
				return nil, fmt.Errorf("--resctrl-root %s: not a resctrl mount (no info directory): %v", root, err)
			}
			p.notef("resctrl: not mounted at %s; no cache/bandwidth allocation or monitoring (colo doctor explains; --resctrl-root DIR uses an emulator mount)", root)
		} else {
			r, err := resctrl.OpenAdapter(root)
			if err != nil {
				return nil, fmt.Errorf("resctrl at %s: %w", root, err)
			}
			p.rdt = r
		}
	}
	// runtime
	switch {
	case o.Runtime0 != nil:
		p.rtm = o.Runtime0
	case o.Runtime == "docker":
		l := ownLabels()
		l[workload.LabelRun] = p.run
		d, err := docker.New(p.ctx, docker.Options{Labels: l})
		if err != nil {
			return nil, err
		}
		p.dock, p.rtm = d, d
	case o.Runtime == "process":
		l := ownLabels()
		l[workload.LabelRun] = p.run
		pr, err := process.New(process.Options{StateDir: filepath.Join(o.StateDir, "process"), Labels: l})
		if err != nil {
			return nil, err
		}
		p.rtm = pr
	default:
		return nil, fmt.Errorf("runtime %q: use docker or process", o.Runtime)
	}
	// the journal first: whatever this instance creates from now on is recorded before
	jroot := ""
	if p.rdt != nil {
		jroot = p.rdt.Root()
	}
	jr, err := journal.Open(o.StateDir, jroot, journal.Record{Instance: p.run, Kind: "colo run", Prefix: p.prefix, Run: p.run})
	if err != nil {
		p.rtm.Close()
		return nil, err
	}
	p.jr = jr
	if err := p.reconcile(); err != nil {
		p.rtm.Close()
		return nil, fmt.Errorf("cleaning up after an earlier colo run: %w", err)
	}
	if p.dock != nil {
		p.network = "colo-" + p.run
		if err := p.jr.SetRun(p.run, p.network); err != nil {
			p.rtm.Close()
			return nil, err
		}
		if err := p.dock.UseNetwork(p.ctx, p.network); err != nil {
			p.rtm.Close()
			return nil, err
		}
	}
	// machine
	rroot := ""
	if p.rdt != nil {
		rroot = p.rdt.Root()
	}
	m, err := o.Machine, error(nil)
	if m == nil {
		m, err = machine.Detect("/sys", rroot)
	}
	if err != nil {
		p.teardown()
		return nil, fmt.Errorf("detect this machine: %w", err)
	}
	if percentMBA(m) {
		p.notef("resctrl at %s describes Intel MBA (percent, min %d step %d) on this %s CPU (an emulator mount): MBA is in percent", rroot, m.MBA.Min, m.MBA.Gran, m.Vendor)
	}
	p.m = m
	if p.rdt != nil {
		p.al = alloc.New(alloc.Options{Machine: m, Mount: p.rdt, Prefix: p.prefix, Journal: p.jr})
	}
	if bm != nil {
		bm.Machine = m
	}
	if p.noIPCE, p.noL2 = p.probeCounters(); p.noIPCE != "" {
		p.notef("IPCE unavailable: %s; IPC/IPCE are reported as unavailable and the dynamic scheduler does not probe allocations", p.noIPCE)
	}
	if p.noL2 != "" {
		p.notef("L2 misses unavailable: %s; they stay 0 and VP's memory factor uses LLC references instead", p.noL2)
	}
	p.start = time.Now()
	ok = true
	if o.Opened != nil {
		o.Opened(p)
	}
	return p, nil
}

var (
	stampMu   sync.Mutex
	lastStamp int64
)

// runStamp is the time part of a run's name: Unix milliseconds, distinct for every
// platform of this process (two platforms in one millisecond get two stamps).
func runStamp() int64 {
	stampMu.Lock()
	defer stampMu.Unlock()
	lastStamp = max(time.Now().UnixMilli(), lastStamp+1)
	return lastStamp
}

// percentMBA corrects a machine detected on an AMD CPU whose resctrl mount describes
// Intel's MBA: machine.Detect takes the MBA unit from the CPU vendor (AMD: 1/8 GB/s, 2048
// unlimited), but the kernel's AMD info/MB has a granularity of 1, while Intel's (and the
// emulator's intel profile, which a VM on an AMD host mounts) is a percentage step of
// 10 (anchors.md §4). It reports whether it changed m.
func percentMBA(m *machine.Profile) bool {
	if m.MBA == nil || m.MBA.Unit != machine.MBAEighthGBps || m.MBA.Gran <= 1 {
		return false
	}
	m.MBA.Unit, m.MBA.Max = machine.MBAPercent, 100
	return true
}

// reconcile removes what a previous colo left: containers and networks labelled by a
// colo process of this PID namespace that no longer exists, owned resctrl groups, and
// system/default masks it had changed (restored).
func (p *Platform) reconcile() error {
	var errs []error
	// runs whose journal says their process lives (this process's other platforms too)
	live := map[string]bool{}
	rs, err := journal.ListAll(p.o.StateDir)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Alive() && r.Run != "" {
			live[r.Run], live[r.Network] = true, true
		}
	}
	mine := map[string]string{labelPlatform: "linux", labelPIDNS: pidNamespace()}
	ws, err := p.rtm.List(p.ctx, mine)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if live[w.Labels[workload.LabelRun]] || alive(w.Labels[labelPID]) {
			continue // a live run's (this process's, another colo process's)
		}
		if err := p.rtm.Remove(p.ctx, w.ID); err != nil && !errors.Is(err, workload.ErrNotFound) && !strings.Contains(err.Error(), "already in progress") {
			errs = append(errs, err)
			continue
		}
		p.notef("removed %s left by an earlier colo run (%s, run %s)", w.Name, w.State, w.Labels[workload.LabelRun])
	}
	if p.dock != nil {
		nets, err := p.dock.ListNetworks(p.ctx, mine)
		if err != nil {
			errs = append(errs, err)
		}
		for _, n := range nets {
			if live[n] || alive(networkPID(n)) {
				continue
			}
			if err := p.dock.RemoveNetwork(p.ctx, n); err != nil {
				// another cleaner (colo cleanup, another colo run) is removing the same dead
				// run right now: its container is still detaching, or the network is gone
				if m := err.Error(); strings.Contains(m, "active endpoints") || strings.Contains(m, "not found") {
					p.notef("network %s of an earlier colo run is being removed by another cleaner (%v)", n, err)
					continue
				}
				errs = append(errs, err)
				continue
			}
			p.notef("removed network %s left by an earlier colo run", n)
		}
	}
	// resctrl: only what the journals of dead instances on this mount recorded (and
	// their records; a live instance's groups, another agent's or a user's are kept)
	var fsys resctrl.FS
	root := ""
	if p.rdt != nil {
		fsys, root = p.rdt.Client().FS(), p.rdt.Root()
	}
	if len(errs) == 0 {
		done, err := journal.Reconcile(fsys, p.o.StateDir, root, func(journal.Record) bool { return true })
		if err != nil {
			errs = append(errs, err)
		}
		for _, u := range done {
			if u.Did() {
				p.notef("undid what an earlier colo run left: %s", u)
			}
		}
	}
	return errors.Join(errs...)
}

// Now implements platform.Platform: wall-clock time since the platform started.
func (p *Platform) Now() time.Duration { return time.Since(p.start) }

// Advance implements platform.Platform: it waits for the wall clock.
func (p *Platform) Advance(t time.Duration) error {
	d := t - p.Now()
	if d <= 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-p.ctx.Done():
		return errors.New("platform closed")
	}
}

// Close implements platform.Platform: every job's container and resctrl groups go, the
// default schemata is restored, the network removed, the lock released.
func (p *Platform) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	js := make([]*job, 0, len(p.jobs))
	for _, j := range p.jobs {
		js = append(js, j)
	}
	p.jobs = map[int]*job{}
	p.mu.Unlock()
	var errs []error
	for _, j := range js {
		if err := p.stopJob(j); err != nil {
			errs = append(errs, err)
		}
	}
	if err := p.teardown(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (p *Platform) teardown() error {
	var errs []error
	p.cancel()
	p.wg.Wait()
	if p.rdt != nil {
		removed, err := p.rdt.RemoveGroups(p.own)
		if err != nil {
			errs = append(errs, err)
		}
		for _, g := range removed {
			if err := p.jr.DropGroup(g); err != nil {
				errs = append(errs, err)
			}
		}
		// the last instance out writes the administrator's default back
		if _, err := p.jr.ReleaseDefault(p.rdt.RestoreDefault); err != nil {
			errs = append(errs, fmt.Errorf("restore system/default: %w", err))
		}
	}
	if p.dock != nil && p.network != "" {
		if err := p.dock.RemoveNetwork(context.Background(), p.network); err != nil {
			errs = append(errs, err)
		}
	}
	if p.rtm != nil {
		p.rtm.Close()
	}
	if len(errs) == 0 && p.jr != nil {
		if err := p.jr.Close(); err != nil { // everything undone: the record goes
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
