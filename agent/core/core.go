package core

import (
	"fmt"
	"sort"
	"time"

	"colo/machine"
	"colo/sched"
)

// Container is a workload the runtime reports (Docker container, NRI container).
type Container struct {
	ID     string            `json:"id"`
	Name   string            `json:"name"`
	Image  string            `json:"image"`
	Labels map[string]string `json:"labels,omitempty"`
	// PID is the root process in the host PID namespace (0: unknown).
	PID int `json:"pid"`
	// Cgroup is the cgroup path relative to the hierarchy root (cAdvisor's id label), e.g.
	// /system.slice/docker-<id>.scope.
	Cgroup string `json:"cgroup"`
	// CgroupDirs maps a v1 controller ("" for the unified hierarchy) to its directory:
	// where the shell reads the container's threads and CPU time.
	CgroupDirs map[string]string `json:"-"`
	CgroupV    int               `json:"-"`
	// Digest is the image's content digest (Docker's image ID), Command its entrypoint
	// and arguments, CPUs its CPU limit (0 none): what keys its online profile
	// (tenantprofile.Key).
	Digest  string   `json:"digest,omitempty"`
	Command []string `json:"command,omitempty"`
	CPUs    float64  `json:"cpus,omitempty"`
}

// Member states.
const (
	StateQueued   = "queued"   // waiting for the policy to admit it
	StateRunning  = "running"  // admitted
	StateRejected = "rejected" // the policy will never admit it: monitored, unallocated
	// StateStatic (static.go): allocated by its colo.io/llc-ways / colo.io/mba labels
)

// Member is a container the core manages.
type Member struct {
	Container
	Req    Request       `json:"request"`
	Job    int           `json:"job"`
	State  string        `json:"state"`
	Reason string        `json:"reason,omitempty"`
	Socket int           `json:"socket"`
	Mask   uint64        `json:"mask"` // 0: system/default
	MBA    int           `json:"mba"`  // 0: system/default's
	Since  time.Duration `json:"-"`
	Last   *sched.Sample `json:"-"`
}

// Target is where the core wants a container: its socket and allocation (Mask 0:
// system/default).
type Target struct {
	Socket int
	Mask   uint64
	MBA    int
}

// Plan is the state the core wants after a tick.
type Plan struct {
	Targets map[string]Target // by container ID
	// Default is system/default's L3 mask per socket.
	Default map[int]uint64
	// Log explains the decisions of this tick.
	Log []string
}

// Stats counts what the policy decided since the start.
type Stats struct {
	Decisions map[string]int `json:"decisions"` // place, reject, allocate, migrate, repin, quota, probe
	Probes    map[string]int `json:"probes"`    // requested, refused
	// Ignored counts decisions the agent cannot carry out (it does not move or throttle
	// containers it did not start): repin, quota.
	Ignored map[string]int `json:"ignored"`
}

// Core is the agent's pure decision core: it turns container arrivals, departures and
// samples into a sched.Observation for the configured scheduler (the same registry and
// code `colo run` uses) and the scheduler's Decisions into a Plan. It never does I/O and
// reads no clock: the shell passes the time.
type Core struct {
	m        *machine.Profile
	sch      sched.Scheduler
	cpus     [][]int
	next     int
	byID     map[string]*Member
	byJob    map[int]*Member
	members  []*Member // byID by job number; nil: to be rebuilt
	finished []int
	results  []sched.ProbeResult
	explicit map[int]uint64
	def      map[int]uint64
	dirty    bool
	stats    Stats
	said     map[string]bool
	// static holds the static requests' allocations (static.go); foreign the ways other
	// agents claim per socket (SetForeign)
	static  *sched.Accountant
	reserve uint64
	admin   uint64 // the administrator's system/default mask (0: the whole cache); SetHost
	foreign []uint64
}

// New builds the core around a scheduler on machine m. Containers share cores (the
// agent does not place them), so every socket's cores are reported free and each
// container is a one-core job.
func New(m *machine.Profile, s sched.Scheduler) *Core {
	c := &Core{m: m, sch: s, byID: map[string]*Member{}, byJob: map[int]*Member{}, def: map[int]uint64{},
		explicit: map[int]uint64{}, said: map[string]bool{},
		stats: Stats{Decisions: map[string]int{}, Probes: map[string]int{}, Ignored: map[string]int{}}}
	c.cpus = make([][]int, m.Sockets)
	for cpu := 0; cpu < m.Cores(); cpu++ {
		s := m.SocketOfCore(cpu)
		c.cpus[s] = append(c.cpus[s], cpu)
	}
	for s := 0; s < m.Sockets; s++ {
		c.def[s] = m.FullMask()
	}
	// static.go: ways counted from the top; system/default's reserve (the top ways) is
	// passed as claimed
	c.static, _ = sched.NewAccountant(m.Sockets, m.LLC.Ways, 0, sched.DefaultReserveMBA)
	c.reserve = m.FullMask() &^ (m.FullMask() >> sched.DefaultReserveWays)
	return c
}

// Scheduler is the policy's name.
func (c *Core) Scheduler() string { return c.sch.Name() }

// Add starts managing a container (queued for the policy's admission) and returns its
// request and the labels that were ignored. Adding a known container updates its
// container fields and request (a Docker update event).
func (c *Core) Add(ct Container, now time.Duration) (*Member, []LabelError) {
	req, errs := ParseRequest(ct.Labels, c.m)
	if mb := c.byID[ct.ID]; mb != nil {
		if mb.State == StateStatic && req != mb.Req { // a changed static request: allocated anew
			c.static.Release(mb.ID)
			mb.Mask, mb.MBA = 0, 0
			c.dirty = true
		}
		mb.Container, mb.Req = ct, req
		return mb, errs
	}
	c.next++
	mb := &Member{Container: ct, Req: req, Job: c.next, State: StateQueued, Since: now}
	if isStatic(req) {
		mb.State = StateStatic
	}
	c.byID[ct.ID] = mb
	c.byJob[mb.Job] = mb
	c.members = nil
	return mb, errs
}

// Remove stops managing a container (it exited or was removed); its allocation goes back.
func (c *Core) Remove(id string) bool {
	mb := c.byID[id]
	if mb == nil {
		return false
	}
	delete(c.byID, id)
	delete(c.byJob, mb.Job)
	c.members = nil
	if mb.State == StateStatic {
		c.static.Release(id)
		c.dirty = true
	}
	if mb.State == StateRunning {
		c.finished = append(c.finished, mb.Job)
		c.dirty = true
	}
	return true
}

// Observe records a container's latest sample.
func (c *Core) Observe(id string, s sched.Sample) {
	if mb := c.byID[id]; mb != nil {
		cp := s
		mb.Last = &cp
	}
}

// Members lists the managed containers by job number (the caller must not change the
// slice).
func (c *Core) Members() []*Member {
	if c.members == nil {
		c.members = make([]*Member, 0, len(c.byID))
		for _, m := range c.byID {
			c.members = append(c.members, m)
		}
		sort.Slice(c.members, func(i, j int) bool { return c.members[i].Job < c.members[j].Job })
	}
	return c.members
}

// Member returns a managed container.
func (c *Core) Member(id string) *Member { return c.byID[id] }

// Stats returns the decision counts (a copy).
func (c *Core) Stats() Stats {
	cp := Stats{Decisions: map[string]int{}, Probes: map[string]int{}, Ignored: map[string]int{}}
	for k, v := range c.stats.Decisions {
		cp.Decisions[k] = v
	}
	for k, v := range c.stats.Probes {
		cp.Probes[k] = v
	}
	for k, v := range c.stats.Ignored {
		cp.Ignored[k] = v
	}
	return cp
}

func (c *Core) job(mb *Member) sched.Job {
	return sched.Job{ID: mb.Job, Name: mb.Name, Cores: 1, Priority: mb.Req.Class == Priority,
		IPCETarget: mb.Req.TargetIPCE, Arrival: mb.Since}
}

func (c *Core) observation(now time.Duration) *sched.Observation {
	obs := &sched.Observation{Now: now, Finished: c.finished, ProbeResults: c.results, CLOS: c.policyBudget()}
	for _, mb := range c.Members() {
		switch mb.State {
		case StateQueued:
			obs.Queue = append(obs.Queue, c.job(mb))
		case StateRunning:
			obs.Running = append(obs.Running, sched.Running{Job: c.job(mb), Socket: mb.Socket,
				Placed: append([]int(nil), c.cpus[mb.Socket]...), Started: mb.Since, Mask: mb.Mask, MBA: mb.MBA, Last: mb.Last})
		}
	}
	obs.FreeCPUs = make([][]int, len(c.cpus))
	for s, cs := range c.cpus {
		obs.FreeCPUs[s] = append([]int(nil), cs...)
	}
	c.finished, c.results = nil, nil
	return obs
}

// Tick runs the policy once at time now and returns the wanted state.
func (c *Core) Tick(now time.Duration) Plan {
	var static []string
	c.allocateStatic(func(f string, a ...any) { static = append(static, fmt.Sprintf(f, a...)) })
	d := c.sch.Tick(c.observation(now))
	p := Plan{Targets: map[string]Target{}, Log: append(static, d.Log...)}
	logf := func(f string, a ...any) { p.Log = append(p.Log, fmt.Sprintf(f, a...)) }
	for _, r := range d.Reject {
		if mb := c.byJob[r.Job]; mb != nil {
			mb.State, mb.Reason = StateRejected, r.Reason
			c.stats.Decisions["reject"]++
			logf("%s: not admitted by %s (%s); monitored in system/default", mb.Name, c.sch.Name(), r.Reason)
		}
	}
	for _, pl := range d.Place {
		if mb := c.byJob[pl.Job]; mb != nil && mb.State == StateQueued {
			mb.State, mb.Socket, mb.Since = StateRunning, pl.Socket, now
			c.stats.Decisions["place"]++
			c.dirty = true
		}
	}
	for _, mv := range d.Migrate {
		if mb := c.byJob[mv.Job]; mb != nil {
			// the container is not pinned by the agent: only the socket whose
			// allocation it follows changes
			mb.Socket = mv.Socket
			c.stats.Decisions["migrate"]++
		}
	}
	c.ignore("repin", len(d.Repin), &p)
	c.ignore("quota", len(d.Quota), &p)
	if len(d.Allocate) > 0 || len(d.DefaultMask) > 0 {
		// as colo run's run loop: a tick that allocates (or sets the default) replaces
		// the scheduler's explicit system/default masks
		c.dirty = true
		c.explicit = map[int]uint64{}
		for s, m := range d.DefaultMask {
			c.explicit[s] = m
		}
	}
	for _, a := range d.Allocate {
		mb := c.byJob[a.Job]
		if mb == nil || mb.State != StateRunning {
			continue
		}
		mb.Socket, mb.Mask, mb.MBA = a.Socket, a.Mask, a.MBA
		if a.Mask == 0 {
			mb.MBA = 0
		}
		c.stats.Decisions["allocate"]++
	}
	for _, pr := range d.Probe {
		c.stats.Decisions["probe"]++
		c.stats.Probes["requested"]++
		c.stats.Probes["refused"]++
		c.results = append(c.results, sched.ProbeResult{Job: pr.Job})
		c.results[len(c.results)-1].Err = "colo agent does not run allocation probes"
	}
	if c.dirty {
		c.def = c.defaults()
		c.dirty = false
	}
	for id, mb := range c.byID {
		t := Target{Socket: mb.Socket}
		switch mb.State {
		case StateRunning:
			t.Mask, t.MBA = mb.Mask, mb.MBA
		case StateStatic:
			t = c.staticTarget(mb)
		}
		p.Targets[id] = t
	}
	p.Default = map[int]uint64{}
	for s, m := range c.def {
		p.Default[s] = m
	}
	return p
}

func (c *Core) ignore(kind string, n int, p *Plan) {
	if n == 0 {
		return
	}
	c.stats.Ignored[kind] += n
	if !c.said[kind] {
		c.said[kind] = true
		p.Log = append(p.Log, fmt.Sprintf("%s decisions of %s are not carried out: the agent does not move or throttle containers it did not start", kind, c.sch.Name()))
	}
}

// defaults is system/default's mask per socket: the scheduler's explicit mask while it
// has containers there, else sched.DefaultMask of the ways the running containers hold,
// as colo run's run loop gives it.
func (c *Core) defaults() map[int]uint64 {
	out := map[int]uint64{}
	for s := 0; s < c.m.Sockets; s++ {
		held, running := uint64(0), 0
		for _, mb := range c.byID {
			if (mb.State == StateRunning || (mb.State == StateStatic && mb.Req.Ways > 0)) && mb.Socket == s {
				held |= mb.Mask
				running++
			}
		}
		// never a way the administrator's default excluded (SetHost)
		if free := c.m.FullMask() &^ held; c.admin != 0 && free&c.admin != 0 {
			held = c.m.FullMask() &^ (free & c.admin)
		}
		out[s] = sched.DefaultMask(c.m, held)
		if out[s] == 0 {
			out[s] = c.m.FullMask() // never leave system/default without ways
		}
		// the policy's explicit mask (dCat's host ways) applies while it has tenants on
		// the socket; a socket without managed containers leaves the host every way
		if e, ok := c.explicit[s]; ok && e != 0 && running > 0 {
			out[s] = e
			if c.admin != 0 && e&c.admin != 0 {
				out[s] = e & c.admin
			}
		}
		if running == 0 && c.admin != 0 {
			out[s] = c.admin // nothing managed here: the administrator's default as it was
		}
	}
	return out
}
