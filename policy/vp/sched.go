package vp

import (
	"fmt"
	"sort"
	"strconv"

	"colo/machine"
	"colo/policy/ctlsched"
	"colo/sched"
)

func init() { sched.Register("vp", NewScheduler) }

// Scheduler runs the VP controller behind sched.Scheduler. Jobs are placed FIFO on the socket
// with the most free cores (VP's initial placement traverses sockets for local cores,
// seed004.md §1.2); the controller's configurations become allocations (a group with the
// confined mask and/or the MBA value; back to system/default when neither is set),
// migrations for socket moves, and system/default keeps every way (VP does not partition).
// Allocations are sent within the mount's CLOS budget (ctlsched.Fit).
//
// Moves (to another socket, or to other cores of the LLC domain off the victim's SMT
// siblings) become re-pins to the cores the controller chose (sched.Repin), so pinned jobs
// move too; CPU quotas become sched.QuotaChange decisions, and the cpu-quota rung is skipped
// on a platform without a CPU-quota actuator (sched.Env.CPUQuotaUnavailable). MF uses the
// samples' L2 misses (L2MissesOf).
//
// scheduler.options: period_t (s, 1), hurt_threshold (0.1), window (periods, 2),
// saturation (0.8), saturation_exit (0.75 of saturation), mf_rise (0.05), relax_after (periods, 5; 0 never
// relaxes), confine_ways (2), mba_floor (machine minimum), quota_step (0.1), quota_floor
// (0.5), priority_weight (weight of priority jobs, 2), mpki_low/mpki_high (2/15),
// mf_low/mf_high (0.25/0.6); keys may carry the prefix "vp." (ctlsched.Scoped).
type Scheduler struct {
	m      *machine.Profile
	c      *Controller
	weight float64
	jobs   *ctlsched.Jobs
	cores  map[int][]int // cores the job runs on (as last observed or re-pinned to)
	quota  map[int]float64
	note   string // said once in the decision log
	// Reconfigurations counts the ladder actions and undos over the run.
	Reconfigurations int
}

// NewScheduler is the sched.Factory of "vp".
func NewScheduler(env sched.Env) (sched.Scheduler, error) {
	m := env.Machine
	opt := DefaultOptions(m)
	s := &Scheduler{m: m, weight: 2, jobs: ctlsched.NewJobs(), cores: map[int][]int{}, quota: map[int]float64{}}
	if why := env.CPUQuotaUnavailable; why != "" {
		opt.Skip = []Kind{CPUQuota}
		s.note = "vp: " + why + ": the cpu-quota rung is skipped"
	}
	var o schedOptions
	if err := ctlsched.Decode("vp", env.Config, &o, "vp."); err != nil {
		return nil, err
	}
	if o.PriorityWeight != nil {
		if !(*o.PriorityWeight > 0) {
			return nil, fmt.Errorf("vp: scheduler.options.priority_weight = %v must be positive", *o.PriorityWeight)
		}
		s.weight = *o.PriorityWeight
	}
	o.apply(&opt)
	c, err := New(m, opt)
	if err != nil {
		return nil, err
	}
	s.c = c
	return s, nil
}

// schedOptions are vp's scheduler.options (see Scheduler); unset keys keep DefaultOptions.
type schedOptions struct {
	PeriodT        *float64 `yaml:"period_t"`
	HurtThreshold  *float64 `yaml:"hurt_threshold"`
	Window         *int     `yaml:"window"`
	Saturation     *float64 `yaml:"saturation"`
	SaturationExit *float64 `yaml:"saturation_exit"`
	MFRise         *float64 `yaml:"mf_rise"`
	RelaxAfter     *int     `yaml:"relax_after"`
	ConfineWays    *int     `yaml:"confine_ways"`
	MBAFloor       *int     `yaml:"mba_floor"`
	QuotaStep      *float64 `yaml:"quota_step"`
	QuotaFloor     *float64 `yaml:"quota_floor"`
	PriorityWeight *float64 `yaml:"priority_weight"`
	MPKILow        *float64 `yaml:"mpki_low"`
	MPKIHigh       *float64 `yaml:"mpki_high"`
	MFLow          *float64 `yaml:"mf_low"`
	MFHigh         *float64 `yaml:"mf_high"`
}

func (o schedOptions) apply(opt *Options) {
	ctlsched.Seconds(&opt.Period, o.PeriodT)
	ctlsched.Set(&opt.HurtThreshold, o.HurtThreshold)
	ctlsched.Set(&opt.Window, o.Window)
	ctlsched.Set(&opt.Saturation, o.Saturation)
	ctlsched.Set(&opt.SaturationExit, o.SaturationExit)
	ctlsched.Set(&opt.MFRise, o.MFRise)
	ctlsched.Set(&opt.RelaxAfter, o.RelaxAfter)
	ctlsched.Set(&opt.ConfineWays, o.ConfineWays)
	ctlsched.Set(&opt.MBAFloor, o.MBAFloor)
	ctlsched.Set(&opt.QuotaStep, o.QuotaStep)
	ctlsched.Set(&opt.QuotaFloor, o.QuotaFloor)
	ctlsched.Set(&opt.MPKILow, o.MPKILow)
	ctlsched.Set(&opt.MPKIHigh, o.MPKIHigh)
	ctlsched.Set(&opt.MFLow, o.MFLow)
	ctlsched.Set(&opt.MFHigh, o.MFHigh)
}

// Name implements sched.Scheduler.
func (s *Scheduler) Name() string { return "vp" }

// Controller returns the underlying controller.
func (s *Scheduler) Controller() *Controller { return s.c }

// Tick implements sched.Scheduler.
func (s *Scheduler) Tick(obs *sched.Observation) sched.Decisions {
	var d sched.Decisions
	if s.note != "" {
		d.Log = append(d.Log, s.note)
		s.note = ""
	}
	for _, g := range s.jobs.Gone(obs) {
		_ = s.c.Remove(strconv.Itoa(g.ID))
		delete(s.cores, g.ID)
		delete(s.quota, g.ID)
	}
	ctlsched.Place(obs, s.m, &d, nil, nil)
	// Where jobs actually run first (the run loop picks the cores of a move), then newcomers.
	for _, r := range obs.Running {
		id := strconv.Itoa(r.ID)
		if sock, known := s.jobs.Socket(r.ID); known && (r.Socket != sock || !sameCores(r.Placed, s.coresOf(id))) {
			// a re-pin the run loop could not apply: the job is where it was, in whatever
			// class it had; the next allocation is written whatever it is
			_ = s.c.SetCores(id, r.Placed)
			s.jobs.Moved(r.ID, r.Socket)
			s.jobs.Unsent(r.ID)
		}
		s.cores[r.ID] = append([]int(nil), r.Placed...)
	}
	var samples []Sample
	for _, r := range obs.Running {
		id := strconv.Itoa(r.ID)
		if _, known := s.jobs.Socket(r.ID); !known {
			w := 1.0
			if r.Priority {
				w = s.weight
			}
			if err := s.c.Add(id, w, r.Placed); err != nil {
				d.Log = append(d.Log, "vp: "+err.Error())
				continue
			}
			s.jobs.Known(r.ID, r.Socket)
		}
		l := s.jobs.Fresh(r)
		if l == nil {
			continue
		}
		samples = append(samples, Sample{ID: id, Instructions: l.Instructions, Cycles: l.Cycles,
			L2Misses: L2MissesOf(*l), LLCMisses: l.LLCMisses, MemBytes: l.MemBandwidthMBps * 1e6 * l.Interval.Seconds(),
			Interval: l.Interval})
	}
	dec, ok, err := s.c.Step(obs.Now, samples)
	if err != nil {
		d.Log = append(d.Log, "vp: "+err.Error())
		return d
	}
	if !ok {
		return d
	}
	s.Reconfigurations += len(dec.Actions) + len(dec.Undone)
	for _, u := range dec.Undone {
		d.Log = append(d.Log, fmt.Sprintf("vp: undo %v (repercussion on %v)", u, u.Repercussions))
	}
	for _, a := range dec.Actions {
		d.Log = append(d.Log, fmt.Sprintf("vp: %v", a))
	}
	full := s.m.FullMask()
	maxMBA := ctlsched.MaxMBA(s.m)
	from := map[int][]int{} // cores of the re-pinned jobs before this tick
	for _, cfg := range dec.Configs {
		id, _ := strconv.Atoi(cfg.ID)
		if _, known := s.jobs.Socket(id); !known {
			continue
		}
		sock := cfg.socket(s.m)
		if !sameCores(cfg.Cores, s.cores[id]) {
			d.Repin = append(d.Repin, sched.Repin{Job: id, CPUs: append([]int(nil), cfg.Cores...)})
			from[id] = s.cores[id]
			s.cores[id] = append([]int(nil), cfg.Cores...)
			s.jobs.Moved(id, sock)
			s.jobs.Reset(id) // the job leaves its class of service
		}
		if q, ok := s.quota[id]; (ok && q != cfg.Quota) || (!ok && cfg.Quota != 1) {
			d.Quota = append(d.Quota, sched.QuotaChange{Job: id, Quota: cfg.Quota})
			s.quota[id] = cfg.Quota
		}
		a := sched.Allocation{Job: id, Socket: sock, Mask: cfg.Mask, MBA: cfg.MBA, Reason: "vp"}
		if cfg.Mask == full && cfg.MBA == maxMBA {
			a.Mask, a.MBA = 0, 0 // back to system/default
		}
		s.jobs.Want(a)
	}
	s.jobs.Flush(&d, obs, s.m.CBMRules(), "vp")
	d.Repin = orderRepins(d.Repin, from)
	d.DefaultMask = map[int]uint64{}
	for sock := 0; sock < s.m.Sockets; sock++ {
		d.DefaultMask[sock] = full
	}
	return d
}

// L2MissesOf is a sample's L2-miss count for MF (seed004.md §2.1): the L2-miss counter where
// the platform has one (sim), else the LLC references, every one of which is an L2 miss
// (linux: perf has no generic L2-miss event), which makes MF the LLC miss ratio there.
func L2MissesOf(s sched.Sample) float64 {
	if s.L2Misses > 0 {
		return s.L2Misses
	}
	return s.LLCReferences
}

// orderRepins orders re-pins so that a job moves only after the jobs on its new cores moved
// away (an undone move and the next move can swap cores within one tick); from holds the
// re-pinned jobs' cores before the tick.
func orderRepins(rs []sched.Repin, from map[int][]int) []sched.Repin {
	if len(rs) < 2 {
		return rs
	}
	old := map[int]int{} // core -> re-pinned job that still sits there
	for _, r := range rs {
		for _, c := range from[r.Job] {
			old[c] = r.Job
		}
	}
	var out []sched.Repin
	left := append([]sched.Repin(nil), rs...)
	for len(left) > 0 {
		k := 0 // the first whose target cores no other waiting job occupies; else keep the order
		for i, r := range left {
			blocked := false
			for _, c := range r.CPUs {
				if j, ok := old[c]; ok && j != r.Job {
					blocked = true
				}
			}
			if !blocked {
				k = i
				break
			}
		}
		r := left[k]
		left = append(left[:k], left[k+1:]...)
		for _, c := range from[r.Job] {
			if old[c] == r.Job {
				delete(old, c)
			}
		}
		out = append(out, r)
	}
	return out
}

func (s *Scheduler) coresOf(id string) []int {
	if w, ok := s.c.ws[id]; ok {
		return w.cfg.Cores
	}
	return nil
}

func sameCores(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	x := append([]int(nil), a...)
	y := append([]int(nil), b...)
	sort.Ints(x)
	sort.Ints(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}
