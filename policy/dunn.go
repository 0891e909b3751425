package policy

import (
	"fmt"
	"math"
	"sort"

	"colo/cbm"
	"colo/perfmodel"
	"colo/profile"
)

// kmeans1D partitions sorted values into k contiguous groups minimising the within-group
// sum of squared deviations — the exact optimum of k-means in one dimension (dynamic
// programming over the sorted order), so the result is deterministic, unlike Lloyd's
// algorithm with random seeds. It returns the start index of every group.
func kmeans1D(v []float64, k int) []int {
	n := len(v)
	pre, pre2 := make([]float64, n+1), make([]float64, n+1)
	for i, x := range v {
		pre[i+1], pre2[i+1] = pre[i]+x, pre2[i]+x*x
	}
	sse := func(i, j int) float64 { // v[i:j]
		s, s2, m := pre[j]-pre[i], pre2[j]-pre2[i], float64(j-i)
		return s2 - s*s/m
	}
	cost := make([][]float64, k+1)
	from := make([][]int, k+1)
	for c := range cost {
		cost[c] = make([]float64, n+1)
		from[c] = make([]int, n+1)
		for j := range cost[c] {
			cost[c][j] = math.Inf(1)
		}
	}
	cost[0][0] = 0
	for c := 1; c <= k; c++ {
		for j := c; j <= n; j++ {
			for i := c - 1; i < j; i++ {
				if x := cost[c-1][i] + sse(i, j); x < cost[c][j]-1e-15 {
					cost[c][j], from[c][j] = x, i
				}
			}
		}
	}
	starts := make([]int, k)
	j := n
	for c := k; c >= 1; c-- {
		starts[c-1] = from[c][j]
		j = from[c][j]
	}
	return starts
}

// dunnIndex is the Dunn index of a partition of sorted 1-D values into contiguous groups:
// the smallest gap between adjacent groups over the largest group span (Dunn 1974; higher
// is better separated). +Inf when every group is a single value.
func dunnIndex(v []float64, starts []int) float64 {
	dmin, dmax := math.Inf(1), 0.0
	for g, s := range starts {
		e := len(v)
		if g+1 < len(starts) {
			e = starts[g+1]
			dmin = math.Min(dmin, v[e]-v[e-1])
		}
		dmax = math.Max(dmax, v[e-1]-v[s])
	}
	if dmax == 0 {
		return math.Inf(1)
	}
	return dmin / dmax
}

// dunnWays maps a cluster's normalised centroid c ∈ [0, 1] of L2-miss stall fraction to a
// way count with PBBCache's fitted curves (seed001.md §2.3): for 11 ways
// round(4.09659516·e^{1.19540837·c} − 2.48157709), for 20 ways
// round(19.26833327·e^{0.67431637·c} − 17.72167744); other caches scale the 11-way curve by
// W/11. Clipped to 1..W.
func dunnWays(c float64, W int) int {
	var x float64
	switch W {
	case 20:
		x = 19.26833327*math.Exp(0.67431637*c) - 17.72167744
	default:
		x = (4.09659516*math.Exp(1.19540837*c) - 2.48157709) * float64(W) / 11
	}
	return max(1, min(W, int(math.Round(x))))
}

// Dunn is Selfa et al.'s policy (PACT'17) as PBBCache runs it (seed001.md §2.3): cluster
// the applications by k-means on their min-max-normalised fraction of cycles stalled on
// L2 misses (read at full ways when n ≤ W, otherwise at their shares with everyone sharing
// the cache), choosing k in 2..n−1 by the Dunn index; order the clusters by centroid,
// descending; size them with dunnWays; hand leftover ways one at a time to the smallest
// clusters; place the masks contiguously where they overlap least, alternating from the
// top and the bottom of the cache, so masks overlap when the sizes sum to more than W.
//
// Deviation: PBBCache's code keeps the k with the lowest Dunn index; the Dunn index is a
// separation measure to maximise (Dunn 1974, as Selfa et al. use it), which colo does.
// k-means is solved exactly in one dimension (kmeans1D).
func Dunn(in Input, _ Options) (*Solution, error) {
	n, W := len(in.Apps), in.Machine.LLC.Ways
	val := make([]float64, n)
	if n <= W {
		for i, t := range in.Apps {
			val[i] = t.Value(profile.StallsL2Miss, W)
		}
	} else {
		sh := perfmodel.Shares(make([]float64, n), columns(in.Apps, profile.LLCMPKC), W)
		for i, t := range in.Apps {
			val[i] = t.At(profile.StallsL2Miss, sh[i])
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range val {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	norm := make([]float64, n)
	for i, x := range val {
		if hi > lo {
			norm[i] = (x - lo) / (hi - lo)
		}
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return norm[idx[a]] < norm[idx[b]] })
	sv := make([]float64, n)
	for i, a := range idx {
		sv[i] = norm[a]
	}
	var starts []int
	switch {
	case hi == lo || n == 1:
		starts = []int{0}
	case n == 2:
		starts = []int{0, 1}
	default:
		best := math.Inf(-1)
		for k := 2; k <= n-1; k++ {
			s := kmeans1D(sv, k)
			if d := dunnIndex(sv, s); d > best {
				best, starts = d, s
			}
		}
	}
	type grp struct {
		apps     []int
		centroid float64
		ways     int
	}
	var gs []grp
	for g, s := range starts {
		e := n
		if g+1 < len(starts) {
			e = starts[g+1]
		}
		var gr grp
		for _, a := range idx[s:e] {
			gr.apps = append(gr.apps, a)
			gr.centroid += norm[a]
		}
		sort.Ints(gr.apps)
		gr.centroid /= float64(e - s)
		gr.ways = dunnWays(gr.centroid, W)
		gs = append(gs, gr)
	}
	sort.SliceStable(gs, func(a, b int) bool { return gs[a].centroid > gs[b].centroid })
	tot := 0
	for _, g := range gs {
		tot += g.ways
	}
	for tot < W {
		order := make([]int, len(gs))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return gs[order[a]].ways < gs[order[b]].ways })
		for _, i := range order {
			if tot == W {
				break
			}
			gs[i].ways++
			tot++
		}
	}
	ways := make([]int, len(gs))
	for i, g := range gs {
		ways[i] = g.ways
	}
	masks := placeLeastOverlap(W, ways)
	cl := make([]Cluster, len(gs))
	for i, g := range gs {
		cl[i] = Cluster{Apps: g.apps, Ways: g.ways, Mask: masks[i]}
	}
	return &Solution{Clusters: cl}, nil
}

// placeLeastOverlap places contiguous masks of the given sizes one after the other where
// they overlap the already placed ones least (sum of per-way use counts), ties broken
// towards the top of the cache for even-numbered clusters and towards the bottom for odd
// ones (PBBCache's minimize_overlapping_partitioning alternates left and right).
func placeLeastOverlap(W int, ways []int) []uint64 {
	use := make([]int, W)
	out := make([]uint64, len(ways))
	for i, w := range ways {
		bestPos, bestCost := -1, math.MaxInt
		for k := 0; k+w <= W; k++ {
			p := k
			if i%2 == 0 {
				p = W - w - k // from the top down
			}
			c := 0
			for b := p; b < p+w; b++ {
				c += use[b]
			}
			if c < bestCost {
				bestPos, bestCost = p, c
			}
		}
		for b := bestPos; b < bestPos+w; b++ {
			use[b]++
		}
		out[i] = uint64(cbm.Run(bestPos, w))
	}
	return out
}

// CPA is Pons et al.'s cache-partitioning approach (TPDS 2020) as PBBCache's ad hoc
// 11-way mask table encodes it (seed001.md §2.5). Classes: critical applications are the
// LFOC+-sensitive ones, split into "sensitive" (slowdown ≥ 1.15 at some w ≥ 2, PBBCache's
// highly-sensitive class) and "medium"; aggressors are squanderers and streaming apps.
// CPA's own classification comes from a file PBBCache does not ship, so colo derives it
// this way; squanderers are light-sharing apps that fill at least half the LLC at full ways
// while still missing (LLCMPKC ≥ 3, LFOC+'s low threshold). With 1–3 critical apps the
// table gives the non-critical mask and one mask per sensitive then medium app; with 0 or
// more than 3, every non-aggressor shares 0x7ff. Squanderers share 0x1; streaming apps take
// the free masks among 0x1, 0x2 one each, the rest join the non-critical cluster.
func CPA(in Input, opt Options) (*Solution, error) {
	W := in.Machine.LLC.Ways
	if W != 11 {
		return nil, fmt.Errorf("cpa's mask table is defined for 11-way caches only (%s has %d ways)", in.Machine.Name, W)
	}
	llcKB := float64(in.Machine.LLC.SizeBytes) / 1024
	var sens, med, squ, str, rest []int
	for i, t := range in.Apps {
		switch Classify(t, opt.Thresholds) {
		case Sensitive:
			high := false
			for w := 2; w <= W; w++ {
				high = high || t.Value(profile.Slowdown, w) >= 1.15
			}
			if high {
				sens = append(sens, i)
			} else {
				med = append(med, i)
			}
		case Streaming, Unknown:
			str = append(str, i)
		default:
			if t.Value(profile.LLCUsageKB, W) >= llcKB/2 && t.Value(profile.LLCMPKC, W) >= 0.3*opt.Thresholds.StreamingLLCMPKC {
				squ = append(squ, i)
			} else {
				rest = append(rest, i)
			}
		}
	}
	table := map[[2]int][]uint64{
		{1, 0}: {0x3f, 0x7f0}, {0, 1}: {0x0ff, 0x700},
		{2, 0}: {0x01f, 0x7f0, 0x7f0}, {1, 1}: {0x01f, 0x7f0, 0x700}, {0, 2}: {0x01f, 0x7f0, 0x700},
		{3, 0}: {0x00f, 0x7f8, 0x7f8, 0x7f8}, {2, 1}: {0x00f, 0x7f8, 0x7f8, 0x600},
		{1, 2}: {0x00f, 0x7f8, 0x7f8, 0x600}, {0, 3}: {0x00f, 0x7f8, 0x600, 0x600},
	}
	mask := make([]uint64, len(in.Apps))
	free := []uint64{0x1, 0x2}
	if len(squ) > 0 {
		free = free[1:]
		for _, a := range squ {
			mask[a] = 0x1
		}
	}
	var nonCrit []int
	for k, a := range str {
		if k < len(free) {
			mask[a] = free[k]
		} else {
			nonCrit = append(nonCrit, a)
		}
	}
	nonCrit = append(nonCrit, rest...)
	crit := append(append([]int(nil), sens...), med...)
	if t, ok := table[[2]int{len(sens), len(med)}]; ok {
		for _, a := range nonCrit {
			mask[a] = t[0]
		}
		for k, a := range crit {
			mask[a] = t[k+1]
		}
	} else {
		for _, a := range append(nonCrit, crit...) {
			mask[a] = 0x7ff
		}
	}
	return fromAppMasks(mask), nil
}

// fromAppMasks groups applications with identical masks into clusters (first appearance).
func fromAppMasks(mask []uint64) *Solution {
	ids := ClusterIDs(mask)
	cl := []Cluster{}
	for a, id := range ids {
		if id == len(cl) {
			cl = append(cl, Cluster{Mask: mask[a], Ways: popcount(mask[a])})
		}
		cl[id].Apps = append(cl[id].Apps, a)
	}
	return &Solution{Clusters: cl}
}
