package bench

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"colo/machine"
	"colo/platform"
	"colo/probe"
	"colo/sched"

	"gopkg.in/yaml.v3"
)

// DefaultMachine is the simulated testbed of the thesis.
const DefaultMachine = "icx-4314-2s"

// Benchmark is a validated benchmark: resolved configuration and its trace.
type Benchmark struct {
	File        string
	Name        string
	Description string
	MaxT        time.Duration // 0: until the trace is done
	LogLevel    string
	Platform    string
	Machine     *machine.Profile
	Seed        uint64
	Sched       sched.Config
	Data        DataConfig
	DB          *DB
	// Generated is set for a generated trace; TraceSeed is its arrival seed.
	Generated bool
	TraceSeed uint64
	Jobs      []JobSpec
	// ResctrlRoot is where the linux platform finds resctrl (colo run --resctrl-root;
	// empty: the platform's default). The sim platform ignores it.
	ResctrlRoot string
	// Noise is the sim platform's relative measurement noise (0: none; Reseed sets it).
	Noise float64
	// gen and pool regenerate a generated trace under another seed (Reseed).
	gen  GenParams
	pool []poolEntry
}

// DataConfig is a resolved collector configuration (platform.DataConfig).
type DataConfig = platform.DataConfig

// JobSpec is one job of the trace: the platform's Job.
type JobSpec = platform.Job

type checker struct {
	errs Errors
}

func (c *checker) at(file string, root *yaml.Node, msg string, path ...string) {
	c.errs = append(c.errs, &Error{File: file, Line: lineOf(root, path...), Msg: msg})
}

func secs(x float64) time.Duration { return time.Duration(math.Round(x * float64(time.Second))) }

// MaxSeconds bounds every time in a benchmark (max_t, start_t, stop_t, length, tick_t,
// arrival times): a duration is int64 nanoseconds, which holds about 9.22e9 s.
const MaxSeconds = 9e9

// MaxSteps bounds the periods of one run: max_t over the shorter of the scheduler's
// tick and the sampling period. A run of more cannot finish in a sitting (max_t 8e9 s at
// one sample a second) and its samples would not fit a run directory.
const MaxSteps = 1_000_000

// MaxJobs bounds the jobs of one trace (static containers, or generated: arrival.count,
// or max_t / arrival.mean when no count is given).
const MaxJobs = 100000

// seconds checks that x is a time colo can hold (finite, |x| ≤ MaxSeconds); the caller
// checks the sign.
func (c *checker) seconds(file string, root *yaml.Node, x float64, name string, path ...string) time.Duration {
	if math.IsNaN(x) || math.Abs(x) > MaxSeconds {
		c.at(file, root, fmt.Sprintf("%s %v s is out of range: times must be within %.3g s (int64 nanoseconds)", name, x, float64(MaxSeconds)), path...)
		return 0
	}
	return secs(x)
}

func validate(file string, root *yaml.Node, f *File) (*Benchmark, error) {
	c := &checker{}
	h := f.Benchmark
	bm := &Benchmark{File: file, Name: h.Name, Description: h.Description, LogLevel: h.LogLevel, Platform: h.Platform}
	if bm.Name == "" {
		bm.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	switch bm.Platform {
	case "":
		bm.Platform = "sim"
	case "sim", "linux":
	default:
		c.at(file, root, fmt.Sprintf("platform %q: use sim or linux", h.Platform), "benchmark", "platform")
	}
	mname := h.Machine
	if mname == "" {
		mname = DefaultMachine
	}
	m, err := machine.Get(mname)
	if err != nil {
		c.at(file, root, fmt.Sprintf("machine %q: %v (colo machine list shows the built-in profiles)", mname, err), "benchmark", "machine")
		return nil, c.errs
	}
	bm.Machine = m
	if h.MaxT != nil {
		if *h.MaxT <= 0 {
			c.at(file, root, fmt.Sprintf("max_t %v must be > 0 seconds", *h.MaxT), "benchmark", "max_t")
		}
		bm.MaxT = c.seconds(file, root, *h.MaxT, "max_t", "benchmark", "max_t")
	}
	if h.Seed != nil {
		bm.Seed = *h.Seed
	}
	switch h.LogLevel {
	case "", "debug", "info", "warn", "error":
	default:
		c.at(file, root, fmt.Sprintf("log_level %q: use debug, info, warn or error", h.LogLevel), "benchmark", "log_level")
	}
	bm.Sched = schedConfig(c, file, root, m, h.Scheduler)
	bm.Data = dataConfig(c, file, root, DataConfig{Frequency: time.Second, Perf: true, Docker: true, RDT: true}, &h.Data, "benchmark", "data")
	bm.DB = h.Data.DB
	if period := bm.Data.Frequency; bm.MaxT > 0 && period > 0 {
		if bm.Sched.Tick > 0 && bm.Sched.Tick < period {
			period = bm.Sched.Tick
		}
		if n := bm.MaxT / period; n > MaxSteps {
			c.at(file, root, fmt.Sprintf("max_t %v is %d periods of %v: at most %d (shorten max_t or lengthen tick_t/frequency)", bm.MaxT, n, period, MaxSteps), "benchmark", "max_t")
		}
	}

	switch {
	case f.Containers != nil && (f.Arrival != nil || f.Workloads != nil):
		c.at(file, root, "give either containers (a static trace) or arrival + workloads (a generated trace), not both", "arrival")
	case f.Containers != nil:
		bm.Jobs = staticTrace(c, file, root, bm, f.Containers)
	case f.Arrival != nil || f.Workloads != nil:
		bm.Generated = true
		bm.Jobs = generatedTrace(c, file, root, bm, f)
	default:
		c.at(file, root, "no trace: add containers (static) or arrival + workloads (generated)")
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return bm, nil
}

func schedConfig(c *checker, file string, root *yaml.Node, m *machine.Profile, s Scheduler) sched.Config {
	cfg := sched.DefaultConfig()
	cfg.RDT = true
	at := func(msg string, key ...string) {
		c.at(file, root, msg, append([]string{"benchmark", "scheduler"}, key...)...)
	}
	if s.Implementation != "" {
		cfg.Implementation = s.Implementation
	}
	known := false
	for _, n := range sched.Names() {
		known = known || n == cfg.Implementation
	}
	if !known {
		at(fmt.Sprintf("scheduler %q is not known (known: %s)", cfg.Implementation, strings.Join(sched.Names(), ", ")), "implementation")
	}
	if s.RDT != nil {
		cfg.RDT = *s.RDT
	}
	if s.TickT != nil {
		if *s.TickT <= 0 {
			at("tick_t must be > 0 seconds", "tick_t")
		}
		cfg.Tick = c.seconds(file, root, *s.TickT, "tick_t", "benchmark", "scheduler", "tick_t")
	}
	if s.ReserveWays != nil {
		if *s.ReserveWays < 0 || *s.ReserveWays >= m.LLC.Ways {
			at(fmt.Sprintf("reserve_ways %d must be in 0..%d", *s.ReserveWays, m.LLC.Ways-1), "reserve_ways")
		}
		cfg.ReserveWays = *s.ReserveWays
	}
	if s.ReserveMem != nil {
		if *s.ReserveMem < 0 || *s.ReserveMem >= 100 {
			at(fmt.Sprintf("reserve_mem %d must be in 0..99 %%", *s.ReserveMem), "reserve_mem")
		}
		cfg.ReserveMBA = *s.ReserveMem
	}
	if s.Rebalance != nil {
		cfg.Rebalance = *s.Rebalance
	}
	if s.RebalanceCooldownT != nil {
		cfg.RebalanceCooldown = c.seconds(file, root, *s.RebalanceCooldownT, "rebalance_cooldown_t", "benchmark", "scheduler")
	}
	if s.RebalanceThreshold != nil {
		cfg.RebalanceThreshold = *s.RebalanceThreshold
	}
	if s.RebalanceMinGain != nil {
		cfg.RebalanceMinGain = *s.RebalanceMinGain
	}
	if s.Defragment != nil {
		cfg.Defragment = *s.Defragment
	}
	if s.Reprobe != nil {
		cfg.Reprobe = *s.Reprobe
	}
	if s.ForceMove != nil {
		cfg.ForceMove = *s.ForceMove
	}
	cfg.Options = s.Options
	cfg.OptionsNode = nodeAt(root, "benchmark", "scheduler", "options")
	p := s.Prober
	pc := probe.DefaultConfig()
	setI := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	setD := func(dst *time.Duration, v *float64, unit time.Duration) {
		if v != nil {
			if math.IsNaN(*v) || *v < 0 || *v*float64(unit) > MaxSeconds*float64(time.Second) {
				at(fmt.Sprintf("prober time %v is out of range (0 to %.3g s)", *v, float64(MaxSeconds)), "prober")
				return
			}
			*dst = time.Duration(math.Round(*v * float64(unit)))
		}
	}
	setI(&pc.MinL3, p.MinL3)
	setI(&pc.MaxL3, p.MaxL3)
	setI(&pc.StepL3, p.StepL3)
	setI(&pc.MinMem, p.MinMem)
	setI(&pc.MaxMem, p.MaxMem)
	setI(&pc.StepMem, p.MemStep)
	setI(&pc.DropOutliers, p.DropOutliers)
	setI(&pc.BufferWays, p.BufferWays)
	setI(&pc.BufferMem, p.BufferMemory)
	setD(&pc.ProbingT, p.ProbingT, time.Second)
	setD(&pc.WarmupT, p.WarmupT, time.Second)
	setD(&pc.CooldownT, p.CooldownT, time.Second)
	setD(&pc.Frequency, p.ProbingFrequency, time.Millisecond)
	if p.BreakCondition != nil {
		pc.BreakCondition = *p.BreakCondition
	}
	switch p.Order {
	case "", "asc":
	case "desc":
		pc.Descending = true
	default:
		at(fmt.Sprintf("order %q: use asc or desc", p.Order), "prober", "order")
	}
	if p.ReverseProbeOrder != nil && *p.ReverseProbeOrder {
		pc.Descending = true
	}
	if p.GreedyAllocation != nil {
		pc.Greedy = *p.GreedyAllocation
	}
	if p.Allocate != nil {
		pc.Allocate = *p.Allocate
	}
	switch p.Implementation {
	case "", "default":
	default:
		at(fmt.Sprintf("prober implementation %q: only default exists", p.Implementation), "prober", "implementation")
	}
	mbaMin := 10
	if m.MBA != nil {
		mbaMin = m.MBA.Min
	}
	if err := pc.Validate(m.LLC.Ways-cfg.ReserveWays, mbaMin); err != nil {
		at(err.Error(), "prober")
	}
	cfg.Probe = pc
	return cfg
}

func dataConfig(c *checker, file string, root *yaml.Node, base DataConfig, d *Data, path ...string) DataConfig {
	out := base
	if d == nil {
		return out
	}
	if d.Frequency != nil {
		if !(*d.Frequency >= 1 && *d.Frequency <= MaxSeconds*1000) {
			c.at(file, root, fmt.Sprintf("frequency %v ms must be ≥ 1 (and at most %.3g s)", *d.Frequency, float64(MaxSeconds)), append(path, "frequency")...)
		} else {
			out.Frequency = time.Duration(math.Round(*d.Frequency * float64(time.Millisecond)))
		}
	}
	if d.Perf != nil {
		out.Perf = d.Perf.All || len(d.Perf.Fields) > 0
	}
	if d.Docker != nil {
		out.Docker = d.Docker.All || len(d.Docker.Fields) > 0
	}
	if d.RDT != nil {
		out.RDT = *d.RDT
	}
	return out
}

func checkIPCE(c *checker, file string, root *yaml.Node, v *float64, path ...string) float64 {
	if v == nil {
		return 0
	}
	if !(*v > 0 && *v <= 100) {
		c.at(file, root, fmt.Sprintf("ipce target %v must be in (0, 100] percent", *v), append(path, "ipce")...)
		return 0
	}
	return *v / 100
}

func staticTrace(c *checker, file string, root *yaml.Node, bm *Benchmark, cs map[string]*Container) []JobSpec {
	names := make([]string, 0, len(cs))
	for n := range cs {
		names = append(names, n)
	}
	// IDs follow the order of the file
	sort.Slice(names, func(i, j int) bool {
		return lineOf(root, "containers", names[i]) < lineOf(root, "containers", names[j])
	})
	m := bm.Machine
	if len(names) > MaxJobs {
		c.at(file, root, fmt.Sprintf("%d containers: at most %d jobs per trace", len(names), MaxJobs), "containers")
		return nil
	}
	var jobs []JobSpec
	for _, n := range names {
		ct := cs[n]
		p := []string{"containers", n}
		if ct == nil {
			c.at(file, root, fmt.Sprintf("container %q is empty", n), p...)
			continue
		}
		err := func(msg string, key ...string) {
			c.at(file, root, fmt.Sprintf("container %s: %s", n, msg), append(p, key...)...)
		}
		j := JobSpec{ID: len(jobs), Name: n, Image: ct.Image, Command: ct.Command, Workload: ct.Workload,
			Env: ct.Environment, Priority: ct.Priority, Source: fmt.Sprintf("%s:%d", file, lineOf(root, p...))}
		if ct.StartT != nil {
			if *ct.StartT < 0 {
				err("start_t must be ≥ 0", "start_t")
			}
			j.Arrival = c.seconds(file, root, *ct.StartT, "container "+n+": start_t", append(p, "start_t")...)
		}
		if ct.StopT != nil && ct.Length != nil {
			err("give stop_t or length, not both", "length")
		}
		if ct.StopT != nil {
			j.StopAt = c.seconds(file, root, *ct.StopT, "container "+n+": stop_t", append(p, "stop_t")...)
			if j.StopAt <= j.Arrival {
				err(fmt.Sprintf("stop_t %v must be after start_t", *ct.StopT), "stop_t")
			}
		}
		if ct.Length != nil {
			if *ct.Length <= 0 {
				err("length must be > 0 seconds", "length")
			}
			j.Length = c.seconds(file, root, *ct.Length, "container "+n+": length", append(p, "length")...)
		}
		if ct.StopT == nil && ct.Length == nil && bm.MaxT == 0 {
			err("has no stop_t or length and the benchmark has no max_t: it would run forever", "")
		}
		if ct.Image == "" && ct.Command == "" && ct.Workload == "" && len(ct.Phases) == 0 {
			err("needs an image/command (linux) or a workload model (sim)")
		}
		switch {
		case ct.Core != nil:
			j.CPUs = ct.Core.CPUs
			j.Cores = len(j.CPUs)
			for _, cpu := range j.CPUs {
				if cpu >= m.Cores() {
					err(fmt.Sprintf("core %d does not exist: %s has cores 0..%d", cpu, m.Name, m.Cores()-1), "core")
					break
				}
			}
			if ct.NumCores != nil && (len(ct.NumCores.Choices) != 1 || ct.NumCores.Choices[0] != j.Cores) {
				err(fmt.Sprintf("num_cores %v disagrees with the %d pinned cores", ct.NumCores.Choices, j.Cores), "num_cores")
			}
		case ct.NumCores != nil:
			if len(ct.NumCores.Choices) != 1 {
				err("num_cores of a static container must be one count (ranges and sets are for job pools)", "num_cores")
			}
			j.Cores = ct.NumCores.Choices[0]
		default:
			j.Cores = 1
		}
		if j.Cores < 1 || j.Cores > m.Cores() {
			err(fmt.Sprintf("requests %d cores; %s has %d", j.Cores, m.Name, m.Cores()), "num_cores")
		}
		j.IPCETarget = checkIPCE(c, file, root, ct.IPCE, p...)
		j.Data = dataConfig(c, file, root, bm.Data, ct.Data, append(p, "data")...)
		serverKeys(ct, &j, err)
		jobs = append(jobs, j)
	}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].Arrival < jobs[b].Arrival })
	for i := range jobs {
		jobs[i].ID = i
	}
	return jobs
}

func poolPath(w *Workloads, i int) (string, *yaml.Node, []string) {
	s := w.srcs[i]
	return s.file, s.root, append(append([]string(nil), s.base...), strconv.Itoa(s.idx))
}

func generatedTrace(c *checker, file string, root *yaml.Node, bm *Benchmark, f *File) []JobSpec {
	a, w := f.Arrival, f.Workloads
	if a == nil {
		c.at(file, root, "workloads without arrival: add an arrival block (seed, mean, sigma, length)", "workloads")
		return nil
	}
	if w == nil || len(w.Jobs) == 0 {
		c.at(file, root, "arrival without a job pool: add workloads.jobs or workloads.input", "arrival")
		return nil
	}
	at := func(msg string, key ...string) { c.at(file, root, msg, append([]string{"arrival"}, key...)...) }
	if a.Seed == nil {
		at("arrival.seed is required: a generated trace is replayed from its seed", "seed")
	} else {
		bm.TraceSeed = *a.Seed
	}
	if a.Mean <= 0 || a.Sigma < 0 {
		at(fmt.Sprintf("inter-arrival mean %v must be > 0 and sigma %v ≥ 0", a.Mean, a.Sigma), "mean")
	}
	if a.Length.Mean <= 0 || a.Length.Sigma < 0 || a.Length.Min < 0 {
		at("length needs mean > 0, sigma ≥ 0, min ≥ 0 (seconds)", "length")
	}
	if bm.MaxT == 0 && a.Count == nil {
		at("a generated trace needs benchmark.max_t or arrival.count, or it never ends", "")
	}
	if a.Count != nil && (*a.Count < 1 || *a.Count > MaxJobs) {
		at(fmt.Sprintf("count %d must be in 1..%d", *a.Count, MaxJobs), "count")
	}
	if a.Mean > MaxSeconds || a.Sigma > MaxSeconds || a.Length.Mean > MaxSeconds || a.Length.Sigma > MaxSeconds || a.Length.Min > MaxSeconds ||
		math.IsNaN(a.Mean+a.Sigma+a.Length.Mean+a.Length.Sigma+a.Length.Min) {
		at(fmt.Sprintf("arrival times must be within %.3g s", float64(MaxSeconds)), "mean")
	}
	if a.Count == nil && a.Mean > 0 && bm.MaxT > 0 {
		// inter-arrival gaps are max(0, N(mean, sigma)), whose expectation is ≥ mean
		if n := bm.MaxT.Seconds() / a.Mean; n > MaxJobs {
			at(fmt.Sprintf("mean %v s with max_t %v s would generate about %.3g jobs (limit %d): raise mean or set arrival.count",
				a.Mean, bm.MaxT.Seconds(), n, MaxJobs), "mean")
		}
	}
	prio := 0.0
	if a.Priority != nil {
		prio = *a.Priority
		if prio < 0 || prio > 100 {
			at(fmt.Sprintf("priority %v must be a percentage in 0..100", prio), "priority")
		}
	}
	fdata := dataConfig(c, file, root, bm.Data, f.Data, "data")
	var pool []poolEntry
	nPrio, kinds, sens := 0, map[string]bool{}, map[string]bool{}
	for i, pj := range w.Jobs {
		pf, pr, pp := poolPath(w, i)
		if pj == nil {
			c.at(pf, pr, "empty job-pool entry", pp...)
			continue
		}
		e := poolEntry{PoolJob: pj, source: fmt.Sprintf("%s:%d", pf, lineOf(pr, pp...))}
		if e.Name == "" {
			c.at(pf, pr, "job-pool entry needs a name", pp...)
		}
		if pj.Image == "" && pj.Command == "" && pj.Workload == "" {
			c.at(pf, pr, fmt.Sprintf("job %s needs an image/command (linux) or a workload model (sim)", pj.Name), pp...)
		}
		e.cores = []int{1}
		if pj.NumCores != nil {
			e.cores = pj.NumCores.Choices
		}
		for _, n := range e.cores {
			if n < 1 || n > bm.Machine.Cores() {
				c.at(pf, pr, fmt.Sprintf("job %s: num_cores %d impossible: %s has %d cores", pj.Name, n, bm.Machine.Name, bm.Machine.Cores()), append(pp, "num_cores")...)
				break // one error per entry, not one per choice
			}
		}
		e.target = checkIPCE(c, pf, pr, pj.IPCE, pp...)
		e.data = dataConfig(c, pf, pr, fdata, pj.Data, append(pp, "data")...)
		if pj.Priority {
			nPrio++
		} else {
			kinds[pj.Kind] = true
			sens[pj.Sensitivity] = true
		}
		pool = append(pool, e)
	}
	if prio > 0 && nPrio == 0 {
		at(fmt.Sprintf("priority %v%% but no job-pool entry has priority: true", prio), "priority")
	}
	if prio < 100 && nPrio == len(w.Jobs) {
		at("every job-pool entry is a priority job; set arrival.priority: 100 or add batch entries", "priority")
	}
	checkSplit := func(name string, m map[string]float64, have map[string]bool) {
		sum := 0.0
		for k, v := range m {
			if v < 0 {
				at(fmt.Sprintf("%s weight of %q is negative", name, k), name, k)
			}
			if !have[k] && v > 0 {
				at(fmt.Sprintf("%s names %q but no batch job in the pool has it", name, k), name, k)
			}
			sum += v
		}
		if len(m) > 0 && sum <= 0 {
			at(fmt.Sprintf("%s weights sum to 0", name), name)
		}
	}
	checkSplit("split", a.Split, kinds)
	checkSplit("sensitivities", a.Sensitivities, sens)
	if len(c.errs) > 0 {
		return nil
	}
	bm.gen = GenParams{Seed: bm.TraceSeed, Mean: a.Mean, Sigma: a.Sigma, LenMean: a.Length.Mean,
		LenSigma: a.Length.Sigma, LenMin: a.Length.Min, Split: a.Split, Sensitivities: a.Sensitivities,
		PriorityPct: prio, Count: derefInt(a.Count), MaxT: bm.MaxT}
	bm.pool = pool
	return Generate(bm.gen, pool)
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// serverKeys checks a container's server, bandwidth and phase keys into j.
func serverKeys(ct *Container, j *JobSpec, err func(string, ...string)) {
	pos := func(v *float64, key string) float64 {
		if v == nil {
			return 0
		}
		if !(*v > 0) || math.IsInf(*v, 0) {
			err(fmt.Sprintf("%s %v must be a number > 0", key, *v), key)
			return 0
		}
		return *v
	}
	j.SLOms, j.Rate, j.RequestMInstr = pos(ct.SLOms, "slo_ms"), pos(ct.Rate, "rate"), pos(ct.RequestMInstr, "request_minstr")
	if (j.SLOms > 0) != (j.Rate > 0) || (j.Rate > 0) != (j.RequestMInstr > 0) {
		err("a server needs slo_ms, rate and request_minstr together", "slo_ms")
	}
	j.MBAMBps = pos(ct.MBAMBps, "mba_mbps")
	j.Antagonist = ct.Antagonist
	if len(ct.Phases) > 0 {
		if ct.Workload != "" {
			err("give workload or phases, not both", "phases")
		}
		var parts []string
		for i, ph := range ct.Phases {
			if ph.Workload == "" || strings.ContainsAny(ph.Workload, "|@") || !(ph.For > 0 && ph.For <= MaxSeconds) {
				err(fmt.Sprintf("phase %d needs a workload model and 0 < for ≤ %.3g seconds", i, float64(MaxSeconds)), "phases")
				continue
			}
			parts = append(parts, fmt.Sprintf("%s@%g", ph.Workload, ph.For))
		}
		j.Workload = strings.Join(parts, "|")
	}
}
