package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"colo/machine"
	"colo/platform"
	"colo/policy/ctlsched"
	"colo/resctrl"
	"colo/sched"
)

// Report is the result of `colo run`: the trace, and one summary per scheduler. Its JSON
// form is the stable --json output (docs/bench.md).
type Report struct {
	Benchmark  string    `json:"benchmark"`
	File       string    `json:"file"`
	Machine    string    `json:"machine"`
	Platform   string    `json:"platform"`
	TraceSeed  uint64    `json:"trace_seed"`
	Jobs       int       `json:"jobs"`
	MaxT       float64   `json:"max_t"`
	RunDir     string    `json:"run_dir,omitempty"`
	Schedulers []Summary `json:"schedulers"`
	Comparison []Change  `json:"comparison,omitempty"`
	// Influx is the InfluxDB sink's outcome when the benchmark has a data.db block.
	Influx  *SinkStats `json:"influx,omitempty"`
	Results []*Result  `json:"-"`
}

// SinkStats is what the InfluxDB sink (data.db) delivered during a run: lines queued,
// acknowledged by the database, and not delivered (kept in Spool).
type SinkStats struct {
	Target      string `json:"target"` // host/database
	Queued      int64  `json:"queued"`
	Delivered   int64  `json:"delivered"`
	Undelivered int64  `json:"undelivered"`
	Spool       string `json:"spool,omitempty"`
	LastError   string `json:"last_error,omitempty"`
}

// Change compares one scheduler against the first (the baseline), in percent
// (RelativeChange of each IPCE).
type Change struct {
	Name         string  `json:"name"`
	Baseline     string  `json:"baseline"`
	PriorityIPCE float64 `json:"priority_ipce_change"`
	BatchIPCE    float64 `json:"batch_ipce_change"`
	GlobalIPCE   float64 `json:"global_ipce_change"`
	// The same differences in percentage points of IPCE (x − base): the thesis's
	// headline numbers read naturally this way too (seed000.md §4.4 leaves it open).
	PriorityIPCEPP float64 `json:"priority_ipce_delta_pp"`
	BatchIPCEPP    float64 `json:"batch_ipce_delta_pp"`
	GlobalIPCEPP   float64 `json:"global_ipce_delta_pp"`
}

// MarshalJSON writes NaN as null.
// The relative changes are fractions in JSON (0.5 = +50 %; the fields hold percent).
func (c Change) MarshalJSON() ([]byte, error) {
	c.PriorityIPCE, c.BatchIPCE, c.GlobalIPCE = c.PriorityIPCE/100, c.BatchIPCE/100, c.GlobalIPCE/100
	return marshalNullNaN(c)
}

// withoutResctrl explains a scheduler's refusal on a real host whose detected profile has
// no CAT (one class of service: resctrl is not mounted), where the scheduler's own words
// ("max_clos = 1: need the default class…") would not say what to do; nil otherwise.
func withoutResctrl(name, platform string, m *machine.Profile, root string, err error) error {
	if platform == "sim" || m == nil || m.CAT.NumCLOSIDs > 1 {
		return nil
	}
	root = resctrl.ResolveRoot(root)
	return fmt.Errorf("scheduler %s partitions the LLC, but resctrl is not mounted at %s: mount it (mount -t resctrl resctrl %s), "+
		"or use the emulator (colo resctrl emulate --mount DIR, then --resctrl-root DIR), or --platform sim (the scheduler said: %v)",
		name, root, root, err)
}

// TableLegend follows the summary table of `colo run`: what each metric is, its unit and
// which direction is better (a newcomer's first output explains itself).
const TableLegend = `IPCE: IPC efficiency, the share of cycles not stalled (1 − stalled/cycles; %, higher is better), per job over its life, mean over the priority, batch or all jobs.
time over target: share of the priority jobs' time with IPCE at or above their target (their SLO met; %, higher is better); p90 over the jobs.
killed at max_t: still running when the run ended (their length outlasts max_t); queued at max_t: never admitted; ` + "`colo report DIR`" + ` lists every job and why.
`

// RunOptions configure RunAll.
type RunOptions struct {
	Warn func(string)
	// Recorder returns the recorder for one scheduler's run (nil: discard).
	Recorder func(scheduler string) (Recorder, func(Summary) error, error)
	// Wall measures wall time (injected so that the package never reads the clock).
	Wall func() time.Time
	// Hooks watch every scheduler's run (progress, interval metrics).
	Hooks Hooks
	// Ctx cancels the runs (Options.Ctx); nil: never cancelled.
	Ctx context.Context
	// Parallel runs the schedulers side by side when the platform allows it
	// (platform.Private); the results are the same as one after the other.
	Parallel bool
}

// schedRun is one scheduler's run of RunAll.
type schedRun struct {
	name   string
	pf     Platform
	s      sched.Scheduler
	env    sched.Env
	rec    Recorder
	finish func(Summary) error
	res    *Result
	err    error
	wall   time.Duration
	warns  []string
}

// prepareRun makes a scheduler's platform, scheduler and recorder.
func prepareRun(bm *Benchmark, name string, opt RunOptions) (*schedRun, error) {
	// the platform first: on linux it detects the host, whose geometry the scheduler
	// and the report must use (not the YAML's machine:)
	pf, err := NewPlatform(bm)
	if err != nil {
		return nil, err
	}
	cfg := bm.Sched
	cfg.Implementation = name
	env := sched.Env{Machine: pf.Machine(), Config: cfg}
	env.IPCEUnavailable = platform.IPCEUnavailable(pf)
	env.CPUQuotaUnavailable = platform.CPUQuotaUnavailable(pf)
	s, err := sched.New(name, env)
	if err != nil {
		m := pf.Machine()
		pf.Close()
		if e := withoutResctrl(name, bm.Platform, m, bm.ResctrlRoot, err); e != nil {
			return nil, e
		}
		// options the scheduler rejects are bad input in the benchmark file
		return nil, &Error{File: bm.File, Line: ctlsched.LineOf(err), Msg: fmt.Sprintf("scheduler %s: %v", name, err)}
	}
	r := &schedRun{name: name, pf: pf, s: s, env: env, rec: Discard{}, finish: func(Summary) error { return nil }}
	if opt.Recorder != nil {
		if r.rec, r.finish, err = opt.Recorder(name); err != nil {
			pf.Close()
			return nil, err
		}
	}
	return r, nil
}

// run replays the trace and closes the platform.
func (r *schedRun) run(bm *Benchmark, opt RunOptions, ctx context.Context, warn func(string), hooks Hooks) {
	var t0 time.Time
	if opt.Wall != nil {
		t0 = opt.Wall()
	}
	r.res, r.err = Run(bm, r.pf, r.s, Options{Warn: warn, Recorder: r.rec, Hooks: hooks, Ctx: ctx})
	if opt.Wall != nil {
		r.wall = opt.Wall().Sub(t0)
	}
	if cerr := r.pf.Close(); r.err == nil && cerr != nil {
		r.err = fmt.Errorf("platform close: %w", cerr)
	} else if cerr != nil {
		r.err = errors.Join(r.err, fmt.Errorf("platform close: %w", cerr))
	}
}

// add takes a finished run into the report: stop is true when RunAll must return
// (rep, err) now.
func (rep *Report) add(r *schedRun, name string, opt RunOptions) (stop bool, err error) {
	if errors.Is(r.err, ErrInterrupted) {
		// what ran so far, without a summary: the run is not complete
		rep.Results = append(rep.Results, r.res)
		return true, r.err
	}
	if r.err != nil {
		var be *Error
		if errors.As(r.err, &be) {
			return true, r.err // bad input: FILE:LINE already says it all
		}
		return true, fmt.Errorf("scheduler %s: %w", name, r.err)
	}
	sum := Summarize(r.res, r.wall)
	if r.env.IPCEUnavailable != "" {
		sum.Notes = append(sum.Notes, "IPC/IPCE unavailable on this platform ("+r.env.IPCEUnavailable+"): IPCE results are empty, and schedulers that probe allocations (dynamic) do not")
	}
	if err := r.finish(sum); err != nil {
		return true, err
	}
	rep.Schedulers = append(rep.Schedulers, sum)
	rep.Results = append(rep.Results, r.res)
	return false, nil
}

// closeRuns closes the platforms of prepared runs that will not run.
func closeRuns(runs []*schedRun) {
	for _, r := range runs {
		if r != nil {
			r.pf.Close()
		}
	}
}

// progressOrder shows side-by-side runs' progress one run after the other, as if they ran
// in sequence: run k's steps pass once runs 0..k−1 have ended; a run that ended while
// waiting has its last step shown then.
type progressOrder struct {
	mu   sync.Mutex
	f    func(Step)
	cur  int
	last []*Step
}

func (p *progressOrder) step(k int, s Step) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if k != p.cur {
		p.last[k] = &s
		return
	}
	p.f(s)
	for s.Final {
		p.cur++
		if p.cur >= len(p.last) || p.last[p.cur] == nil {
			return
		}
		s = *p.last[p.cur]
		p.f(s)
	}
}

// RunAll runs the benchmark's trace once per scheduler, each on a fresh platform, and
// returns the report. names empty means the benchmark's own scheduler.
func RunAll(bm *Benchmark, names []string, opt RunOptions) (*Report, error) {
	if len(names) == 0 {
		names = []string{bm.Sched.Implementation}
	}
	rep := &Report{Benchmark: bm.Name, File: bm.File, Machine: bm.Machine.Name, Platform: bm.Platform,
		TraceSeed: bm.TraceSeed, Jobs: len(bm.Jobs), MaxT: bm.MaxT.Seconds()}
	ctx := opt.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	// Every scheduler gets its platform and recorder in the order given (the run
	// directory numbers the runs in that order). On a platform whose instances share
	// nothing (platform.Private: the simulated testbed) the runs go side by side, one
	// goroutine each; their results, summaries and warnings are then taken in the same
	// order, so the report, the run directory's rows and stderr are those of running
	// them one after the other (TestRunAllSideBySide). Interval lines (Hooks.OnInterval)
	// would interleave, so a run that prints them stays sequential.
	runs := make([]*schedRun, len(names))
	side := opt.Parallel && opt.Hooks.OnInterval == nil && len(names) > 1
	var progress *progressOrder
	if side && opt.Hooks.Progress != nil {
		progress = &progressOrder{f: opt.Hooks.Progress, last: make([]*Step, len(names))}
	}
	for k, name := range names {
		if ctx.Err() != nil {
			closeRuns(runs)
			return rep, interrupted(ctx)
		}
		r, err := prepareRun(bm, name, opt)
		if err != nil {
			closeRuns(runs)
			return nil, err
		}
		rep.Machine = r.pf.Machine().Name
		runs[k] = r
		if _, ok := r.pf.(platform.Private); !ok && k == 0 {
			side = false
		}
		if !side {
			// sequential: run it now, report it now
			r.run(bm, opt, ctx, opt.Warn, opt.Hooks)
			if stop, err := rep.add(r, name, opt); stop {
				return rep, err
			}
			runs[k] = nil
		}
	}
	if side {
		var wg sync.WaitGroup
		for k, r := range runs {
			if r == nil {
				continue
			}
			hooks := opt.Hooks
			if progress != nil {
				hooks.Progress = func(s Step) { progress.step(k, s) }
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.run(bm, opt, ctx, func(w string) { r.warns = append(r.warns, w) }, hooks)
			}()
		}
		wg.Wait()
		for k, r := range runs {
			if r == nil {
				continue
			}
			if opt.Warn != nil {
				for _, w := range r.warns {
					opt.Warn(w)
				}
			}
			if stop, err := rep.add(r, names[k], opt); stop {
				return rep, err
			}
		}
	}
	base := rep.Schedulers[0]
	for _, s := range rep.Schedulers[1:] {
		rep.Comparison = append(rep.Comparison, Change{Name: s.Name, Baseline: base.Name,
			PriorityIPCE:   RelativeChange(base.PriorityIPCE, s.PriorityIPCE),
			BatchIPCE:      RelativeChange(base.BatchIPCE, s.BatchIPCE),
			GlobalIPCE:     RelativeChange(base.GlobalIPCE, s.GlobalIPCE),
			PriorityIPCEPP: s.PriorityIPCE - base.PriorityIPCE, BatchIPCEPP: s.BatchIPCE - base.BatchIPCE,
			GlobalIPCEPP: s.GlobalIPCE - base.GlobalIPCE})
	}
	return rep, nil
}

// WriteTable prints the report side by side, one column per scheduler.
func (r *Report) WriteTable(w io.Writer) error {
	clock := "virtual time"
	if r.Platform != "sim" && r.Platform != "" {
		clock = "wall time" // a real host's run takes as long as its trace
	}
	fmt.Fprintf(w, "%s — %d jobs on %s (%s), %s of %s", r.Benchmark, r.Jobs, r.Machine, r.Platform, time.Duration(r.MaxT*float64(time.Second)), clock)
	if r.TraceSeed != 0 {
		fmt.Fprintf(w, ", trace seed %d", r.TraceSeed)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	head := []string{""}
	for _, s := range r.Schedulers {
		head = append(head, s.Name)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	row := func(label string, f func(Summary) string) {
		cells := []string{label}
		for _, s := range r.Schedulers {
			cells = append(cells, f(s))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	pct := func(x float64) string {
		if math.IsNaN(x) {
			return "-"
		}
		return fmt.Sprintf("%.2f %%", x)
	}
	frac := func(x float64) string {
		if math.IsNaN(x) {
			return "-"
		}
		return fmt.Sprintf("%.1f %%", 100*x)
	}
	row("priority IPCE", func(s Summary) string { return pct(s.PriorityIPCE) })
	row("batch IPCE", func(s Summary) string { return pct(s.BatchIPCE) })
	row("global IPCE", func(s Summary) string { return pct(s.GlobalIPCE) })
	row("time over target", func(s Summary) string { return frac(s.TimeOverTarget) })
	row("time over target p90", func(s Summary) string { return frac(s.TimeOverTargetP90) })
	row("jobs completed", func(s Summary) string { return fmt.Sprint(s.JobsCompleted) })
	row("jobs rejected", func(s Summary) string { return fmt.Sprint(s.JobsRejected) })
	row("jobs killed at max_t", func(s Summary) string { return fmt.Sprint(s.JobsKilledAtEnd) })
	row("jobs queued at max_t", func(s Summary) string { return fmt.Sprint(s.JobsQueuedAtEnd) })
	row("jobs arriving after max_t", func(s Summary) string { return fmt.Sprint(s.JobsNotStarted) })
	secs := func(x float64) string {
		if math.IsNaN(x) {
			return "-"
		}
		return fmt.Sprintf("%.1f s", x)
	}
	row("queueing delay mean", func(s Summary) string { return secs(s.QueueDelayMean) })
	row("queueing delay p90", func(s Summary) string { return secs(s.QueueDelayP90) })
	row("probes (failed)", func(s Summary) string { return fmt.Sprintf("%d (%d)", s.Probes, s.ProbesFailed) })
	row("re-probes", func(s Summary) string { return fmt.Sprint(s.Reprobes) })
	row("migrations", func(s Summary) string { return fmt.Sprint(s.Migrations) })
	row("consolidations", func(s Summary) string { return fmt.Sprint(s.Consolidations) })
	row("wall time", func(s Summary) string { return fmt.Sprintf("%.2f s", s.WallSeconds) })
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprint(w, TableLegend)
	for _, s := range r.Schedulers {
		for _, n := range s.Notes {
			fmt.Fprintf(w, "%s: note: %s\n", s.Name, n)
		}
	}
	for _, c := range r.Comparison {
		fmt.Fprintf(w, "%s vs %s: priority IPCE %+.1f %% (%+.2f pp), batch IPCE %+.1f %% (%+.2f pp), global IPCE %+.1f %% (%+.2f pp)\n",
			c.Name, c.Baseline, c.PriorityIPCE, c.PriorityIPCEPP, c.BatchIPCE, c.BatchIPCEPP, c.GlobalIPCE, c.GlobalIPCEPP)
	}
	if r.RunDir != "" {
		fmt.Fprintf(w, "results: %s\n", r.RunDir)
	}
	if s := r.Influx; s != nil {
		fmt.Fprintf(w, "influxdb %s: %d points delivered, %d undelivered", s.Target, s.Delivered, s.Undelivered)
		if s.Undelivered > 0 {
			fmt.Fprintf(w, " (kept in %s)", s.Spool)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// StartFailures returns how many jobs could not be started, over every scheduler's run.
func (r *Report) StartFailures() int {
	n := 0
	for _, res := range r.Results {
		if res != nil {
			n += res.StartFailures
		}
	}
	return n
}

// CheckScheduler says whether a scheduler name is registered.
func CheckScheduler(name string) error {
	for _, n := range sched.Names() {
		if n == name {
			return nil
		}
	}
	return fmt.Errorf("scheduler %q is not known (known: %s)", name, strings.Join(sched.Names(), ", "))
}

// CheckOptions builds each named scheduler once on the benchmark's machine so that a bad
// scheduler.options key or value is reported (file:line, bad input) before anything is
// created. On linux the scheduler is built on the detected host, whose geometry can
// differ from the file's machine: its options are checked when the run starts.
func CheckOptions(bm *Benchmark, names []string) error {
	if bm.Platform != "sim" {
		return nil
	}
	if len(names) == 0 {
		names = []string{bm.Sched.Implementation}
	}
	for _, name := range names {
		cfg := bm.Sched
		cfg.Implementation = name
		if _, err := sched.New(name, sched.Env{Machine: bm.Machine, Config: cfg}); err != nil {
			return &Error{File: bm.File, Line: ctlsched.LineOf(err), Msg: fmt.Sprintf("scheduler %s: %v", name, err)}
		}
	}
	return nil
}
