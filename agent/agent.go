package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"colo/agent/api"
	"colo/agent/core"
	"colo/agent/discovery"
	"colo/agent/host"
	"colo/counter"
	"colo/machine"
	"colo/resctrl/alloc"
	"colo/resctrl/plan"
	"colo/sched"
)

// Profiler is the online-profiling hook: after each tick it gets the status (every
// managed container, cons[i] the container behind st.Containers[i]) and fills the profile
// fields, predictions and ProfileRuns. It must not block: measurements run elsewhere.
type Profiler interface {
	Annotate(st *api.Status, cons []core.Container)
}

// Options configure an Agent.
type Options struct {
	Machine   *machine.Profile
	Scheduler sched.Scheduler
	Groups    Groups
	Journal   Journal
	Discovery discovery.Source
	Host      host.Host
	Interval  time.Duration
	// MonInterval is how often a container's resctrl monitoring counters are read
	// (rounded to whole intervals, each container on its own phase so the reads spread
	// over the intervals); 0 or less than Interval: every interval. Each read is a
	// syscall per counter file and L3 domain, the agent's main cost at short intervals.
	MonInterval time.Duration
	// MBMPeriod is how long a tenant holds an assignable MBM counter before the rotation
	// moves it on (mounts in the kernel's mbm_event mode; policy/mbmassign); 0: 5 s.
	MBMPeriod time.Duration
	// Select limits the agent to containers with these labels (empty: every container).
	Select core.Selector
	// Predictor, when set, predicts each container's slowdown from Bubble-Up profiles
	// (colo agent --profiles).
	Predictor *Predictor
	// Profiler, when set, profiles containers online and fills their profile fields
	// (colo agent --profile; agent/profiler.Manager).
	Profiler Profiler
	// HostAdmin is the administrator's system/default L3 mask (0: the whole cache) and
	// HostReserveWays the top ways the policy keeps for system/default (the floor,
	// HostReserve); 0: the policy's own reserve.
	HostAdmin       uint64
	HostReserveWays int
	// StateDir holds the mount's journal (dead instances are undone at start).
	StateDir string
	Log      *slog.Logger
	// Ticked, when set, is called after every tick (tests wait on it).
	Ticked func(api.Status)
}

// Agent is the shell around Core: it runs discovery, PID sync, counters and resctrl.
type Agent struct {
	o     Options
	core  *core.Core
	start time.Time

	mu      sync.Mutex
	live    map[string]*live
	status  api.Status
	runtime struct {
		up  bool
		err string
	}
	labelErr map[string]int
	counts   map[string]int // closid-exhausted, rmid-exhausted, apply-errors…
	def      map[int]uint64 // system/default as applied
	rdtErr   error
	notes    []string
	al       *alloc.Allocator // per tenant (container), the allocation wanted and where it is
	saidPlan map[string]bool
	ticks    uint64 // intervals done
	monEvery uint64 // intervals between two monitoring reads of a container
	mbm      mbmState
	// saidRefused is the refusal last logged per tenant, refusedWhy the latest refusal of
	// this replan (apply.go)
	saidRefused, refusedWhy map[string]string
	// killed ends Run at once without undoing anything (tests: kill -9 in process)
	killed chan struct{}
}

// New builds an agent. Call Run.
func New(o Options) (*Agent, error) {
	if o.Machine == nil || o.Scheduler == nil || o.Groups == nil || o.Journal == nil || o.Discovery == nil || o.Host == nil {
		return nil, errors.New("agent: incomplete options")
	}
	if o.Interval < 20*time.Millisecond {
		return nil, fmt.Errorf("agent: interval %v is below 20ms", o.Interval)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.MBMPeriod <= 0 {
		o.MBMPeriod = 5 * time.Second
	}
	a := &Agent{o: o, core: core.New(o.Machine, o.Scheduler), live: map[string]*live{},
		labelErr: map[string]int{}, counts: map[string]int{}, def: map[int]uint64{}, killed: make(chan struct{}),
		saidPlan: map[string]bool{}, monEvery: 1,
		saidRefused: map[string]string{}, refusedWhy: map[string]string{}}
	a.al = alloc.New(alloc.Options{Machine: o.Machine, Mount: o.Groups, Prefix: o.Groups.Prefix(), Journal: o.Journal})
	if o.HostReserveWays > 0 {
		a.core.SetHost(o.HostAdmin, o.HostReserveWays)
	}
	if o.MonInterval > o.Interval {
		a.monEvery = uint64((o.MonInterval + o.Interval/2) / o.Interval)
	}
	return a, nil
}

func (a *Agent) now() time.Duration { return time.Since(a.start) }

func (a *Agent) note(level slog.Level, msg string, args ...any) {
	a.o.Log.Log(context.Background(), level, msg, args...)
	a.mu.Lock()
	line := time.Now().UTC().Format(time.RFC3339) + " " + msg
	for i := 0; i+1 < len(args); i += 2 {
		line += fmt.Sprintf(" %v=%q", args[i], fmt.Sprint(args[i+1]))
	}
	a.notes = append(a.notes, line)
	if len(a.notes) > 50 {
		a.notes = a.notes[len(a.notes)-50:]
	}
	a.mu.Unlock()
}

// Run reconciles what an earlier instance left, then manages containers until ctx ends;
// then every managed container returns to system/default, the agent's groups are removed
// and system/default's schemata restored exactly. It returns nil after a clean shutdown.
func (a *Agent) Run(ctx context.Context) error {
	a.start = time.Now()
	if err := a.reconcile(); err != nil {
		return err
	}
	if err := a.saveDefault(); err != nil {
		return err
	}
	evs := make(chan discovery.Event, 64)
	dctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); a.o.Discovery.Run(dctx, evs) }()
	defer func() { stop(); wg.Wait() }()
	t := time.NewTicker(a.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			a.note(slog.LevelInfo, "shutting down: returning containers to system/default")
			return a.shutdown()
		case <-a.killed:
			return errors.New("killed")
		case ev := <-evs:
			a.handle(ev)
		case <-t.C:
			a.tick()
		}
	}
}

func (a *Agent) handle(ev discovery.Event) {
	switch ev.Kind {
	case discovery.Down:
		a.mu.Lock()
		was := a.runtime.up
		a.runtime.up, a.runtime.err = false, ev.Err.Error()
		a.mu.Unlock()
		if was {
			a.note(slog.LevelWarn, "runtime unreachable; keeping current allocations and reconnecting", "runtime", a.o.Discovery.Name(), "err", ev.Err)
		}
	case discovery.Sync:
		a.mu.Lock()
		a.runtime.up, a.runtime.err = true, ""
		a.mu.Unlock()
		seen := map[string]bool{}
		for _, c := range a.o.Select.Filter(ev.Containers) {
			seen[c.ID] = true
			a.add(c)
		}
		for id := range a.live {
			if !seen[id] {
				a.remove(id, "not running at resync")
			}
		}
		a.o.Log.Info("runtime synced", "runtime", a.o.Discovery.Name(), "containers", len(ev.Containers))
	case discovery.Upsert:
		for _, c := range a.o.Select.Filter(ev.Containers) {
			a.add(c)
		}
	case discovery.Gone:
		a.remove(ev.ID, "exited")
	}
}

// add starts managing a container: its monitoring group exists and its threads are in it
// before add returns (the policy's allocation follows at the next tick).
func (a *Agent) add(c core.Container) {
	_, known := a.live[c.ID]
	mb, errs := a.core.Add(c, a.now())
	for _, e := range errs {
		a.mu.Lock()
		a.labelErr[e.Label]++
		a.mu.Unlock()
		if !known {
			a.note(slog.LevelWarn, "invalid label ignored", "container", c.Name, "label", e.Label, "value", e.Value, "why", e.Msg)
		}
	}
	if known {
		return
	}
	l := &live{tenant: tenantOf(c.ID)}
	a.mu.Lock()
	a.live[c.ID] = l
	a.mu.Unlock()
	if cs, err := a.o.Host.OpenCounters(c); err == nil {
		l.counters = cs
	} else {
		a.o.Log.Debug("no counters", "container", c.Name, "err", err)
	}
	tids, _ := a.o.Host.Threads(c)
	a.al.Set(plan.Want{Tenant: l.tenant, Socket: mb.Socket, Monitor: true, Tasks: tids})
	if a.rdtErr == nil {
		if err := a.replan(); err != nil {
			a.note(slog.LevelWarn, "no monitoring group", "container", c.Name, "err", err)
		}
		a.syncTasks(mb, l)
	}
	a.o.Log.Info("container managed", "container", c.Name, "id", short(c.ID), "class", mb.Req.Class, "mon", a.al.Placement(l.tenant).Mon)
}

func (a *Agent) remove(id, why string) {
	l := a.live[id]
	mb := a.core.Member(id)
	if l == nil || mb == nil {
		return
	}
	a.core.Remove(id)
	if l.counters != nil {
		l.counters.Close()
	}
	if a.rdtErr == nil {
		// its threads (if any are left) go back to system/default, then its groups go
		if w, ok := a.al.Want(l.tenant); ok && a.al.Placement(l.tenant).Group != "" {
			w.Mask, w.MBA, w.Monitor, w.Tasks = 0, 0, false, nil
			if tids, err := a.o.Host.Threads(mb.Container); err == nil {
				w.Tasks = tids
			}
			a.al.Set(w)
			a.replan()
		}
	}
	a.al.Forget(l.tenant)
	if a.rdtErr == nil {
		if err := a.replan(); err != nil {
			a.note(slog.LevelWarn, "removing groups", "container", mb.Name, "err", err)
		}
		a.al.Unplace(l.tenant)
	}
	a.o.Host.Forget(mb.Container)
	a.mu.Lock()
	delete(a.live, id)
	a.mu.Unlock()
	a.o.Log.Info("container released", "container", mb.Name, "id", short(id), "why", why)
}

// tick syncs threads, reads counters, runs the policy and applies its plan.
func (a *Agent) tick() {
	t0 := time.Now()
	now := a.now()
	a.ticks++
	if a.ticks%a.monEvery == 0 || a.rdtErr != nil {
		a.checkResctrl()
	}
	if a.rdtErr == nil {
		a.rotateCounters(now)
	}
	for _, mb := range a.core.Members() {
		l := a.live[mb.ID]
		if a.rdtErr == nil {
			a.syncTasks(mb, l)
		}
		r := a.read(mb, l, (a.ticks+uint64(mb.Job))%a.monEvery == 0, now)
		if l.haveReading {
			if s, ok := counter.Between(l.reading, r); ok {
				if r.MonAt == l.reading.MonAt { // no monitoring read this interval
					s.MemBandwidthMBps = l.sample.MemBandwidthMBps
				}
				a.core.Observe(mb.ID, s)
				l.sample = s
			}
			if dt := r.CPUAt - l.reading.CPUAt; dt > 0 {
				l.cpuCores = (r.CPUTime - l.reading.CPUTime).Seconds() / dt.Seconds()
			}
		}
		l.reading, l.haveReading = r, true
	}
	p := a.core.Tick(now)
	for _, line := range p.Log {
		a.note(slog.LevelInfo, "policy: "+line)
	}
	if a.rdtErr == nil {
		a.apply(p)
	}
	st := a.snapshot(time.Since(t0))
	if a.o.Ticked != nil {
		a.o.Ticked(st)
	}
}

// read reads a container's counters at now. Hardware (or software) perf events feed the
// policy every interval; the cgroup's CPU time (status and metrics only) and the
// monitoring group's counters are read only when due (or when its group changed), else
// the last values are carried.
func (a *Agent) read(mb *core.Member, l *live, due bool, now time.Duration) counter.Reading {
	r := l.reading
	r.At = now
	if l.counters != nil && (due || !l.haveReading || l.counters.Mode() != "cputime") {
		if v, err := l.counters.Read(); err == nil {
			r = v
			r.At, r.CPUAt = now, now
		}
	}
	r.LLCOccupancy, r.MBMTotalBytes, r.MBMLocalBytes, r.MonAt = l.reading.LLCOccupancy, l.reading.MBMTotalBytes, l.reading.MBMLocalBytes, l.reading.MonAt
	mon := a.al.Placement(l.tenant).Mon
	if mon == "" { // no group of its own: nothing measured
		r.LLCOccupancy, r.MBMTotalBytes, r.MBMLocalBytes, r.MonAt = 0, 0, 0, now
		l.monOK, l.monGroup = false, ""
		return r
	}
	if a.rdtErr != nil || (!due && mon == l.monGroup && l.monOK) {
		return r
	}
	if occ, tot, loc, err := a.o.Groups.MonData(mon); err == nil {
		r.LLCOccupancy, r.MBMTotalBytes, r.MBMLocalBytes, r.MonAt = float64(occ), float64(tot), float64(loc), now
		l.monOK, l.monGroup = true, mon
	}
	return r
}

// checkResctrl notices the mount disappearing and coming back (a new mount holds none of
// the agent's groups: they are made again).
func (a *Agent) checkResctrl() {
	err := a.o.Groups.Available()
	switch {
	case err != nil && a.rdtErr == nil:
		a.rdtErr = err
		a.note(slog.LevelError, "resctrl unavailable; monitoring and allocation paused until it is mounted again", "err", err)
	case err == nil && a.rdtErr != nil:
		a.rdtErr = nil
		a.note(slog.LevelWarn, "resctrl is back; recreating the agent's groups", "root", a.o.Groups.Root())
		// a new mount holds none of the agent's groups: start from system/default
		a.al.Remount()
		for _, l := range a.live {
			l.classMon, l.refused, l.synced, l.syncedInto = "", nil, nil, ""
		}
		for _, g := range a.o.Journal.Record().Groups {
			a.o.Journal.DropGroup(g)
		}
		a.o.Journal.ClearDefault()
		a.def = map[int]uint64{}
		if err := a.saveDefault(); err != nil {
			a.note(slog.LevelError, "reading system/default", "err", err)
		}
		if err := a.replan(); err != nil {
			a.note(slog.LevelWarn, "recreating monitoring groups", "err", err)
		}
	}
}

func (a *Agent) count(k string) {
	a.mu.Lock()
	a.counts[k]++
	a.mu.Unlock()
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func sortedSockets(m map[int]uint64) []int {
	var out []int
	for s := range m {
		out = append(out, s)
	}
	sort.Ints(out)
	return out
}
