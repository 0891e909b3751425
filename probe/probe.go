// Package probe implements the thesis's online allocation probing (seed000.md §2.2,
// Algorithms 1 and 2, §4.5.1): a sweep over (LLC ways × MBA %) combinations, one segment
// per combination, IPCE sampled every 50 ms and averaged with a trimmed mean; the result
// is the minimal combination whose IPCE meets the target.
//
// Sweep is a pure state machine: the caller enforces Current(), collects the IPCE samples
// of one segment and hands them to Finish; nothing here sleeps or reads a clock.
package probe

import (
	"fmt"
	"math"
	"sort"
	"time"

	"colo/metric"
)

// Config is the prober block of the benchmark YAML (thesis Listing 4.16; the evaluation
// values of seed000.md §2.2 [repo] are DefaultConfig).
type Config struct {
	MinL3, MaxL3, StepL3    int
	MinMem, MaxMem, StepMem int
	// ProbingT is the total sweep time; each combination gets ProbingT / |combinations|.
	ProbingT time.Duration
	// WarmupT is the minimum job age before its probe; CooldownT the minimum time
	// between two probes of one job.
	WarmupT, CooldownT time.Duration
	// Frequency is the sampling interval during a probe (probing_frequency, 50 ms).
	Frequency time.Duration
	// DropOutliers is how many lowest and highest samples the trimmed mean drops.
	DropOutliers int
	// BreakCondition is the QoS threshold as a fraction of the best IPCE, used when the
	// job has no absolute IPCE target.
	BreakCondition float64
	Descending     bool // order: desc (Algorithm 2) instead of asc (Algorithm 1)
	Greedy         bool // greedy_allocation: test all, pick the best fit to what is free
	Allocate       bool // allocate the result (false: probe only, job stays unallocated)
	// BufferWays and BufferMem are added on top of the result (thesis §7.1 buffering).
	BufferWays, BufferMem int
}

// DefaultConfig is the thesis evaluation's prober (seed000.md §2.2 [repo]): 2–4 ways ×
// 10–20 % MBA, 12 s, ascending, warm-up 3 s, cool-down 1 s, 50 ms sampling, 5 outliers
// dropped each side, break condition 0.9, allocate, no buffer.
func DefaultConfig() Config {
	return Config{MinL3: 2, MaxL3: 4, StepL3: 1, MinMem: 10, MaxMem: 20, StepMem: 10,
		ProbingT: 12 * time.Second, WarmupT: 3 * time.Second, CooldownT: time.Second,
		Frequency: 50 * time.Millisecond, DropOutliers: 5, BreakCondition: 0.9, Allocate: true}
}

// Validate checks the ranges against a cache of totalWays ways and MBA mbaMin..100.
func (c Config) Validate(totalWays, mbaMin int) error {
	switch {
	case c.StepL3 < 1 || c.StepMem < 1:
		return fmt.Errorf("step_l3 (%d) and mem_step (%d) must be ≥ 1", c.StepL3, c.StepMem)
	case c.MinL3 < 1 || c.MaxL3 < c.MinL3 || c.MaxL3 > totalWays:
		return fmt.Errorf("min_l3..max_l3 = %d..%d must lie in 1..%d ways", c.MinL3, c.MaxL3, totalWays)
	case c.MinMem < mbaMin || c.MaxMem < c.MinMem || c.MaxMem > 100:
		return fmt.Errorf("min_mem..max_mem = %d..%d must lie in %d..100 %%", c.MinMem, c.MaxMem, mbaMin)
	case c.ProbingT <= 0 || c.Frequency <= 0:
		return fmt.Errorf("probing_t and probing_frequency must be > 0")
	case c.BreakCondition <= 0 || c.BreakCondition > 1:
		return fmt.Errorf("break_condition %.3g must be in (0, 1]", c.BreakCondition)
	case c.DropOutliers < 0:
		return fmt.Errorf("drop_outliers %d must be ≥ 0", c.DropOutliers)
	case c.BufferWays < 0 || c.BufferMem < 0:
		return fmt.Errorf("buffer_ways and buffer_memory must be ≥ 0")
	case c.MaxL3+c.BufferWays > totalWays || c.MaxMem+c.BufferMem > 100:
		return fmt.Errorf("max_l3 + buffer_ways (%d) or max_mem + buffer_memory (%d) exceeds the machine", c.MaxL3+c.BufferWays, c.MaxMem+c.BufferMem)
	}
	if c.SegmentTime() < c.Frequency {
		return fmt.Errorf("probing_t %v over %d combinations leaves segments shorter than one %v sample", c.ProbingT, len(c.Combos()), c.Frequency)
	}
	return nil
}

// Combo is one allocation: exclusive LLC ways and an MBA percentage.
type Combo struct {
	Ways int `json:"ways"`
	MBA  int `json:"mba"`
}

// Combos is S_alloc in sweep order: ways in the outer loop, bandwidth in the inner loop,
// ascending (Algorithm 1, §4.5.1 "within each way allocation we increase the memory
// allocation by mem_step until the maximum, then reset it") or exactly reversed when
// Descending (Algorithm 2).
func (c Config) Combos() []Combo {
	var out []Combo
	for w := c.MinL3; w <= c.MaxL3; w += max(c.StepL3, 1) {
		for m := c.MinMem; m <= c.MaxMem; m += max(c.StepMem, 1) {
			out = append(out, Combo{w, m})
		}
	}
	if c.Descending {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// SegmentTime is t_segment = T / |S_alloc| (Algorithm 1).
func (c Config) SegmentTime() time.Duration {
	n := len(c.Combos())
	if n == 0 {
		return 0
	}
	return c.ProbingT / time.Duration(n)
}

// TrimmedMean is the mean after dropping the `drop` lowest and `drop` highest values
// ([repo] drop_outliers, seed000.md §2.2); NaN values are ignored. If fewer than
// 2·drop+1 values remain, the plain mean is used. NaN when there is no value.
func TrimmedMean(xs []float64, drop int) float64 {
	s := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	sort.Float64s(s)
	if drop > 0 && len(s) > 2*drop {
		s = s[drop : len(s)-drop]
	}
	return metric.Mean(s)
}

// Segment is one measured combination.
type Segment struct {
	Combo
	IPCE    float64 `json:"ipce"` // trimmed mean, fraction
	Samples int     `json:"samples"`
}

// Result is the outcome of a sweep.
type Result struct {
	Combo
	IPCE     float64   `json:"ipce"`      // measured at the chosen combination
	Met      bool      `json:"met"`       // the chosen combination met the threshold
	Target   float64   `json:"threshold"` // the threshold used (fraction)
	Segments []Segment `json:"segments"`
	Err      string    `json:"error,omitempty"`
}

// Sweep runs one allocation probe.
type Sweep struct {
	cfg    Config
	target float64 // absolute IPCE target (fraction), 0 = none
	combos []Combo
	next   int
	segs   []Segment
	done   bool
	err    string
	pick   int // index into segs of the result, -1 = none
	thresh float64
}

// NewSweep starts a sweep. target is the job's IPCE target as a fraction (0 when the job
// has none: then the threshold is BreakCondition × the best IPCE measured).
func NewSweep(cfg Config, target float64) *Sweep {
	return &Sweep{cfg: cfg, target: target, combos: cfg.Combos(), pick: -1}
}

// Current is the combination to enforce for the next segment; ok is false when done.
func (s *Sweep) Current() (c Combo, ok bool) {
	if s.done || s.next >= len(s.combos) {
		return Combo{}, false
	}
	return s.combos[s.next], true
}

// Done reports whether the sweep is over.
func (s *Sweep) Done() bool { return s.done }

// Fail ends the sweep with an error (the job exited, an allocation could not be applied).
func (s *Sweep) Fail(reason string) {
	s.done, s.err = true, reason
}

// Finish closes the current segment with its IPCE samples (fractions, one per sampling
// interval) and advances. It applies the break rules:
//   - ascending with an absolute target: stop at the first combination meeting it
//     (Algorithm 1: the minimal viable allocation);
//   - descending: stop at the first combination below the threshold and keep the
//     previous one (Algorithm 2); without an absolute target the threshold is
//     BreakCondition × the IPCE of the first (largest) combination;
//   - greedy, or ascending without an absolute target: measure every combination.
func (s *Sweep) Finish(samples []float64) {
	if s.done {
		return
	}
	c := s.combos[s.next]
	v := TrimmedMean(samples, s.cfg.DropOutliers)
	if math.IsNaN(v) {
		s.Fail(fmt.Sprintf("no IPCE samples for %d ways / %d%% MBA", c.Ways, c.MBA))
		return
	}
	s.segs = append(s.segs, Segment{Combo: c, IPCE: v, Samples: len(samples)})
	s.next++
	i := len(s.segs) - 1
	if !s.cfg.Greedy {
		switch {
		case !s.cfg.Descending && s.target > 0:
			if v >= s.target {
				s.pick, s.thresh, s.done = i, s.target, true
				return
			}
		case s.cfg.Descending:
			th := s.target
			if th <= 0 {
				th = s.cfg.BreakCondition * s.segs[0].IPCE
			}
			s.thresh = th
			if v < th {
				s.pick, s.done = i-1, true // may be -1: even the largest missed
				if s.pick < 0 {
					s.pick = 0
				}
				return
			}
		}
	}
	if s.next >= len(s.combos) {
		s.done = true
	}
}

// Result is the sweep's outcome; call when Done. Without an early stop it chooses:
// ascending — the first (minimal) combination meeting the threshold, else the last
// (maximal) one (Algorithm 1 "return S_alloc.last"); descending — the last measured
// (minimal) combination that stayed above. For Greedy it calls ChooseGreedy with the
// free ways and MBA the caller can offer.
func (s *Sweep) Result(freeWays, freeMBA int) Result {
	r := Result{Segments: append([]Segment(nil), s.segs...)}
	if s.err != "" {
		r.Err = s.err
		return r
	}
	if len(s.segs) == 0 {
		r.Err = "no combination was measured"
		return r
	}
	th := s.threshold()
	r.Target = th
	idx := s.pick
	if idx < 0 {
		switch {
		case s.cfg.Greedy:
			idx = ChooseGreedy(s.segs, th, freeWays, freeMBA)
		case s.cfg.Descending:
			idx = len(s.segs) - 1
		default:
			idx = len(s.segs) - 1
			for i, sg := range s.segs {
				if sg.IPCE >= th {
					idx = i
					break
				}
			}
		}
	}
	r.Combo, r.IPCE = s.segs[idx].Combo, s.segs[idx].IPCE
	r.Met = r.IPCE >= th
	return r
}

func (s *Sweep) threshold() float64 {
	if s.target > 0 {
		return s.target
	}
	if s.thresh > 0 {
		return s.thresh
	}
	best := 0.0
	for _, sg := range s.segs {
		best = math.Max(best, sg.IPCE)
	}
	return s.cfg.BreakCondition * best
}

// ChooseGreedy picks, among the segments meeting the threshold, the combination that
// fits best into what is free: the smallest Ways/freeWays + MBA/freeMBA (so a socket
// whose bandwidth is mostly committed prefers more ways and less MBA, thesis
// "greedy_allocation", seed000.md §2.2). Ties go to fewer ways, then less MBA. Combinations
// that do not fit at all rank last; if none meets the threshold it returns the index of
// the highest IPCE.
func ChooseGreedy(segs []Segment, threshold float64, freeWays, freeMBA int) int {
	best, bestCost := -1, math.Inf(1)
	for i, sg := range segs {
		if sg.IPCE < threshold {
			continue
		}
		cost := float64(sg.Ways)/float64(max(freeWays, 1)) + float64(sg.MBA)/float64(max(freeMBA, 1))
		if sg.Ways > freeWays || sg.MBA > freeMBA {
			cost += 1e6
		}
		if best < 0 || cost < bestCost-1e-12 ||
			(math.Abs(cost-bestCost) <= 1e-12 && (sg.Ways < segs[best].Ways || sg.Ways == segs[best].Ways && sg.MBA < segs[best].MBA)) {
			best, bestCost = i, cost
		}
	}
	if best >= 0 {
		return best
	}
	for i, sg := range segs {
		if best < 0 || sg.IPCE > segs[best].IPCE {
			best = i
		}
	}
	return best
}
