package policy

import (
	"colo/profile"
)

// LFOCParams are the constants of LFOC / LFOC+ (seed001.md §1.3).
type LFOCParams struct {
	MaxStreamingPerPart int     // max_str_parts: streaming apps per 1-way streaming partition (5)
	LightPerStreaming   int     // light-sharing apps per free streaming slot: the code's LIGHT_PER_STREAMING = 2 (paper's gaps_per_str = 3)
	StreamingWays       int     // ways_str: ways of a streaming partition (1)
	MaxStreamingParts   int     // streaming partitions (LFOC) / ways of the merged one (LFOC+) at most (2)
	T1Threshold         float64 // stop T1 transfers when the best costs more than this slowdown (0.07, code only)
}

// DefaultLFOCParams are the values of the authors' code (PMCTrack v2.0, PBBCache).
func DefaultLFOCParams() LFOCParams {
	return LFOCParams{MaxStreamingPerPart: 5, LightPerStreaming: 2, StreamingWays: 1, MaxStreamingParts: 2, T1Threshold: 0.07}
}

// AppCurves are what LFOC+ knows of an application: its slowdown and LLCMPKC curves
// (indexed by ways−1, one entry per way count of the cache), measured offline (a profile
// table) or by the online sampling mode.
type AppCurves struct {
	Slowdown []float64
	LLCMPKC  []float64
}

// CurvesOf extracts the curves of profile tables.
func CurvesOf(apps []*profile.Table) []AppCurves {
	out := make([]AppCurves, len(apps))
	for i, t := range apps {
		out[i] = AppCurves{Slowdown: t.Col(profile.Slowdown), LLCMPKC: t.Col(profile.LLCMPKC)}
	}
	return out
}

// LFOC is the LFOC policy (Garcia-Garcia et al., ICPP'19; seed001.md §2.2): Algorithm 1
// with one partition per sensitive application (UCP-Slowdown), up to two 1-way streaming
// partitions, light-sharing applications filling the gaps.
func LFOC(in Input, opt Options) (*Solution, error) {
	cl, err := LFOCClusters(false, ClassifyAll(in.Apps, opt.Thresholds), CurvesOf(in.Apps), in.Machine.LLC.Ways, opt.LFOC)
	if err != nil {
		return nil, err
	}
	return packed(in.Machine, cl)
}

// LFOCPlusPolicy is LFOC+ on profile tables (classification by opt.Thresholds).
func LFOCPlusPolicy(in Input, opt Options) (*Solution, error) {
	cl, err := LFOCPlus(ClassifyAll(in.Apps, opt.Thresholds), CurvesOf(in.Apps), in.Machine.LLC.Ways, opt.LFOC)
	if err != nil {
		return nil, err
	}
	return packed(in.Machine, cl)
}

// LFOCPlus is the LFOC+ partitioning algorithm (seed001.md §1.5, with the ten errata of
// §1.6 resolved as the authors' code does) on classes and curves — the entry point for
// the online controller. It returns clusters with way counts (no masks; PackMasks lays
// them out); the streaming cluster, if any, comes first.
func LFOCPlus(classes []Class, curves []AppCurves, ways int, p LFOCParams) ([]Cluster, error) {
	return LFOCClusters(true, classes, curves, ways, p)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// LFOCClusters is Algorithm 1 of the LFOC+ paper (seed001.md §1.5), for LFOC (plus=false)
// and LFOC+ (plus=true):
//
//  1. no sensitive application: one cluster with every way, no partitioning;
//  2. streaming (and unknown) applications: parts = min(MaxStreamingParts, ⌈|ST|/MaxStreamingPerPart⌉);
//     LFOC makes parts 1-way clusters of ⌈|ST|/parts⌉ apps, LFOC+ one cluster of parts ways;
//  3. sensitive applications share the remaining ways: LFOC one partition each by
//     lookahead on the slowdown curves, LFOC+ pair clustering (PairClustering) when
//     there are two or more;
//  4. light-sharing applications fill the streaming clusters first, (MaxStreamingPerPart·ways
//     − |T| + 1)·LightPerStreaming per streaming cluster T (erratum E1: the code's rule, not
//     the printed one, which is never positive), then round-robin over the sensitive clusters.
//
// When there are more sensitive applications than remaining ways (which the paper does not
// cover: lookahead needs one way each), the least sensitive ones, by slowdown at one way,
// are handled as light-sharing.
func LFOCClusters(plus bool, classes []Class, curves []AppCurves, ways int, p LFOCParams) ([]Cluster, error) {
	var pl LFOCPlanner
	return pl.Plan(plus, classes, curves, ways, p)
}

// InitialPartitioning is Algorithm 3 (the first step of pair clustering, seed001.md §1.5,
// errata E2 and E9): UCP-Slowdown lookahead, then up to n "T1" transfers, each moving one
// way to the application i with the highest slowdown from the application j whose loss
// costs least, cost = (S_i(w_i+1) − S_i(w_i)) + (S_j(w_j−1) − S_j(w_j)); j is not eligible
// if it already received a way, holds one way, or would end above S_i(w_i). It stops when
// i already received a way, no j is eligible, or the best cost exceeds threshold (0.07).
// s are the slowdown curves, indexed by ways−1.
func InitialPartitioning(s [][]float64, total int, threshold float64) []int {
	return initialPartitioning(make([]int, len(s)), make([]bool, len(s)), s, total, threshold)
}

// PairClustering is LFOC+'s Algorithm 2 (seed001.md §1.5, errata E3–E8) over the
// sensitive applications apps (indices into curves) and total ways: start from
// InitialPartitioning; price merging every two 1-way applications into one 1-way cluster
// (cost1w, with the Whirlpool pair curves); then visit the applications by descending
// slowdown and apply at most one transformation per visit, recording each intermediate
// solution:
//
//	T2: give i one more way, freed by merging the cheapest 1-way pair (a, b) ∌ i;
//	    cost = (S_i(w_i+1) − S_i(w_i)) + cost1w(a, b);
//	T3: merge i with an unmerged j into one cluster of w_i + w_j ways;
//	    cost = S_i'(w_i+w_j) + S_j'(w_i+w_j) − S_i(w_i) − S_j(w_j).
//
// T2 is taken when its cost is negative; otherwise the cheapest T3 when negative (the
// code checks T3 only when T2 was not taken). The answer is the recorded solution with the
// lowest unfairness, ties to the highest STP (cache-only slowdowns, no bandwidth model, as
// in the code). Pair curves are the Whirlpool model of two applications sharing k ways
// (seed001.md §1.5 get_scurves: perfmodel.SharesSteps on LLCMPKC, slowdown interpolated at
// each share), computed once per pair on first use, as the kernel memoises them. Beyond the code: once i gains a way its own 1-way pairs are dropped too,
// since it no longer holds one way.
func PairClustering(apps []int, curves []AppCurves, total int, threshold float64) []Cluster {
	var pl LFOCPlanner
	var out []Cluster
	pl.pairClustering(apps, curves, total, threshold, func(w int) *Cluster {
		out = append(out, Cluster{Ways: w})
		return &out[len(out)-1]
	})
	return out
}
