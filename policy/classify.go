package policy

import (
	"fmt"

	"colo/profile"
)

// Class is an application's LFOC+ class (seed001.md §1.1, Table 1).
type Class int

// The classes. Unknown (a newly started application, not yet sampled) is treated like
// Streaming by LFOC+ (PMCTrack lfoc_list, seed001.md §1.1).
const (
	Unknown Class = iota
	Light
	Sensitive
	Streaming
)

func (c Class) String() string {
	switch c {
	case Light:
		return "light"
	case Sensitive:
		return "sensitive"
	case Streaming:
		return "streaming"
	}
	return "unknown"
}

// Thresholds are the classification rules of LFOC+ Table 1 (seed001.md §1.1).
type Thresholds struct {
	// Streaming: S(w) ≤ StreamingSlowdown and LLCMPKC(w) ≥ StreamingLLCMPKC at some w, and
	// S(w) < StreamingMaxSlowdown at every w.
	StreamingSlowdown    float64 `json:"streaming_slowdown"`
	StreamingLLCMPKC     float64 `json:"streaming_llcmpkc"`
	StreamingMaxSlowdown float64 `json:"streaming_max_slowdown"`
	// Sensitive (if not streaming): S(w) ≥ SensitiveSlowdown at some w ≥ SensitiveMinWays.
	SensitiveSlowdown float64 `json:"sensitive_slowdown"`
	SensitiveMinWays  int     `json:"sensitive_min_ways"`
}

// PaperThresholds are Table 1 of the LFOC+ paper: 1.03, LLCMPKC ≥ 10, 1.06; 1.05 at w ≥ 2.
func PaperThresholds() Thresholds {
	return Thresholds{StreamingSlowdown: 1.03, StreamingLLCMPKC: 10, StreamingMaxSlowdown: 1.06, SensitiveSlowdown: 1.05, SensitiveMinWays: 2}
}

// PBBCacheThresholds are PBBCache's get_app_category: the same with LLCMPKC ≥ 14.
func PBBCacheThresholds() Thresholds {
	t := PaperThresholds()
	t.StreamingLLCMPKC = 14
	return t
}

// Validate rejects thresholds that cannot classify anything sensibly.
func (t Thresholds) Validate() error {
	if t.StreamingSlowdown < 1 || t.StreamingMaxSlowdown < t.StreamingSlowdown || t.SensitiveSlowdown < 1 || t.StreamingLLCMPKC < 0 || t.SensitiveMinWays < 1 {
		return fmt.Errorf("classification thresholds %+v: want 1 ≤ streaming slowdown ≤ streaming max slowdown, sensitive slowdown ≥ 1, LLCMPKC ≥ 0, min ways ≥ 1", t)
	}
	return nil
}

// ClassifyCurves applies LFOC+ Table 1 (seed001.md §1.1) to a slowdown curve and an
// LLCMPKC curve (both indexed by ways−1, same length):
//
//	streaming  ⇔ ∃w: S(w) ≤ 1.03 ∧ LLCMPKC(w) ≥ 10   and   ∀w: S(w) < 1.06
//	sensitive  ⇔ not streaming ∧ ∃w ≥ 2: S(w) ≥ 1.05
//	light      otherwise
//
// (thresholds from t). The online LFOC+ controller calls it on sampled curves.
func ClassifyCurves(slowdown, llcmpkc []float64, t Thresholds) Class {
	lowAndMissing, allBelow := false, true
	for w, s := range slowdown {
		if s <= t.StreamingSlowdown && llcmpkc[w] >= t.StreamingLLCMPKC {
			lowAndMissing = true
		}
		if s >= t.StreamingMaxSlowdown {
			allBelow = false
		}
	}
	if lowAndMissing && allBelow {
		return Streaming
	}
	for w := t.SensitiveMinWays; w <= len(slowdown); w++ {
		if slowdown[w-1] >= t.SensitiveSlowdown {
			return Sensitive
		}
	}
	return Light
}

// Classify classifies an application from its profile table.
func Classify(tb *profile.Table, t Thresholds) Class {
	return ClassifyCurves(tb.Col(profile.Slowdown), tb.Col(profile.LLCMPKC), t)
}

// ClassifyAll classifies every application of a workload.
func ClassifyAll(apps []*profile.Table, t Thresholds) []Class {
	out := make([]Class, len(apps))
	for i, a := range apps {
		out[i] = Classify(a, t)
	}
	return out
}
