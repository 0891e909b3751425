package guard

import (
	"fmt"
	"strconv"

	"colo/machine"
	"colo/policy/ctlsched"
	"colo/sched"
)

func init() {
	sched.Register("guard", NewScheduler)
	sched.Register("static-cat-mba", NewStaticScheduler)
}

// Scheduler runs the guard behind sched.Scheduler: FIFO placement on the socket with the
// most free cores (ctlsched.Place); every job starts in system/default with the whole cache
// (the guard does not partition until it must); a throttled job gets a group with the low
// Ways ways of the cache and its MBA value, and its CPU quota. Every action is a
// sched.Event ("guard-throttle", "guard-undo", "guard-keep", "guard-grow") with its
// evidence, and a decision-log line.
//
// scheduler.options (prefix "guard." allowed): window (periods, 10), repercussion
// (periods, 3), slack (0.1), grow_slack (0.3), grow_every (periods, 3), min_gain (0.05),
// mba_step (two grid steps), mba_floor (machine minimum), ways_floor (2), quota_step
// (0.2), quota_floor (0.2), min_score (0.2), cache (a cache policy to compose with: dcat,
// static-cat, lfoc+; it places the jobs and owns their masks, the guard adds MBA and CPU
// quota; write the guard's keys with the "guard." prefix then, so that the cache policy
// does not see them). DefaultOptions gives each default's reason.
type Scheduler struct {
	m    *machine.Profile
	c    *Controller
	jobs *ctlsched.Jobs
	obs  []Obs
	// cache is the cache policy the guard is composed with (option cache): it places the
	// jobs and owns their masks; the guard adds MBA and CPU quota (the ways rung is
	// skipped). nil: the guard alone.
	cache sched.Scheduler
	mba   map[int]int // the guard's MBA value of each job it throttles (composed)
	// Actions counts the guard's throttles, undos and growth steps over the run.
	Actions int
	note    string
}

type schedOptions struct {
	Window       *int     `yaml:"window"`
	Repercussion *int     `yaml:"repercussion"`
	Slack        *float64 `yaml:"slack"`
	GrowSlack    *float64 `yaml:"grow_slack"`
	GrowEvery    *int     `yaml:"grow_every"`
	MinGain      *float64 `yaml:"min_gain"`
	MinScore     *float64 `yaml:"min_score"`
	MBAStep      *int     `yaml:"mba_step"`
	MBAFloor     *int     `yaml:"mba_floor"`
	WaysFloor    *int     `yaml:"ways_floor"`
	QuotaStep    *float64 `yaml:"quota_step"`
	QuotaFloor   *float64 `yaml:"quota_floor"`
	Cache        *string  `yaml:"cache"`
}

// OptionsFor are the guard's defaults on machine m.
func OptionsFor(m *machine.Profile) Options {
	if m.MBA == nil {
		return DefaultOptions(m.LLC.Ways, 0, 0, 0)
	}
	return DefaultOptions(m.LLC.Ways, m.MBA.Min, m.MBA.Max, m.MBA.Gran)
}

// NewScheduler is the sched.Factory of "guard".
func NewScheduler(env sched.Env) (sched.Scheduler, error) {
	m := env.Machine
	o := OptionsFor(m)
	var so schedOptions
	if err := ctlsched.Decode("guard", env.Config, &so, "guard."); err != nil {
		return nil, err
	}
	ctlsched.Set(&o.Window, so.Window)
	ctlsched.Set(&o.Repercussion, so.Repercussion)
	ctlsched.Set(&o.Slack, so.Slack)
	ctlsched.Set(&o.GrowSlack, so.GrowSlack)
	ctlsched.Set(&o.GrowEvery, so.GrowEvery)
	ctlsched.Set(&o.MinGain, so.MinGain)
	ctlsched.Set(&o.MinScore, so.MinScore)
	ctlsched.Set(&o.MBAStep, so.MBAStep)
	ctlsched.Set(&o.MBAFloor, so.MBAFloor)
	ctlsched.Set(&o.WaysFloor, so.WaysFloor)
	ctlsched.Set(&o.QuotaStep, so.QuotaStep)
	ctlsched.Set(&o.QuotaFloor, so.QuotaFloor)
	s := &Scheduler{m: m, jobs: ctlsched.NewJobs()}
	if why := env.CPUQuotaUnavailable; why != "" {
		o.Skip = append(o.Skip, Quota)
		s.note = "guard: " + why + ": the cpu-quota rung is skipped"
	}
	if !env.Config.RDT {
		o.Skip = append(o.Skip, MBA, Ways)
	}
	if so.Cache != nil && *so.Cache != "" {
		if *so.Cache == "guard" {
			return nil, fmt.Errorf("guard: scheduler.options.cache = guard: name a cache policy (dcat, static-cat, lfoc+, vp)")
		}
		inner, err := sched.New(*so.Cache, env)
		if err != nil {
			return nil, fmt.Errorf("guard: scheduler.options.cache: %w", err)
		}
		s.cache, s.mba = inner, map[int]int{}
		o.Skip = append(o.Skip, Ways)
	}
	c, err := New(o)
	if err != nil {
		return nil, err
	}
	s.c = c
	return s, nil
}

// Name implements sched.Scheduler.
func (s *Scheduler) Name() string { return "guard" }

// Controller returns the guard.
func (s *Scheduler) Controller() *Controller { return s.c }

// Tick implements sched.Scheduler.
func (s *Scheduler) Tick(obs *sched.Observation) sched.Decisions {
	var d sched.Decisions
	if s.note != "" {
		d.Log = append(d.Log, s.note)
		s.note = ""
	}
	for _, g := range s.jobs.Gone(obs) {
		s.c.Remove(strconv.Itoa(g.ID))
		delete(s.mba, g.ID)
	}
	if s.cache != nil {
		inner := s.cache.Tick(obs)
		inner.Log = append(d.Log, inner.Log...)
		d = inner
	} else {
		ctlsched.Place(obs, s.m, &d, nil, nil)
	}
	s.obs = s.obs[:0]
	fresh := false
	for _, r := range obs.Running {
		id := strconv.Itoa(r.ID)
		if _, known := s.jobs.Socket(r.ID); !known {
			if err := s.c.Add(id, Tenant{Socket: r.Socket, Priority: r.Priority, SLOms: r.SLOms, IPCETarget: r.IPCETarget}); err != nil {
				d.Log = append(d.Log, err.Error())
				continue
			}
			s.jobs.Known(r.ID, r.Socket)
		}
		l := s.jobs.Fresh(r)
		if l == nil {
			continue
		}
		fresh = true
		cpu := 0.0
		if iv := l.Interval.Seconds(); iv > 0 && s.m.ClockGHz > 0 {
			cpu = l.Cycles / iv / (s.m.ClockGHz * 1e9)
		}
		cpi := 0.0
		if l.Instructions > 0 {
			cpi = l.Cycles / l.Instructions
		}
		s.obs = append(s.obs, Obs{ID: id, LatencyMs: l.LatencyMs, IPCE: l.IPCE(), CPI: cpi, MBM: l.MemBandwidthMBps,
			Occupancy: l.LLCOccupancy, CPU: cpu})
	}
	if !fresh {
		s.compose(&d, obs, nil)
		return d
	}
	acts := s.c.Step(s.obs)
	if s.cache != nil {
		s.Actions += len(acts)
		s.compose(&d, obs, acts)
		return d
	}
	s.Actions += len(acts)
	for _, a := range acts {
		job, _ := strconv.Atoi(a.Tenant)
		text := fmt.Sprintf("%s %s of job %s for victim %s: %v → %v; %s", a.Kind, a.Rung, a.Tenant, a.Victim, a.From, a.To, a.Evidence)
		d.Events = append(d.Events, sched.Event{Kind: "guard-" + a.Kind, Job: job, Text: text})
		d.Log = append(d.Log, "guard: "+text)
		if a.From == a.To {
			continue
		}
		sock, _ := s.jobs.Socket(job)
		if a.From.Quota != a.To.Quota {
			d.Quota = append(d.Quota, sched.QuotaChange{Job: job, Quota: a.To.Quota})
		}
		al := sched.Allocation{Job: job, Socket: sock, Mask: lowWays(a.To.Ways), MBA: a.To.MBA, Reason: "guard-" + a.Kind}
		if a.To.Ways >= s.m.LLC.Ways && a.To.MBA >= s.c.Options().MBAMax {
			al.Mask, al.MBA = 0, 0 // unthrottled: back to system/default
		}
		if a.From.Ways != a.To.Ways || a.From.MBA != a.To.MBA {
			s.jobs.Want(al)
		}
	}
	s.jobs.Flush(&d, obs, s.m.CBMRules(), "guard")
	d.DefaultMask = map[int]uint64{}
	for sock := 0; sock < s.m.Sockets; sock++ {
		d.DefaultMask[sock] = s.m.FullMask()
	}
	return d
}

// compose lays the guard's MBA and quota over the cache policy's decisions: every
// allocation the cache policy sends for a job the guard throttles carries the guard's MBA;
// a job whose MBA the guard changed and that the cache policy did not touch keeps its
// current mask with the new MBA.
func (s *Scheduler) compose(d *sched.Decisions, obs *sched.Observation, acts []Action) {
	if s.cache == nil {
		return
	}
	changed := map[int]bool{}
	for _, a := range acts {
		job, _ := strconv.Atoi(a.Tenant)
		text := fmt.Sprintf("%s %s of job %s for victim %s: %v → %v; %s", a.Kind, a.Rung, a.Tenant, a.Victim, a.From, a.To, a.Evidence)
		d.Events = append(d.Events, sched.Event{Kind: "guard-" + a.Kind, Job: job, Text: text})
		d.Log = append(d.Log, "guard: "+text)
		if a.From.Quota != a.To.Quota {
			d.Quota = append(d.Quota, sched.QuotaChange{Job: job, Quota: a.To.Quota})
		}
		if a.From.MBA != a.To.MBA {
			s.mba[job] = a.To.MBA
			changed[job] = true
		}
	}
	for i := range d.Allocate {
		a := &d.Allocate[i]
		if v, ok := s.mba[a.Job]; ok && a.Mask != 0 {
			a.MBA = v
			delete(changed, a.Job)
		}
	}
	for _, r := range obs.Running {
		if !changed[r.ID] {
			continue
		}
		mask := r.Mask
		if mask == 0 {
			mask = s.m.FullMask()
		}
		d.Allocate = append(d.Allocate, sched.Allocation{Job: r.ID, Socket: r.Socket, Mask: mask, MBA: s.mba[r.ID], Reason: "guard"})
	}
}

// lowWays is the mask of the n lowest ways.
func lowWays(n int) uint64 { return 1<<uint(n) - 1 }

// StaticScheduler is "static-cat-mba", the pqos-style static split an operator would set
// by hand: priority jobs share the top prio_ways ways (default half the cache) in one
// group, every other job the remaining low ways at MBA be_mba (default half the MBA range
// above the minimum, 50 % on Intel), for the whole run. scheduler.options (prefix
// "static-cat-mba." allowed): prio_ways, be_mba.
type StaticScheduler struct {
	m        *machine.Profile
	prioWays int
	beMBA    int
	jobs     *ctlsched.Jobs
}

type staticOptions struct {
	PrioWays *int `yaml:"prio_ways"`
	BEMBA    *int `yaml:"be_mba"`
}

// NewStaticScheduler is the sched.Factory of "static-cat-mba".
func NewStaticScheduler(env sched.Env) (sched.Scheduler, error) {
	m := env.Machine
	s := &StaticScheduler{m: m, prioWays: m.LLC.Ways / 2, jobs: ctlsched.NewJobs()}
	if m.MBA != nil {
		s.beMBA = m.MBA.Min + (m.MBA.Max-m.MBA.Min)/2
		if g := max(m.MBA.Gran, 1); (s.beMBA-m.MBA.Min)%g != 0 {
			s.beMBA -= (s.beMBA - m.MBA.Min) % g
		}
	}
	var o staticOptions
	if err := ctlsched.Decode("static-cat-mba", env.Config, &o, "static-cat-mba."); err != nil {
		return nil, err
	}
	ctlsched.Set(&s.prioWays, o.PrioWays)
	ctlsched.Set(&s.beMBA, o.BEMBA)
	if s.prioWays < 1 || s.prioWays >= m.LLC.Ways {
		return nil, fmt.Errorf("static-cat-mba: prio_ways %d: want 1..%d", s.prioWays, m.LLC.Ways-1)
	}
	if m.MBA != nil && (s.beMBA < m.MBA.Min || s.beMBA > m.MBA.Max) {
		return nil, fmt.Errorf("static-cat-mba: be_mba %d: want %d..%d", s.beMBA, m.MBA.Min, m.MBA.Max)
	}
	return s, nil
}

// Name implements sched.Scheduler.
func (s *StaticScheduler) Name() string { return "static-cat-mba" }

// Tick implements sched.Scheduler.
func (s *StaticScheduler) Tick(obs *sched.Observation) sched.Decisions {
	var d sched.Decisions
	s.jobs.Gone(obs)
	ctlsched.Place(obs, s.m, &d, nil, nil)
	W := s.m.LLC.Ways
	for _, r := range obs.Running {
		if _, known := s.jobs.Socket(r.ID); known {
			continue
		}
		s.jobs.Known(r.ID, r.Socket)
		a := sched.Allocation{Job: r.ID, Socket: r.Socket, Mask: lowWays(W - s.prioWays), MBA: s.beMBA, Reason: "static"}
		if r.Priority {
			a.Mask, a.MBA = lowWays(W)&^lowWays(W-s.prioWays), ctlsched.MaxMBA(s.m)
		}
		s.jobs.Want(a)
	}
	s.jobs.Flush(&d, obs, s.m.CBMRules(), "static-cat-mba")
	return d
}
