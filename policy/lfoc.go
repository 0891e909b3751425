package policy

import (
	"fmt"
	"math"
	"sort"

	"colo/metric"
	"colo/perfmodel"
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
	if len(classes) != len(curves) {
		return nil, fmt.Errorf("lfoc: %d classes for %d applications", len(classes), len(curves))
	}
	if p.MaxStreamingPerPart < 1 || p.StreamingWays < 1 || p.MaxStreamingParts < 1 || p.LightPerStreaming < 0 {
		return nil, fmt.Errorf("lfoc: invalid parameters %+v", p)
	}
	var st, cs, ls []int
	for i, c := range classes {
		switch c {
		case Sensitive:
			cs = append(cs, i)
		case Light:
			ls = append(ls, i)
		default: // streaming and unknown
			st = append(st, i)
		}
	}
	if len(cs) == 0 {
		all := make([]int, len(classes))
		for i := range all {
			all[i] = i
		}
		return []Cluster{{Apps: all, Ways: ways}}, nil
	}
	var out []Cluster
	nStr := 0
	used := 0
	if len(st) > 0 {
		parts := min(p.MaxStreamingParts, ceilDiv(len(st), p.MaxStreamingPerPart))
		used = parts * p.StreamingWays
		if plus {
			out = append(out, Cluster{Apps: append([]int(nil), st...), Ways: used})
		} else {
			r := ceilDiv(len(st), parts)
			for k := 0; k < parts; k++ {
				lo, hi := k*r, min((k+1)*r, len(st))
				if lo < hi {
					out = append(out, Cluster{Apps: append([]int(nil), st[lo:hi]...), Ways: p.StreamingWays})
				}
			}
		}
		nStr = len(out)
	}
	remaining := ways - used
	if remaining < 1 {
		return nil, fmt.Errorf("lfoc: the streaming partitions take all %d ways", ways)
	}
	if len(cs) > remaining {
		byS := sortedByDesc(cs, func(i int) float64 { return curves[i].Slowdown[0] })
		cs, ls = byS[:remaining], append(append([]int(nil), ls...), byS[remaining:]...)
		sort.Ints(cs)
	}
	if plus && len(cs) > 1 {
		out = append(out, PairClustering(cs, curves, remaining, p.T1Threshold)...)
	} else {
		sc := make([][]float64, len(cs))
		for i, a := range cs {
			sc[i] = curves[a].Slowdown
		}
		for i, w := range Lookahead(sc, remaining) {
			out = append(out, Cluster{Apps: []int{cs[i]}, Ways: w})
		}
	}
	li := 0
	for k := 0; k < nStr; k++ {
		room := p.MaxStreamingPerPart*out[k].Ways - len(out[k].Apps) + 1
		if room <= 0 {
			continue
		}
		take := min(room*p.LightPerStreaming, len(ls)-li)
		out[k].Apps = append(out[k].Apps, ls[li:li+take]...)
		li += take
	}
	for k := 0; li < len(ls); li, k = li+1, k+1 {
		c := nStr + k%(len(out)-nStr)
		out[c].Apps = append(out[c].Apps, ls[li])
	}
	return out, nil
}

// InitialPartitioning is Algorithm 3 (the first step of pair clustering, seed001.md §1.5,
// errata E2 and E9): UCP-Slowdown lookahead, then up to n "T1" transfers, each moving one
// way to the application i with the highest slowdown from the application j whose loss
// costs least, cost = (S_i(w_i+1) − S_i(w_i)) + (S_j(w_j−1) − S_j(w_j)); j is not eligible
// if it already received a way, holds one way, or would end above S_i(w_i). It stops when
// i already received a way, no j is eligible, or the best cost exceeds threshold (0.07).
// s are the slowdown curves, indexed by ways−1.
func InitialPartitioning(s [][]float64, total int, threshold float64) []int {
	n := len(s)
	w := Lookahead(s, total)
	at := func(i, ways int) float64 { return s[i][ways-1] }
	extra := make([]bool, n)
	for rep := 0; rep < n; rep++ {
		i := 0
		for k := 1; k < n; k++ {
			if at(k, w[k]) > at(i, w[i]) {
				i = k
			}
		}
		if extra[i] || w[i]+1 > len(s[i]) {
			return w
		}
		best, bj := math.Inf(1), -1
		for j := 0; j < n; j++ {
			if j == i || extra[j] || w[j] == 1 || at(j, w[j]-1) > at(i, w[i]) {
				continue
			}
			c := (at(i, w[i]+1) - at(i, w[i])) + (at(j, w[j]-1) - at(j, w[j]))
			if c < best {
				best, bj = c, j
			}
		}
		if bj < 0 || best > threshold {
			return w
		}
		w[i]++
		w[bj]--
		extra[i] = true
	}
	return w
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
	n := len(apps)
	s := make([][]float64, n)
	for i, a := range apps {
		s[i] = curves[a].Slowdown
	}
	at := func(i, w int) float64 { return s[i][w-1] }
	w := InitialPartitioning(s, total, threshold)
	// Pair curves, computed on first use: pc[(i*n+j)*W + k−1] is i's slowdown when i and j
	// (i < j) share k ways, pc[(j*n+i)*W + k−1] is j's.
	W := len(s[0])
	pc := make([]float64, n*n*W)
	have := make([]bool, n*n)
	shares := make([]float64, 2)
	pair := func(i, j, ways int) (float64, float64) {
		a, b := min(i, j), max(i, j)
		if !have[a*n+b] {
			have[a*n+b] = true
			ca, cb := curves[apps[a]], curves[apps[b]]
			oa, ob := (a*n+b)*W, (b*n+a)*W
			perfmodel.SharesSteps(shares, [][]float64{ca.LLCMPKC, cb.LLCMPKC}, W, func(k int, f []float64) {
				pc[oa+k-1] = profile.Interp(ca.Slowdown, f[0])
				pc[ob+k-1] = profile.Interp(cb.Slowdown, f[1])
			})
		}
		return pc[(i*n+j)*W+ways-1], pc[(j*n+i)*W+ways-1]
	}
	// partner[i] = j for merged pairs (−1 alone); w[i] = ways of i's cluster.
	partner := make([]int, n)
	for i := range partner {
		partner[i] = -1
	}
	type snap struct {
		partner []int
		w       []int
	}
	var sols []snap
	record := func() { sols = append(sols, snap{append([]int(nil), partner...), append([]int(nil), w...)}) }
	record()
	// cost1w[i*n+j] (i < j, valid when ok1w) is the extra slowdown of i and j sharing one way.
	cost1w := make([]float64, n*n)
	ok1w := make([]bool, n*n)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if w[i] == 1 && w[j] == 1 {
				si, sj := pair(i, j, 1)
				cost1w[i*n+j], ok1w[i*n+j] = (si+sj)-(at(i, 1)+at(j, 1)), true
			}
		}
	}
	drop := func(x int) {
		for y := 0; y < n; y++ {
			ok1w[min(x, y)*n+max(x, y)] = false
		}
	}
	merged := make([]bool, n)
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	for _, i := range sortedByDesc(all, func(i int) float64 { return at(i, w[i]) }) {
		if merged[i] {
			continue
		}
		costT2, ba, bb := math.Inf(1), -1, -1
		if w[i]+1 <= len(s[i]) {
			best := math.Inf(1)
			for a := 0; a < n; a++ {
				for b := a + 1; b < n; b++ {
					if ok1w[a*n+b] && a != i && b != i && cost1w[a*n+b] < best {
						best, ba, bb = cost1w[a*n+b], a, b
					}
				}
			}
			if ba >= 0 {
				costT2 = (at(i, w[i]+1) - at(i, w[i])) + best
			}
		}
		if costT2 < 0 {
			merged[ba], merged[bb] = true, true
			partner[ba], partner[bb] = bb, ba
			w[ba], w[bb] = 1, 1 // the pair shares one way; the other way goes to i
			w[i]++
			drop(ba)
			drop(bb)
			drop(i)
			record()
			continue
		}
		bestT3, bj := math.Inf(1), -1
		for j := 0; j < n; j++ {
			if j == i || merged[j] {
				continue
			}
			si, sj := pair(i, j, w[i]+w[j])
			if c := si + sj - at(i, w[i]) - at(j, w[j]); c < bestT3 {
				bestT3, bj = c, j
			}
		}
		if bestT3 < 0 {
			merged[i], merged[bj] = true, true
			partner[i], partner[bj] = bj, i
			tw := w[i] + w[bj]
			w[i], w[bj] = tw, tw
			drop(i)
			drop(bj)
			record()
		}
	}
	// Pick the fairest recorded solution, ties to the highest STP.
	bestU, bestSTP, bi := math.Inf(1), math.Inf(-1), 0
	for k, sn := range sols {
		sd := make([]float64, n)
		for i := 0; i < n; i++ {
			if j := sn.partner[i]; j >= 0 {
				sd[i], _ = pair(i, j, sn.w[i])
			} else {
				sd[i] = at(i, sn.w[i])
			}
		}
		u, stp := metric.Unfairness(sd), metric.STP(sd)
		if u < bestU || u == bestU && stp > bestSTP {
			bestU, bestSTP, bi = u, stp, k
		}
	}
	sn := sols[bi]
	var out []Cluster
	for i := 0; i < n; i++ {
		j := sn.partner[i]
		if j >= 0 && j < i {
			continue
		}
		c := Cluster{Apps: []int{apps[i]}, Ways: sn.w[i]}
		if j >= 0 {
			c.Apps = append(c.Apps, apps[j])
		}
		out = append(out, c)
	}
	return out
}
