package lfocplus

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"colo/machine"
	"colo/policy"
	"colo/policy/ctlsched"
	"colo/sched"
)

func init() { sched.Register("lfoc+", NewScheduler) }

// Scheduler runs one LFOC+ controller per LLC domain (socket) behind sched.Scheduler.
// Jobs are placed FIFO on the socket with the most free cores; each tick the latest
// collector sample of every running job is fed to its socket's controller, whose masks
// become allocations (system/default keeps the full mask: every job has its own group),
// sent within the mount's CLOS budget (ctlsched.Fit).
// Sampling steps advance once per collector sample, so a short data frequency (e.g. 50 ms)
// makes sampling mode short, as in the paper.
//
// scheduler.options (prefix "lfoc+." allowed, see ctlsched.Scoped): period_t (s, 0.5),
// sampling_instructions (10e6), fairness_instructions (100e6), warmup_intervals (3),
// early_stop_llcmpkc (0.5), high_llcmpkc (10), low_llcmpkc (3), phase_window (4),
// streaming_llcmpkc (Table 1's 10; PBBCache uses 14), partition (lfoc+ | lfoc).
type Scheduler struct {
	m    *machine.Profile
	ctl  []*Controller
	jobs *ctlsched.Jobs
	mba  int
}

// NewScheduler is the sched.Factory of "lfoc+".
func NewScheduler(env sched.Env) (sched.Scheduler, error) {
	m := env.Machine
	if m.LLC.DomainsPerSocket != 1 {
		return nil, fmt.Errorf("lfoc+: machine %s has %d LLC domains per socket; this scheduler manages one LLC per socket", m.Name, m.LLC.DomainsPerSocket)
	}
	opt := DefaultOptions(m.LLC.Ways, float64(m.BytesPerWay()))
	var o schedOptions
	if err := ctlsched.Decode("lfoc+", env.Config, &o, "lfoc+."); err != nil {
		return nil, err
	}
	if err := o.apply(&opt); err != nil {
		return nil, err
	}
	s := &Scheduler{m: m, jobs: ctlsched.NewJobs()}
	ctl, err := ctlsched.PerSocket(m.Sockets, func() (*Controller, error) { return New(opt) })
	if err != nil {
		return nil, err
	}
	s.ctl, s.mba = ctl, ctlsched.MaxMBA(m)
	return s, nil
}

// schedOptions are lfoc+'s scheduler.options (see Scheduler); unset keys keep
// DefaultOptions.
type schedOptions struct {
	PeriodT              *float64 `yaml:"period_t"`
	SamplingInstructions *float64 `yaml:"sampling_instructions"`
	FairnessInstructions *float64 `yaml:"fairness_instructions"`
	WarmupIntervals      *int     `yaml:"warmup_intervals"`
	EarlyStopLLCMPKC     *float64 `yaml:"early_stop_llcmpkc"`
	HighLLCMPKC          *float64 `yaml:"high_llcmpkc"`
	LowLLCMPKC           *float64 `yaml:"low_llcmpkc"`
	PhaseWindow          *int     `yaml:"phase_window"`
	StreamingLLCMPKC     *float64 `yaml:"streaming_llcmpkc"`
	Partition            *string  `yaml:"partition"`
}

func (o schedOptions) apply(opt *Options) error {
	ctlsched.Seconds(&opt.Period, o.PeriodT)
	ctlsched.Set(&opt.SamplingInstructions, o.SamplingInstructions)
	ctlsched.Set(&opt.FairnessInstructions, o.FairnessInstructions)
	ctlsched.Set(&opt.WarmupIntervals, o.WarmupIntervals)
	ctlsched.Set(&opt.EarlyStopLLCMPKC, o.EarlyStopLLCMPKC)
	ctlsched.Set(&opt.HighLLCMPKC, o.HighLLCMPKC)
	ctlsched.Set(&opt.LowLLCMPKC, o.LowLLCMPKC)
	ctlsched.Set(&opt.PhaseWindow, o.PhaseWindow)
	ctlsched.Set(&opt.Thresholds.StreamingLLCMPKC, o.StreamingLLCMPKC)
	if o.Partition != nil {
		switch *o.Partition {
		case "lfoc+":
			opt.Partition = nil // LFOC+ through the controller's planner
		case "lfoc":
			opt.Partition = func(c []policy.Class, cu []policy.AppCurves, w int, p policy.LFOCParams) ([]policy.Cluster, error) {
				return policy.LFOCClusters(false, c, cu, w, p)
			}
		default:
			return fmt.Errorf("lfoc+: scheduler.options.partition = %v: use lfoc+ or lfoc", *o.Partition)
		}
	}
	return nil
}

// Name implements sched.Scheduler.
func (s *Scheduler) Name() string { return "lfoc+" }

// Controller returns a socket's controller.
func (s *Scheduler) Controller(socket int) *Controller { return s.ctl[socket] }

// Tick implements sched.Scheduler.
func (s *Scheduler) Tick(obs *sched.Observation) sched.Decisions {
	var d sched.Decisions
	for _, g := range s.jobs.Gone(obs) {
		_ = s.ctl[g.Socket].Remove(strconv.Itoa(g.ID))
	}
	admit := func(j sched.Job, sock int) error {
		if err := s.ctl[sock].Add(strconv.Itoa(j.ID)); err != nil {
			return err
		}
		s.jobs.Placed(j.ID, sock, obs.Now)
		return nil
	}
	if j, why := ctlsched.Place(obs, s.m, &d, nil, admit); j != nil && why != nil {
		d.Log = append(d.Log, "lfoc+: "+why.Error())
	}
	samples := make([][]Sample, len(s.ctl))
	for _, r := range obs.Running {
		l := s.jobs.Fresh(r)
		if l == nil {
			continue
		}
		sock, _ := s.jobs.Socket(r.ID)
		samples[sock] = append(samples[sock], Sample{ID: strconv.Itoa(r.ID), Instructions: l.Instructions,
			Cycles: l.Cycles, LLCMisses: l.LLCMisses, OccupancyBytes: l.LLCOccupancy})
	}
	for sock, c := range s.ctl {
		dec, ok, err := c.Step(obs.Now, samples[sock])
		if err != nil {
			d.Log = append(d.Log, "lfoc+: "+err.Error())
			continue
		}
		if !ok {
			continue
		}
		d.ConsolidatedWays += dec.MovedWays
		for _, e := range dec.Events {
			if e.Kind != "sample-step" {
				d.Log = append(d.Log, fmt.Sprintf("lfoc+: %s %s %s", e.Kind, e.ID, e.Text))
			}
		}
		ids := slices.Sorted(maps.Keys(dec.Masks))
		for _, sid := range ids {
			id, _ := strconv.Atoi(sid)
			s.jobs.Want(sched.Allocation{Job: id, Socket: sock, Mask: dec.Masks[sid], MBA: s.mba, Reason: "lfoc+-" + dec.Mode.String()})
		}
		if d.DefaultMask == nil {
			d.DefaultMask = map[int]uint64{}
		}
		d.DefaultMask[sock] = s.m.FullMask()
	}
	s.jobs.Flush(&d, obs, s.m.CBMRules(), "lfoc+")
	return d
}
