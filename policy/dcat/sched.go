package dcat

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"colo/machine"
	"colo/policy/ctlsched"
	"colo/sched"
)

func init() {
	sched.Register("dcat", NewScheduler)
	sched.Register("static-cat", NewStaticScheduler)
}

// NewStaticScheduler is the sched.Factory of "static-cat": the same placement and baselines
// as dcat, each job holding its baseline ways for its whole run (the paper's "static
// partition" baseline).
func NewStaticScheduler(env sched.Env) (sched.Scheduler, error) {
	s, err := NewScheduler(env)
	if err != nil {
		return nil, err
	}
	d := s.(*Scheduler)
	d.name = "static-cat"
	for i, c := range d.ctl {
		o := c.Options()
		o.Static = true
		if d.ctl[i], err = New(o); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Scheduler runs one dCat controller per LLC domain (socket) behind the sched.Scheduler
// interface, so that `colo run` drives it on any platform.
//
// Jobs are placed FIFO on the socket with the most free cores whose controller admits the
// job's baseline (a job whose baseline can never be admitted is rejected; one that does not
// fit now waits). Each tick the latest collector sample of every running job is fed to its
// socket's controller; the decided masks become allocations, the reserved host ways the
// system/default mask, and the repacking cost the tick's ConsolidatedWays. The allocations
// are sent within the mount's CLOS budget (ctlsched.Fit): never on another agent's ways,
// never more distinct masks per socket than control groups are left.
//
// The phase signature is retired loads per instruction (the samples' L1References, dCat's
// l1_ref). On a platform that reports no loads, LLC references per instruction stand in: LLC
// references are L2 misses, which the private L2 determines independently of the LLC
// allocation — the property dCat's signature needs (seed003.md §1.7).
//
// scheduler.options: baseline (ways, default 2), baselines (map of job name to ways),
// policy (max-performance | max-fairness), period_t (s, default 1), miss_rate_threshold,
// ipc_gain_threshold, phase_threshold, streaming_factor, llc_ref_rate, preferred_tolerance,
// host_ways (default: the scheduler's reserve_ways). Keys may carry the prefix "dcat." (see
// ctlsched.Scoped).
type Scheduler struct {
	name      string
	m         *machine.Profile
	opt       Options
	baseline  int
	baselines map[string]int
	ctl       []*Controller // per socket
	jobs      *ctlsched.Jobs
	names     map[int]string // job ID -> controller id (its tenant)
	jobOf     map[string]int
	mba       int
	// Reconfigurations counts the decisions that changed a mask; MovedWays the ways the
	// repacking moved, over the whole run.
	Reconfigurations int
	MovedWays        int
}

// NewScheduler is the sched.Factory of "dcat".
func NewScheduler(env sched.Env) (sched.Scheduler, error) {
	m := env.Machine
	if m.LLC.DomainsPerSocket != 1 {
		return nil, fmt.Errorf("dcat: machine %s has %d LLC domains per socket; the dcat scheduler manages one LLC per socket", m.Name, m.LLC.DomainsPerSocket)
	}
	opt := DefaultOptions(m.LLC.Ways)
	opt.MaxCLOS = m.CAT.NumCLOSIDs
	opt.Sparse = m.CAT.SparseMasks
	opt.HostWays = max(0, env.Config.ReserveWays)
	s := &Scheduler{name: "dcat", m: m, baseline: 2, baselines: map[string]int{}, jobs: ctlsched.NewJobs(),
		names: map[int]string{}, jobOf: map[string]int{}}
	if err := s.parseOptions(env.Config, &opt); err != nil {
		return nil, err
	}
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if s.baseline < opt.MinWays || s.baseline > opt.Capacity() {
		return nil, fmt.Errorf("dcat: scheduler.options.baseline = %d is outside %d..%d", s.baseline, opt.MinWays, opt.Capacity())
	}
	for _, name := range slices.Sorted(maps.Keys(s.baselines)) {
		if b := s.baselines[name]; b < opt.MinWays || b > opt.Capacity() {
			return nil, fmt.Errorf("dcat: scheduler.options.baselines.%s = %d is outside %d..%d (the %d-way cache less host_ways)",
				name, b, opt.MinWays, opt.Capacity(), m.LLC.Ways)
		}
	}
	s.opt = opt
	ctl, err := ctlsched.PerSocket(m.Sockets, func() (*Controller, error) { return New(opt) })
	if err != nil {
		return nil, err
	}
	s.ctl, s.mba = ctl, ctlsched.MaxMBA(m)
	return s, nil
}

// schedOptions are dcat's scheduler.options (see Scheduler); unset keys keep
// DefaultOptions.
type schedOptions struct {
	Baseline           *int      `yaml:"baseline"`
	Baselines          yaml.Node `yaml:"baselines"`
	Policy             *string   `yaml:"policy"`
	PeriodT            *float64  `yaml:"period_t"`
	MissRateThreshold  *float64  `yaml:"miss_rate_threshold"`
	IPCGainThreshold   *float64  `yaml:"ipc_gain_threshold"`
	PhaseThreshold     *float64  `yaml:"phase_threshold"`
	StreamingFactor    *float64  `yaml:"streaming_factor"`
	LLCRefRate         *float64  `yaml:"llc_ref_rate"`
	PreferredTolerance *float64  `yaml:"preferred_tolerance"`
	HostWays           *int      `yaml:"host_ways"`
}

func (s *Scheduler) parseOptions(cfg sched.Config, opt *Options) error {
	var o schedOptions
	if err := ctlsched.Decode("dcat", cfg, &o, "dcat.", "static-cat."); err != nil {
		return err
	}
	ctlsched.Set(&s.baseline, o.Baseline)
	if b := o.Baselines; b.Kind != 0 {
		if b.Kind != yaml.MappingNode {
			return &ctlsched.OptionError{Line: b.Line, Msg: fmt.Sprintf("dcat: scheduler.options.baselines must map job names to ways, got %s", b.Value)}
		}
		for i := 0; i+1 < len(b.Content); i += 2 {
			name := b.Content[i].Value
			n, err := ctlsched.WholeAt("dcat", "baselines."+name, b.Content[i+1])
			if err != nil {
				return err
			}
			s.baselines[name] = n
		}
	}
	if o.Policy != nil {
		p, err := ParsePolicy(*o.Policy)
		if err != nil {
			return err
		}
		opt.Policy = p
	}
	ctlsched.Seconds(&opt.Period, o.PeriodT)
	ctlsched.Set(&opt.MissRateThreshold, o.MissRateThreshold)
	ctlsched.Set(&opt.IPCGainThreshold, o.IPCGainThreshold)
	ctlsched.Set(&opt.PhaseThreshold, o.PhaseThreshold)
	ctlsched.Set(&opt.StreamingFactor, o.StreamingFactor)
	ctlsched.Set(&opt.LLCRefRate, o.LLCRefRate)
	ctlsched.Set(&opt.PreferredTolerance, o.PreferredTolerance)
	ctlsched.Set(&opt.HostWays, o.HostWays)
	return nil
}

// Name implements sched.Scheduler.
func (s *Scheduler) Name() string { return s.name }

// Controller returns the controller of a socket (for inspection in tests and reports).
func (s *Scheduler) Controller(socket int) *Controller { return s.ctl[socket] }

// Tenant is the tenant a job belongs to: its name up to a '#' ("vm#2" is tenant "vm"'s
// second job). A tenant's jobs share its baseline and its performance tables.
func Tenant(name string) string {
	if i := strings.IndexByte(name, '#'); i > 0 {
		return name[:i]
	}
	return name
}

func (s *Scheduler) baselineOf(j sched.Job) int {
	if b, ok := s.baselines[Tenant(j.Name)]; ok {
		return b
	}
	return s.baseline
}

// idOf is the controller id of a job: its tenant, unless a job of that tenant already holds
// it (then the job's own number).
func (s *Scheduler) idOf(j sched.Job) string {
	t := Tenant(j.Name)
	for id, name := range s.names {
		if name == t && id != j.ID {
			return "job-" + strconv.Itoa(j.ID)
		}
	}
	return t
}

// Tick implements sched.Scheduler.
func (s *Scheduler) Tick(obs *sched.Observation) sched.Decisions {
	var d sched.Decisions
	// finished jobs, and jobs placed earlier that neither run nor finished (their start
	// failed), are forgotten
	for _, g := range s.jobs.Gone(obs) {
		cid := s.names[g.ID]
		_ = s.ctl[g.Socket].Remove(cid)
		delete(s.jobOf, cid)
		delete(s.names, g.ID)
	}
	reject := func(j sched.Job) string {
		if b := s.baselineOf(j); b < s.opt.MinWays || b > s.opt.Capacity() {
			return fmt.Sprintf("dcat baseline %d ways is outside %d..%d", b, s.opt.MinWays, s.opt.Capacity())
		}
		return ""
	}
	admit := func(j sched.Job, sock int) error {
		cid := s.idOf(j)
		if err := s.ctl[sock].Add(cid, s.baselineOf(j)); err != nil {
			return err
		}
		s.names[j.ID] = cid
		s.jobOf[cid] = j.ID
		s.jobs.Placed(j.ID, sock, obs.Now)
		return nil
	}
	if j, why := ctlsched.Place(obs, s.m, &d, reject, admit); j != nil && why != nil {
		d.Log = append(d.Log, fmt.Sprintf("dcat: job %d waits: %v", j.ID, why))
	}
	samples := make([][]Sample, len(s.ctl))
	for _, r := range obs.Running {
		l := s.jobs.Fresh(r)
		if l == nil {
			continue
		}
		sock, _ := s.jobs.Socket(r.ID)
		loads := l.L1References
		if loads <= 0 && l.Instructions > 0 {
			loads = l.LLCReferences // a platform without a load counter
		}
		samples[sock] = append(samples[sock], Sample{ID: s.names[r.ID], Instructions: l.Instructions,
			Cycles: l.Cycles, Loads: loads, LLCRefs: l.LLCReferences, LLCMisses: l.LLCMisses, Interval: l.Interval})
	}
	for sock, c := range s.ctl {
		dec, ok, err := c.Step(obs.Now, samples[sock])
		if err != nil {
			d.Log = append(d.Log, "dcat: "+err.Error())
			continue
		}
		if !ok {
			continue
		}
		if dec.Changed {
			s.Reconfigurations++
		}
		s.MovedWays += dec.MovedWays
		d.ConsolidatedWays += dec.MovedWays
		if d.DefaultMask == nil {
			d.DefaultMask = map[int]uint64{}
		}
		d.DefaultMask[sock] = dec.HostMask
		for _, a := range dec.Allocs {
			s.jobs.Want(sched.Allocation{Job: s.jobOf[a.ID], Socket: sock, Mask: a.Mask, MBA: s.mba, Reason: "dcat-" + a.State.String()})
		}
		for _, t := range dec.Transitions {
			d.Log = append(d.Log, fmt.Sprintf("dcat: job %d (%s) %v -> %v", s.jobOf[t.ID], t.ID, t.From, t.To))
		}
	}
	s.jobs.Flush(&d, obs, s.m.CBMRules(), s.name)
	return d
}
