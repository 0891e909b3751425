package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"colo/metric"
)

// DefaultRepeatNoise is the sim measurement noise (relative standard deviation of every
// counter) that repeats of a static trace use when the benchmark sets none: without it every
// seed would replay the same run. 1 % is the order of run-to-run variation of hardware
// counters; colo's choice, said in the output.
const DefaultRepeatNoise = 0.01

// Reseed returns a copy of bm for repeat i: a generated trace is drawn again from seed
// TraceSeed+i, and the platform's noise seed is Seed+i. noise < 0 keeps bm.Noise, except
// that a static trace without noise gets DefaultRepeatNoise (its seeds would all be equal).
func (bm *Benchmark) Reseed(i int, noise float64) *Benchmark {
	c := *bm
	c.Seed = bm.Seed + uint64(i)
	if bm.Generated {
		c.TraceSeed = bm.TraceSeed + uint64(i)
		g := bm.gen
		g.Seed = c.TraceSeed
		c.Jobs = Generate(g, bm.pool)
	}
	c.Noise = RepeatNoise(bm, noise)
	return &c
}

// RepeatNoise is the noise Reseed uses (see there).
func RepeatNoise(bm *Benchmark, noise float64) float64 {
	switch {
	case noise >= 0:
		return noise
	case bm.Noise == 0 && !bm.Generated:
		return DefaultRepeatNoise
	}
	return bm.Noise
}

// Replica is what one seed's run measured: per scheduler (in run order), metric → value.
type Replica struct {
	Schedulers []string
	Values     []map[string]float64
}

// RepeatReport summarises N seeded runs of one benchmark under several schedulers.
type RepeatReport struct {
	Benchmark  string        `json:"benchmark"`
	Repeat     int           `json:"repeat"`
	TraceSeeds []uint64      `json:"trace_seeds,omitempty"` // generated traces only
	NoiseSeeds []uint64      `json:"noise_seeds"`
	Noise      float64       `json:"noise"`
	Test       string        `json:"test"`
	Metrics    []string      `json:"metrics"`
	Schedulers []RepeatSched `json:"schedulers"`
	Diffs      []RepeatDiff  `json:"differences,omitempty"`
	Notes      []string      `json:"notes,omitempty"`
}

// RepeatSched is one scheduler's intervals, metric → Interval.
type RepeatSched struct {
	Name    string                     `json:"name"`
	Metrics map[string]metric.Interval `json:"metrics"`
}

// RepeatDiff is one scheduler against the baseline (the first), metric → paired test.
type RepeatDiff struct {
	Name     string                       `json:"name"`
	Baseline string                       `json:"baseline"`
	Metrics  map[string]metric.PairedTest `json:"metrics"`
}

// TestName says which test RepeatReport.Diffs hold.
const TestName = "paired two-sided t-test over seeds (same trace and noise seed on both sides), 95 % confidence (docs/repeat.md)"

// Repeat runs one(i, bm.Reseed(i, noise)) for i = 0..n−1 on up to parallel goroutines
// (≤ 0: the available cores), calls done after each, and summarises the replicas. The
// result depends only on the replicas, never on their completion order.
func Repeat(bm *Benchmark, n, parallel int, noise float64, metrics []string, one func(i int, b *Benchmark) (Replica, error), done func()) (*RepeatReport, error) {
	if n < 1 {
		return nil, fmt.Errorf("repeat %d: want at least 1", n)
	}
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	reps := make([]Replica, n)
	errs := make([]error, n)
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(parallel, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				reps[i], errs[i] = one(i, bm.Reseed(i, noise))
				if done != nil {
					done()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", i, err)
		}
	}
	r := &RepeatReport{Benchmark: bm.Name, Repeat: n, Noise: RepeatNoise(bm, noise), Test: TestName, Metrics: metrics}
	for i := 0; i < n; i++ {
		c := bm.Reseed(i, noise)
		if bm.Generated {
			r.TraceSeeds = append(r.TraceSeeds, c.TraceSeed)
		}
		r.NoiseSeeds = append(r.NoiseSeeds, c.Seed)
	}
	if !bm.Generated && r.Noise == 0 {
		r.Notes = append(r.Notes, "static trace without noise: every seed replays the same run (set --noise)")
	}
	names := reps[0].Schedulers
	series := func(s int, m string) []float64 {
		out := make([]float64, n)
		for i, rp := range reps {
			v, ok := rp.Values[s][m]
			if !ok {
				v = math.NaN()
			}
			out[i] = v
		}
		return out
	}
	for s, name := range names {
		rs := RepeatSched{Name: name, Metrics: map[string]metric.Interval{}}
		for _, m := range metrics {
			rs.Metrics[m] = metric.MeanCI(series(s, m))
		}
		r.Schedulers = append(r.Schedulers, rs)
	}
	for s := 1; s < len(names); s++ {
		d := RepeatDiff{Name: names[s], Baseline: names[0], Metrics: map[string]metric.PairedTest{}}
		for _, m := range metrics {
			d.Metrics[m] = metric.PairedTTest(series(0, m), series(s, m))
		}
		r.Diffs = append(r.Diffs, d)
	}
	return r, nil
}

// WriteTable prints the intervals, one block per scheduler, and the paired tests.
func (r *RepeatReport) WriteTable(w io.Writer) error {
	f := func(x float64) string {
		if math.IsNaN(x) {
			return "-"
		}
		if math.IsInf(x, 0) {
			return fmt.Sprintf("%v", x)
		}
		return fmt.Sprintf("%.4g", x)
	}
	fmt.Fprintf(w, "%s — %d seeds", r.Benchmark, r.Repeat)
	if len(r.TraceSeeds) > 0 {
		fmt.Fprintf(w, ", trace seeds %s", seedRange(r.TraceSeeds))
	}
	fmt.Fprintf(w, ", noise seeds %s, noise %.3g\n", seedRange(r.NoiseSeeds), r.Noise)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scheduler\tmetric\tmean\tsd\t95 % CI\tn\t")
	for _, s := range r.Schedulers {
		for _, m := range r.Metrics {
			iv := s.Metrics[m]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t[%s, %s]\t%d\t\n", s.Name, m, f(iv.Mean), f(iv.SD), f(iv.Lo), f(iv.Hi), iv.N)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Diffs) > 0 {
		fmt.Fprintf(w, "\n%s\n", r.Test)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "scheduler − baseline\tmetric\tmean diff\t95 % CI\tt\tp\tsignificant\t")
		for _, d := range r.Diffs {
			for _, m := range r.Metrics {
				pt := d.Metrics[m]
				sig := "no"
				if pt.Significant {
					sig = "yes"
				}
				if math.IsNaN(pt.P) {
					sig = "-"
				}
				fmt.Fprintf(tw, "%s − %s\t%s\t%s\t[%s, %s]\t%s\t%s\t%s\t\n", d.Name, d.Baseline, m, f(pt.Mean), f(pt.Lo), f(pt.Hi), f(pt.T), f(pt.P), sig)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

// seedRange prints consecutive seeds as "a–b".
func seedRange(s []uint64) string {
	if len(s) == 0 {
		return ""
	}
	sorted := sort.SliceIsSorted(s, func(i, j int) bool { return s[i] < s[j] })
	if sorted && s[len(s)-1]-s[0] == uint64(len(s)-1) {
		if len(s) == 1 {
			return fmt.Sprint(s[0])
		}
		return fmt.Sprintf("%d–%d", s[0], s[len(s)-1])
	}
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}

// MarshalJSON writes NaN and ±Inf as null.
func (r RepeatSched) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for k, v := range r.Metrics {
		m[k] = nullNaN(map[string]any{"n": v.N, "mean": v.Mean, "sd": v.SD, "ci95_lo": v.Lo, "ci95_hi": v.Hi})
	}
	return jsonMarshal(map[string]any{"name": r.Name, "metrics": m})
}

// MarshalJSON writes NaN and ±Inf as null.
func (d RepeatDiff) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for k, v := range d.Metrics {
		m[k] = nullNaN(map[string]any{"n": v.N, "mean_diff": v.Mean, "sd": v.SD, "ci95_lo": v.Lo, "ci95_hi": v.Hi,
			"t": v.T, "df": v.DF, "p": v.P, "significant": v.Significant})
	}
	return jsonMarshal(map[string]any{"name": d.Name, "baseline": d.Baseline, "metrics": m})
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func nullNaN(m map[string]any) map[string]any {
	for k, v := range m {
		if x, ok := v.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			m[k] = nil
		}
	}
	return m
}

// RunMetrics are the per-scheduler metrics `colo run --repeat` summarises (Summary keys;
// ratios as fractions, as in `colo run --json`).
var RunMetrics = []string{"priority_ipce", "batch_ipce", "global_ipce", "global_ipce_core_weighted",
	"time_over_target", "time_over_target_p90", "jobs_completed", "queue_delay_mean_s"}

// RunReplica runs b under the schedulers (RunAll, no recorder) and returns RunMetrics.
func RunReplica(b *Benchmark, names []string) (Replica, error) {
	rep, err := RunAll(b, names, RunOptions{})
	if err != nil {
		return Replica{}, err
	}
	var r Replica
	for _, s := range rep.Schedulers {
		r.Schedulers = append(r.Schedulers, s.Name)
		// The keys and units of `colo run --json` (ratios as fractions; docs/json.md).
		v := map[string]float64{"priority_ipce": s.PriorityIPCE / 100, "batch_ipce": s.BatchIPCE / 100, "global_ipce": s.GlobalIPCE / 100}
		v["global_ipce_core_weighted"] = s.GlobalIPCECoreWeighted / 100
		v["time_over_target"], v["time_over_target_p90"] = s.TimeOverTarget, s.TimeOverTargetP90
		v["jobs_completed"], v["queue_delay_mean_s"] = float64(s.JobsCompleted), s.QueueDelayMean
		r.Values = append(r.Values, v)
	}
	return r, nil
}

// CompareMetrics are the per-scheduler metrics `colo compare --repeat` summarises.
var CompareMetrics = []string{"stp", "antt", "unfairness", "worst_slowdown", "reconfigurations"}

// GuardMetrics are the metrics `colo compare --repeat` adds for a benchmark with latency
// SLOs or antagonists (GuardOutcome).
var GuardMetrics = []string{"slo_violation_seconds", "slo_violation_seconds_after_first_window", "be_throughput", "utilization", "antagonist_precision"}

// GuardSchedulers are the schedulers `colo compare` runs by default on a benchmark with
// latency SLOs or antagonists (the Heracles comparison).
const GuardSchedulers = "shared,static-cat-mba,dcat,lfoc+,vp,guard"

// HasGuardMeasures reports whether a job of bm has an SLO or is an antagonist.
func HasGuardMeasures(bm *Benchmark) bool {
	for _, j := range bm.Jobs {
		if j.SLOms > 0 || j.Antagonist {
			return true
		}
	}
	return false
}

// CompareMetricsFor are CompareMetrics, and GuardMetrics when a job of bm has an SLO or is
// an antagonist.
func CompareMetricsFor(bm *Benchmark) []string {
	if HasGuardMeasures(bm) {
		return append(slices.Clone(CompareMetrics), GuardMetrics...)
	}
	return CompareMetrics
}

// CompareReplica runs Compare on b and returns CompareMetrics.
func CompareReplica(b *Benchmark, names []string) (Replica, error) {
	rows, err := Compare(b, names)
	if err != nil {
		return Replica{}, err
	}
	var r Replica
	for _, o := range rows {
		r.Schedulers = append(r.Schedulers, o.Name)
		v := map[string]float64{"stp": o.STP, "antt": o.ANTT, "unfairness": o.Unfairness,
			"worst_slowdown": o.WorstSlowdown, "reconfigurations": float64(o.Reconfigurations)}
		if g := o.GuardOutcome; g != nil {
			v["slo_violation_seconds"], v["slo_violation_seconds_after_first_window"] = g.SLOViolationSeconds, g.SLOViolationSecondsAfterWindow
			v["be_throughput"], v["utilization"] = g.BEThroughput, g.Utilization
			v["antagonist_precision"] = math.NaN()
			if g.AntagonistPrecision != nil {
				v["antagonist_precision"] = *g.AntagonistPrecision
			}
		}
		r.Values = append(r.Values, v)
	}
	return r, nil
}
