package dcat

import (
	"errors"
	"fmt"
	"time"
)

// Policy selects how dCat shares ways when there are not enough for everyone (seed003.md §1.6).
type Policy int

const (
	// MaxFairness ignores the performance tables: free ways go +1 per round to the workloads
	// that have grown least above their baseline, and ways taken back for a Reclaim come from
	// the workload furthest above its baseline first.
	MaxFairness Policy = iota
	// MaxPerformance re-divides the ways above the baselines by maximising the sum of the
	// measured normalised IPCs (a multiple-choice knapsack over the performance tables) when
	// a Reclaim has to take ways back; while the pool has ways, growth is as in MaxFairness.
	MaxPerformance
)

func (p Policy) String() string {
	switch p {
	case MaxFairness:
		return "max-fairness"
	case MaxPerformance:
		return "max-performance"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// ParsePolicy reads "max-fairness"/"fairness" or "max-performance"/"performance".
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "max-fairness", "fairness", "fair":
		return MaxFairness, nil
	case "max-performance", "performance", "perf":
		return MaxPerformance, nil
	}
	return 0, fmt.Errorf("dcat: unknown policy %q (use max-fairness or max-performance)", s)
}

// Options are dCat's parameters. The defaults (DefaultOptions) are the paper's values
// (seed003.md §1.4) where the paper gives one, and colo's documented choice where it does not.
type Options struct {
	// Ways is the number of ways of the LLC domain the controller manages (20 on the paper's
	// Xeon E5-2697 v4).
	Ways int
	// HostWays reserves the top HostWays ways for the host/default class (hypervisor, vhost,
	// the controller itself): tenants never get them and admission counts them as taken.
	// 0 (the default, the paper's setup) leaves the default class on the full mask, sharing
	// every way with the tenants (seed003.md §5 item 4 [gap]).
	HostWays int
	// MinWays is the smallest allocation (1: CAT cannot allocate 0 ways, footnote 4).
	MinWays int
	// MaxCLOS is the number of classes of service (16 on Xeon); one is the default class, so
	// at most MaxCLOS−1 workloads are admitted.
	MaxCLOS int
	// Sparse allows non-contiguous masks (AMD; Intel with info/L3/sparse_masks): no repacking.
	Sparse bool
	// Period is the control period (1 s in the paper's evaluation).
	Period time.Duration
	// MissRateThreshold is llc_miss_rate_thr on llc_miss/llc_ref (3 %).
	MissRateThreshold float64
	// IPCGainThreshold is ipc_imp_thr, the marginal IPC gain per added way (5 %).
	IPCGainThreshold float64
	// PhaseThreshold is the relative change of loads per instruction that marks a new phase (10 %).
	PhaseThreshold float64
	// StreamingFactor: an Unknown workload reaching StreamingFactor × baseline ways without
	// gaining IPC is Streaming (3).
	StreamingFactor float64
	// LLCRefRate is llc_ref_thr, which the paper leaves unspecified: a workload making at most
	// this many LLC references per second of the period (or retiring no instruction) is idle or
	// "polite" and donates down to MinWays. colo's default: 1e6 refs/s (a lookbusy-style spinner
	// makes almost none; a cache-bound job makes 10^7–10^9).
	LLCRefRate float64
	// PreferredTolerance: the preferred size of a phase is the smallest measured size whose
	// normalised IPC is within this fraction of the best measured one (1 %; Table 1 of the
	// paper marks 6 ways preferred where 6, 7 and 8 ways all give 1.3).
	PreferredTolerance float64
	// Policy is MaxFairness or MaxPerformance.
	Policy Policy
	// Static turns the controller into static CAT, the paper's baseline: every workload holds
	// its baseline ways from admission to exit; counters are ignored.
	Static bool
}

// DefaultOptions returns the paper's parameters for an LLC domain of the given number of ways.
func DefaultOptions(ways int) Options {
	return Options{
		Ways:               ways,
		HostWays:           0,
		MinWays:            1,
		MaxCLOS:            16,
		Period:             time.Second,
		MissRateThreshold:  0.03,
		IPCGainThreshold:   0.05,
		PhaseThreshold:     0.10,
		StreamingFactor:    3,
		LLCRefRate:         1e6,
		PreferredTolerance: 0.01,
		Policy:             MaxPerformance,
	}
}

// Capacity is the number of ways tenants can hold: Ways − HostWays.
func (o Options) Capacity() int { return o.Ways - o.HostWays }

// Validate rejects options outside their meaning, naming the option and what to use instead.
func (o Options) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf("dcat: "+f, a...)) }
	if o.Ways < 1 || o.Ways > 64 {
		bad("ways = %d: the LLC domain needs 1..64 ways", o.Ways)
	}
	if o.MinWays < 1 {
		bad("min_ways = %d: CAT cannot allocate fewer than 1 way", o.MinWays)
	}
	if o.HostWays < 0 || (o.Ways > 0 && o.HostWays >= o.Ways) {
		bad("host_ways = %d: must be in 0..%d so tenants keep at least one way", o.HostWays, o.Ways-1)
	}
	if o.MaxCLOS < 2 {
		bad("max_clos = %d: need the default class plus at least one tenant class", o.MaxCLOS)
	}
	if o.Period <= 0 {
		bad("period = %v: the control period must be positive (the paper uses 1s)", o.Period)
	}
	frac := func(name string, v float64) {
		if !(v >= 0 && v < 1) { // also rejects NaN
			bad("%s = %v: must be a fraction in [0, 1)", name, v)
		}
	}
	frac("miss_rate_threshold", o.MissRateThreshold)
	frac("ipc_gain_threshold", o.IPCGainThreshold)
	frac("preferred_tolerance", o.PreferredTolerance)
	if !(o.PhaseThreshold > 0 && o.PhaseThreshold < 1) {
		bad("phase_threshold = %v: must be in (0, 1)", o.PhaseThreshold)
	}
	if !(o.StreamingFactor >= 1) {
		bad("streaming_factor = %v: must be at least 1 (the paper uses 3)", o.StreamingFactor)
	}
	if !(o.LLCRefRate >= 0) {
		bad("llc_ref_rate = %v: must be a non-negative rate in references per second", o.LLCRefRate)
	}
	if o.Policy != MaxFairness && o.Policy != MaxPerformance {
		bad("policy %v: use max-fairness or max-performance", o.Policy)
	}
	return errors.Join(errs...)
}
