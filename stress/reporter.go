package stress

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"colo/metric"
)

// The four Bubble-Up reporter designs (seed002.md §1.3, thesis ch. 5 / appendix A).
const (
	ReporterStreaming   = "streaming"   // Type 1: STREAM copy there and back
	ReporterRandom      = "random"      // Type 2: LFSR-indexed read-modify-writes
	ReporterAlternating = "alternating" // Type 3: streaming and random as two interleaved functions
	ReporterHybrid      = "hybrid"      // Type 4: lbm-like streaming reads, scattered writes
)

// ReporterTypes lists the reporter designs in the thesis's numbering order.
var ReporterTypes = []string{ReporterStreaming, ReporterRandom, ReporterAlternating, ReporterHybrid}

// ReporterConfig sizes a reporter measurement.
type ReporterConfig struct {
	Type string
	// MB is the reporter's touched footprint in MB (10^6 bytes), split evenly between the
	// functions of the alternating type. Default 128 (the thesis's nominal 16 M doubles,
	// which its code did not actually touch, seed002.md §1.3).
	MB float64
	// Reps is the number of timed iterations per function (thesis: 100 repetitions).
	Reps int
	// Warmup is the number of untimed iterations per function first (default 2).
	Warmup int
	// Seed orders the interleaving of functions (random interleaving, like Google
	// Benchmark's --benchmark_enable_random_interleaving).
	Seed uint64
}

// ReporterResult is the reporter's measurement: the median iteration time per function and
// the score, the arithmetic mean of the per-function medians (seed002.md §1.3: the
// AveragingReporter; for single-function types the score is that function's median).
type ReporterResult struct {
	Type    string             `json:"type"`
	MB      float64            `json:"mb"`
	Reps    int                `json:"reps"`
	Medians map[string]float64 `json:"medians_ns"`
	Score   float64            `json:"score_ns"`
}

type reporterFunc struct {
	name string
	iter func() // one full iteration over the function's footprint
}

// reporterFuncs allocates and pre-faults the reporter's memory once and returns its
// timed functions; nothing inside them allocates.
func reporterFuncs(typ string, bytes int64) ([]reporterFunc, int64, error) {
	streamFn := func(b int64) (reporterFunc, int64, error) {
		w, t, err := newStream(b)
		if err != nil {
			return reporterFunc{}, 0, err
		}
		return reporterFunc{"stream", func() {
			streamCopy(w.a, w.b, w.s)
			streamCopy(w.b, w.a, w.s)
		}}, t, nil
	}
	randomFn := func(b int64) (reporterFunc, int64, error) {
		w, t, err := newRandom(b, lfsrSeed)
		if err != nil {
			return reporterFunc{}, 0, err
		}
		// Thesis Type 2: FOOTPRINT/100 outer iterations of 10 accesses, LFSR re-seeded with
		// 0xACE1 every benchmark iteration.
		n := max(len(w.data)/10, 1)
		return reporterFunc{"random", func() { randomAccess(w.data, &w.dump, lfsrSeed, n) }}, t, nil
	}
	switch typ {
	case ReporterStreaming:
		f, t, err := streamFn(bytes)
		return []reporterFunc{f}, t, err
	case ReporterRandom:
		f, t, err := randomFn(bytes)
		return []reporterFunc{f}, t, err
	case ReporterAlternating:
		f1, t1, err := streamFn(bytes / 2)
		if err != nil {
			return nil, 0, err
		}
		f2, t2, err := randomFn(bytes - bytes/2)
		return []reporterFunc{f1, f2}, t1 + t2, err
	case ReporterHybrid:
		w, t, err := newHybrid(bytes)
		if err != nil {
			return nil, 0, err
		}
		return []reporterFunc{{"hybrid", func() {
			lbmSweep(w.dst, w.src, 0, w.cells)
			w.src, w.dst = w.dst, w.src
		}}}, t, nil
	}
	return nil, 0, fmt.Errorf("unknown reporter type %q: use one of streaming, random, alternating, hybrid", typ)
}

// Reporter is an allocated, pre-faulted reporter that can be measured many times: keeping
// one instance for a whole profiling session keeps its memory (and its physical placement)
// the same across dial points and competitors.
type Reporter struct {
	cfg     ReporterConfig
	fns     []reporterFunc
	touched int64
	rng     *rand.Rand
}

// NewReporter validates cfg (filling defaults: 128 MB, 100 reps, 2 warm-up iterations) and
// allocates the reporter's memory.
func NewReporter(cfg ReporterConfig) (*Reporter, error) {
	if cfg.MB == 0 {
		cfg.MB = 128
	}
	if cfg.MB < 0 {
		return nil, fmt.Errorf("reporter --mb %g must be > 0", cfg.MB)
	}
	if cfg.Reps == 0 {
		cfg.Reps = 100
	}
	if cfg.Reps < 0 || cfg.Warmup < 0 {
		return nil, fmt.Errorf("reporter --reps %d and --warmup %d must be ≥ 0", cfg.Reps, cfg.Warmup)
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = 2
	}
	fns, touched, err := reporterFuncs(cfg.Type, int64(cfg.MB*MB))
	if err != nil {
		return nil, err
	}
	return &Reporter{cfg: cfg, fns: fns, touched: touched, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed))}, nil
}

// Measure runs Warmup untimed iterations per function, then Reps rounds in which every
// function runs one timed iteration, in a seeded random order, and returns the
// per-function medians and the score. now is the clock (time.Now for real runs).
func (rp *Reporter) Measure(ctx context.Context, now func() time.Time) (ReporterResult, error) {
	cfg, fns := rp.cfg, rp.fns
	for _, f := range fns {
		for i := 0; i < cfg.Warmup; i++ {
			f.iter()
		}
	}
	times := make([][]float64, len(fns))
	for i := range times {
		times[i] = make([]float64, 0, cfg.Reps)
	}
	order := make([]int, len(fns))
	for r := 0; r < cfg.Reps; r++ {
		if err := ctx.Err(); err != nil {
			return ReporterResult{}, err
		}
		for i := range order {
			order[i] = i
		}
		rp.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			t0 := now()
			fns[i].iter()
			times[i] = append(times[i], float64(now().Sub(t0).Nanoseconds()))
		}
	}
	res := ReporterResult{Type: cfg.Type, MB: float64(rp.touched) / MB, Reps: cfg.Reps, Medians: map[string]float64{}}
	meds := make([]float64, len(fns))
	for i, f := range fns {
		meds[i] = metric.Percentile(times[i], 50)
		res.Medians[f.name] = meds[i]
	}
	res.Score = ReporterScore(meds)
	return res, nil
}

// MeasureReporter allocates a reporter and measures it once (see Reporter.Measure).
func MeasureReporter(ctx context.Context, cfg ReporterConfig, now func() time.Time) (ReporterResult, error) {
	rp, err := NewReporter(cfg)
	if err != nil {
		return ReporterResult{}, err
	}
	return rp.Measure(ctx, now)
}

// ReporterScore is the reporter's score: the arithmetic mean of its functions' median
// iteration times (seed002.md §1.3, the repository's AveragingReporter; data PROVENANCE.md:
// "avg = (rand + stream)/2").
func ReporterScore(medians []float64) float64 {
	s := 0.0
	for _, m := range medians {
		s += m
	}
	return s / float64(len(medians))
}

// FunctionNames returns the reporter's function names, sorted (for tables).
func (r ReporterResult) FunctionNames() []string {
	return slices.Sorted(maps.Keys(r.Medians))
}
