package bench

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"colo/metric"
	"colo/platform"
	"colo/policy/ctlsched"
	"colo/sched"
)

// Shared is the pseudo-scheduler name of `colo compare`'s baseline: least-loaded placement
// with every job in system/default (no partitioning).
const Shared = "shared"

// SchedulerOutcome is one scheduler's outcome in a comparison by slowdowns (`colo
// compare`); the JSON keys are stable.
type SchedulerOutcome struct {
	Name             string        `json:"name"`
	STP              float64       `json:"stp"`
	ANTT             float64       `json:"antt"`
	Unfairness       float64       `json:"unfairness"`
	WorstSlowdown    float64       `json:"worst_slowdown"`
	Reconfigurations int           `json:"reconfigurations"`
	ReconfigPerMin   float64       `json:"reconfigurations_per_minute"`
	MovedWays        int           `json:"moved_ways"`
	VirtualSeconds   float64       `json:"virtual_seconds"`
	Jobs             []JobSlowdown `json:"jobs"`
	// The guard's measures (GuardOutcome), present when a job has a latency SLO or is
	// marked as the antagonist.
	*GuardOutcome
}

// GuardOutcome measures a scheduler against latency SLOs and best-effort work (Heracles,
// ISCA'15; docs/controllers.md "The guard"):
//
//   - slo_violation_seconds: Σ over the servers' collector intervals whose p99 exceeded
//     the SLO of their length; …_after_first_window: those ending more than GuardWindow
//     after the first violating interval ended (what a controller that needs one
//     repercussion window to act cannot avoid is left out);
//   - be_throughput: Σ over the jobs that are not priority of instructions / (IPC alone ·
//     clock), over the run's seconds: best-effort work done, in cores running at their
//     solo speed;
//   - utilization: Σ cycles of every job / (clock · cores · seconds): the machine's CPU
//     utilisation (a CPU quota lowers it);
//   - antagonist_precision: of the guard's throttles, the fraction aimed at a job marked
//     antagonist (null without throttles); throttles: their number.
type GuardOutcome struct {
	SLOViolationSeconds            float64  `json:"slo_violation_seconds"`
	SLOViolationSecondsAfterWindow float64  `json:"slo_violation_seconds_after_first_window"`
	BEThroughput                   float64  `json:"be_throughput"`
	Utilization                    float64  `json:"utilization"`
	AntagonistPrecision            *float64 `json:"antagonist_precision"`
	Throttles                      int      `json:"throttles"`
}

// GuardWindow is the repercussion window slo_violation_seconds_after_first_window leaves to
// a controller (the guard's default, policy/guard.DefaultOptions).
const GuardWindow = 3 * time.Second

// JobSlowdown is one job's IPC in the run, alone, and its slowdown S = IPC alone / IPC.
type JobSlowdown struct {
	Name     string  `json:"name"`
	IPC      float64 `json:"ipc"`
	IPCAlone float64 `json:"ipc_alone"`
	Slowdown float64 `json:"slowdown"`
}

// ipcRecorder sums instructions and cycles per job and counts reconfigurations: the
// distinct times at which the scheduler changed an allocation, moved or re-pinned a job or
// changed its CPU quota (one tick that resizes several groups is one reconfiguration).
type ipcRecorder struct {
	Discard
	instr, cycles map[int]float64
	throttles     map[int]int // guard-throttle events per job
	reconfig      int
	at            map[time.Duration]bool
}

func newIPCRecorder() *ipcRecorder {
	return &ipcRecorder{instr: map[int]float64{}, cycles: map[int]float64{}, at: map[time.Duration]bool{}, throttles: map[int]int{}}
}

func (r *ipcRecorder) mark(t time.Duration) {
	if !r.at[t] {
		r.at[t] = true
		r.reconfig++
	}
}

func (r *ipcRecorder) Sample(s SampleRecord) error {
	r.instr[s.Job] += s.Instructions
	r.cycles[s.Job] += s.Cycles
	return nil
}

func (r *ipcRecorder) Allocation(a AllocationRecord) error {
	if a.Source == "sched" {
		r.mark(a.T)
	}
	return nil
}

func (r *ipcRecorder) Event(e EventRecord) error {
	if e.Kind == "migrate" || e.Kind == "repin" || e.Kind == "quota" {
		r.mark(e.T)
	}
	if e.Kind == "guard-throttle" {
		r.throttles[e.Job]++
	}
	return nil
}

// RunScheduler runs bm under the named scheduler (or Shared) on a fresh platform with
// counters on, recording into rec (nil: discard). The scheduler is built for the
// platform's machine. Scheduler options the scheduler rejects are a bad-input
// *Error naming bm's file.
func RunScheduler(bm *Benchmark, name string, rec Recorder) (*Result, error) {
	return RunSchedulerHooks(bm, name, rec, Hooks{})
}

// RunSchedulerHooks is RunScheduler with hooks watching the run, labelled name (so "shared",
// not its least-loaded implementation).
func RunSchedulerHooks(bm *Benchmark, name string, rec Recorder, h Hooks) (*Result, error) {
	return runScheduler(context.Background(), bm, name, rec, h)
}

// runScheduler is RunSchedulerHooks cancelled through ctx (Options.Ctx).
func runScheduler(ctx context.Context, bm *Benchmark, name string, rec Recorder, h Hooks) (*Result, error) {
	h = h.labelled(name)
	b := *bm
	b.Data.Perf = true
	impl := name
	b.Sched.Options = bm.Sched.Options
	if name == Shared {
		impl = "least-loaded"
		b.Sched.RDT = false
		b.Sched.Options = nil
	}
	b.Sched.Implementation = impl
	pf, err := NewPlatform(&b)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	// the platform's machine, as in RunAll: on linux it is the detected host
	s, err := sched.New(impl, sched.Env{Machine: pf.Machine(), Config: b.Sched, IPCEUnavailable: platform.IPCEUnavailable(pf)})
	if err != nil {
		return nil, &Error{File: bm.File, Line: ctlsched.LineOf(err), Msg: fmt.Sprintf("scheduler %s: %v", name, err)}
	}
	return Run(&b, pf, s, Options{Recorder: rec, Hooks: h, Ctx: ctx})
}

// Comparer compares schedulers by the jobs' slowdowns; it remembers each job's run-alone
// IPC (by workload, image, cores, CPUs and length) across the schedulers it runs.
type Comparer struct {
	alone map[string]float64
	// Hooks watch every run: the schedulers' (labelled by name) and the run-alone ones
	// (labelled "alone JOB").
	Hooks Hooks
	// Record, when set, returns the recorder of one scheduler's run (a run directory) and
	// the function called with its result and outcome once they are known (run-alone runs
	// are not recorded).
	Record func(scheduler string) (Recorder, func(*Result, SchedulerOutcome) error, error)
	// Ctx cancels the runs (SIGINT/SIGTERM): an interrupted run's error wraps
	// ErrInterrupted. nil: never cancelled.
	Ctx context.Context
}

func (c *Comparer) ctx() context.Context {
	if c.Ctx == nil {
		return context.Background()
	}
	return c.Ctx
}

// NewComparer returns a Comparer with no run-alone IPCs yet.
func NewComparer() *Comparer { return &Comparer{alone: map[string]float64{}} }

// Compare runs bm under every named scheduler (Shared allowed) and returns their outcomes
// in order.
func Compare(bm *Benchmark, names []string) ([]SchedulerOutcome, error) {
	c := NewComparer()
	var out []SchedulerOutcome
	for _, n := range names {
		o, err := c.Scheduler(bm, n)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// aloneIPC runs job j by itself (arriving at 0, same length) under Shared and returns its
// IPC.
func (c *Comparer) aloneIPC(bm *Benchmark, j JobSpec) (float64, error) {
	length := j.Length
	if length == 0 && j.StopAt > 0 {
		length = j.StopAt - j.Arrival
	}
	key := fmt.Sprintf("%s|%s|%d|%v|%v", j.Workload, j.Image, j.Cores, j.CPUs, length)
	if v, ok := c.alone[key]; ok {
		return v, nil
	}
	b := *bm
	solo := j
	solo.Arrival, solo.StopAt = 0, 0
	solo.Length = length
	if length == 0 {
		solo.Length = bm.MaxT
	}
	b.Jobs = []JobSpec{solo}
	b.MaxT = solo.Length + time.Second
	rec := newIPCRecorder()
	if _, err := runScheduler(c.ctx(), &b, Shared, rec, c.Hooks.labelled("alone "+j.Name)); err != nil {
		return 0, err
	}
	v := metric.IPC(rec.instr[solo.ID], rec.cycles[solo.ID])
	c.alone[key] = v
	return v, nil
}

// Scheduler runs bm under the named scheduler and every job that ran alone, and returns
// the slowdown metrics (metric.STP, metric.ANTT, metric.Unfairness, worst slowdown) over
// the jobs that ran, the reconfigurations and the ways consolidation moved.
func (c *Comparer) Scheduler(bm *Benchmark, name string) (SchedulerOutcome, error) {
	rec := newIPCRecorder()
	var (
		into   Recorder = rec
		finish          = func(*Result, SchedulerOutcome) error { return nil }
	)
	if c.Record != nil {
		out, f, err := c.Record(name)
		if err != nil {
			return SchedulerOutcome{}, err
		}
		into, finish = tee{rec, out}, f
	}
	res, err := runScheduler(c.ctx(), bm, name, into, c.Hooks)
	if err != nil {
		return SchedulerOutcome{}, err
	}

	row := SchedulerOutcome{Name: name, Reconfigurations: rec.reconfig, MovedWays: res.ConsolidatedWays,
		VirtualSeconds: res.Virtual.Seconds()}
	if row.VirtualSeconds > 0 {
		row.ReconfigPerMin = float64(rec.reconfig) / row.VirtualSeconds * 60
	}
	var slow []float64
	specs := map[int]JobSpec{}
	for _, j := range bm.Jobs {
		specs[j.ID] = j
	}
	ids := slices.Sorted(maps.Keys(rec.instr))
	for _, id := range ids {
		ipc := metric.IPC(rec.instr[id], rec.cycles[id])
		if math.IsNaN(ipc) || ipc <= 0 {
			continue
		}
		a, err := c.aloneIPC(bm, specs[id])
		if err != nil {
			return SchedulerOutcome{}, err
		}
		s := metric.Slowdown(a, ipc)
		slow = append(slow, s)
		row.Jobs = append(row.Jobs, JobSlowdown{Name: specs[id].Name, IPC: ipc, IPCAlone: a, Slowdown: s})
	}
	if len(slow) == 0 {
		return row, fmt.Errorf("%s: no job ran under %s: check that the jobs arrive before max_t and that the platform records counters (data.perf)", bm.File, name)
	}
	row.GuardOutcome = guardOutcome(bm, res, rec, row.Jobs, specs)
	row.STP = metric.STP(slow)
	row.ANTT = metric.ANTT(slow)
	row.Unfairness = metric.Unfairness(slow)
	for _, s := range slow {
		row.WorstSlowdown = math.Max(row.WorstSlowdown, s)
	}
	return row, finish(res, row)
}

// guardOutcome computes GuardOutcome (nil when no job has an SLO or is an antagonist).
func guardOutcome(bm *Benchmark, res *Result, rec *ipcRecorder, jobs []JobSlowdown, specs map[int]JobSpec) *GuardOutcome {
	any := false
	for _, j := range bm.Jobs {
		any = any || j.SLOms > 0 || j.Antagonist
	}
	if !any {
		return nil
	}
	g := &GuardOutcome{}
	var first time.Duration = -1
	for _, j := range res.Jobs {
		for _, v := range j.Violations {
			g.SLOViolationSeconds += v.Interval.Seconds()
			if first < 0 || v.At < first {
				first = v.At
			}
		}
	}
	for _, j := range res.Jobs {
		for _, v := range j.Violations {
			if v.At-v.Interval >= first+GuardWindow {
				g.SLOViolationSecondsAfterWindow += v.Interval.Seconds()
			}
		}
	}
	secs := res.Virtual.Seconds()
	hz := bm.Machine.ClockGHz * 1e9
	alone := map[string]float64{}
	for _, j := range jobs {
		alone[j.Name] = j.IPCAlone
	}
	cyc := 0.0
	for _, id := range slices.Sorted(maps.Keys(rec.cycles)) {
		cyc += rec.cycles[id]
		sp := specs[id]
		if a := alone[sp.Name]; !sp.Priority && a > 0 && secs > 0 {
			g.BEThroughput += rec.instr[id] / (a * hz) / secs
		}
	}
	if secs > 0 {
		g.Utilization = cyc / (hz * float64(bm.Machine.Cores()) * secs)
	}
	hit := 0
	for id, n := range rec.throttles {
		g.Throttles += n
		if specs[id].Antagonist {
			hit += n
		}
	}
	if g.Throttles > 0 {
		p := float64(hit) / float64(g.Throttles)
		g.AntagonistPrecision = &p
	}
	return g
}
