// Package profiling is the pure part of the agent's online profiling: which tenants may be
// profiled and why not, the interleaved baseline/pressure schedule of one profiling run
// and the confidence of its result, and the self-check that asks for a new profile when
// predictions stay wrong. The driver (agent/profiler) runs the bubble, reads performance
// and stores the profiles.
package profiling

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Tenant is what eligibility looks at.
type Tenant struct {
	Class string // priority, batch, best-effort
	// PerfMetric is the tenant's colo.io/perf-metric ("" none); PMU whether hardware
	// instruction counts exist for it.
	PerfMetric string
	PMU        bool
	// HasProfile: a profile for its key exists; NeedsProfile: colo.io/needs-profile is set
	// (profile even if one exists, e.g. after a phase change).
	HasProfile, NeedsProfile bool
}

// Policy bounds what may be profiled.
type Policy struct {
	// Classes may be profiled (default batch and best-effort); priority tenants only
	// when the node is labelled for profiling as well.
	Classes         []string
	NodeForPriority bool
}

// Eligible says whether t should be profiled now, and why not (reason "" when it
// should). Performance comes from the tenant's own metric, else hardware instructions;
// CPU time is not progress, so without either no profile is attempted.
func Eligible(t Tenant, p Policy) (bool, string) {
	if t.HasProfile && !t.NeedsProfile {
		return false, "profiled"
	}
	if !slices.Contains(p.Classes, t.Class) {
		return false, fmt.Sprintf("class %s is not profiled (--profile-classes %s)", t.Class, strings.Join(p.Classes, ","))
	}
	if t.Class == "priority" && !p.NodeForPriority {
		return false, "priority tenants are profiled only on a node labelled for profiling"
	}
	if t.PerfMetric == "" && !t.PMU {
		return false, "no performance source: no colo.io/perf-metric and no hardware PMU (CPU time is not progress)"
	}
	return true, ""
}

// Segment is one step of a run: the bubble at Dial MB (0: baseline, no bubble).
type Segment struct {
	Dial float64
	// Repeat is the A/B round it belongs to.
	Repeat int
}

// Plan is a profiling run's shape.
type Plan struct {
	// Dials are the pressured dials in MB (> 0, ascending).
	Dials []float64
	// Repeats is the number of A/B rounds (each dial measured once per round).
	Repeats int
	// MaxSpread refuses a result whose spread exceeds it (0.1 = 10 %).
	MaxSpread float64
}

// Schedule is the run's segments, baseline and pressure interleaved, A B A B … A: every
// pressured segment sits between two baselines, so a slow drift of the host (other
// tenants, frequency, thermal) affects the baseline it is compared with equally and
// cancels to first order (a linear drift exactly; Bubble-Up compared each dial with one
// isolated run instead).
func (p Plan) Schedule() []Segment {
	var out []Segment
	for r := range p.Repeats {
		for _, d := range p.Dials {
			out = append(out, Segment{0, r}, Segment{d, r})
		}
	}
	return append(out, Segment{0, p.Repeats - 1})
}

// Result is a finished run.
type Result struct {
	Dials []float64 // 0 first
	Perf  []float64 // normalised performance (1 at dial 0)
	// Baseline is the mean performance of the baseline segments (the caller's unit,
	// higher is better).
	Baseline float64
	// Spread is the largest relative spread behind a point: over the repeats of a dial
	// (max − min)/mean of its ratios, and across each pressured segment the relative move
	// of its two baselines |A_before − A_after| / mean.
	Spread float64
	// Refused says why the result must not be used ("" usable).
	Refused string
}

// Evaluate turns the measured performance of each scheduled segment (higher is better,
// perf[i] for Schedule()[i]) into the sensitivity curve: each pressured segment's
// performance over the mean of its two neighbouring baselines, averaged over repeats,
//
//	P(d) = mean_r  perf(B_{d,r}) / ((perf(A_before) + perf(A_after)) / 2).
func (p Plan) Evaluate(perf []float64) (Result, error) {
	segs := p.Schedule()
	if len(perf) != len(segs) {
		return Result{}, fmt.Errorf("profiling: %d measurements for %d segments", len(perf), len(segs))
	}
	ratios := make(map[float64][]float64, len(p.Dials))
	var base []float64
	res := Result{Dials: append([]float64{0}, p.Dials...)}
	for i, s := range segs {
		if !(perf[i] > 0) || math.IsInf(perf[i], 0) {
			res.Refused = fmt.Sprintf("segment %d (%v MB) measured %v: no progress seen", i, s.Dial, perf[i])
			return res, nil
		}
		if s.Dial == 0 {
			base = append(base, perf[i])
			continue
		}
		a, b := perf[i-1], perf[i+1]
		m := (a + b) / 2
		ratios[s.Dial] = append(ratios[s.Dial], perf[i]/m)
		res.Spread = math.Max(res.Spread, math.Abs(a-b)/m)
	}
	res.Perf = []float64{1}
	for _, d := range p.Dials {
		rs := ratios[d]
		mean := 0.0
		for _, r := range rs {
			mean += r
		}
		mean /= float64(len(rs))
		res.Perf = append(res.Perf, mean)
		if len(rs) > 1 {
			res.Spread = math.Max(res.Spread, (slices.Max(rs)-slices.Min(rs))/mean)
		}
	}
	for _, b := range base {
		res.Baseline += b
	}
	res.Baseline /= float64(len(base))
	if p.MaxSpread > 0 && res.Spread > p.MaxSpread {
		res.Refused = fmt.Sprintf("too noisy: spread %.1f %% over repeats and baselines exceeds %.1f %%", 100*res.Spread, 100*p.MaxSpread)
	}
	return res, nil
}

// Check is the self-check: it counts consecutive observations whose prediction error
// exceeds Threshold (pp) and reports the profile stale after Window of them (a phase
// change or a profile taken under other conditions).
type Check struct {
	Threshold float64
	Window    int
	over      int
}

// Observe adds one prediction error (pp) and reports whether the profile is stale.
func (c *Check) Observe(errPP float64) bool {
	if math.Abs(errPP) > c.Threshold {
		c.over++
	} else {
		c.over = 0
	}
	return c.Window > 0 && c.over >= c.Window
}

// Reset restarts the window (after a new profile).
func (c *Check) Reset() { c.over = 0 }
