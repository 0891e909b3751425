package policy

import (
	"math"

	"colo/perfmodel"
	"colo/profile"
)

// clusterCurve is the combined per-ways curve of a group of applications sharing w = 1..W
// ways: Σ_i X_i(f_i(w)), with the shares f_i(w) split Whirlpool-style on the split curves
// (perfmodel.SharesSteps) and each X_i interpolated at its share.
func clusterCurve(split, value [][]float64, W int) []float64 {
	out := make([]float64, W)
	perfmodel.SharesSteps(make([]float64, len(split)), split, W, func(k int, s []float64) {
		t := 0.0
		for i, f := range s {
			t += profile.Interp(value[i], f)
		}
		out[k-1] = t
	})
	return out
}

// KPart is El-Sayed et al.'s hierarchical clustering (HPCA'18) as PBBCache runs it
// (seed001.md §2.4): starting from one cluster per application, repeatedly merge the two
// clusters whose combined LLCMPKI curve (Whirlpool split on LLCMPKI, as PBBCache's kpart
// does) is closest to their best partitioned curve,
//
//	distance(A, B) = Σ_{w=1..W} |combined_{A∪B}(w) − partitioned_{A,B}(w)|,
//
// where partitioned(w) is the summed LLCMPKI under the lookahead split of w ways between A
// and B (the combined value at w = 1). At every level with no more clusters than ways, the
// ways are split among the clusters by lookahead on their STP curves (cache-only, LLCMPKC
// split, negated so that lower is better), and the level is evaluated with the full model
// (in.Model, bandwidth included, standing in for KPart's own bandwidth scaling); the level
// with the highest STP wins (ties: more clusters).
func KPart(in Input, _ Options) (*Solution, error) {
	n, W := len(in.Apps), in.Machine.LLC.Ways
	groups := make([][]int, n)
	for i := range groups {
		groups[i] = []int{i}
	}
	mpki := func(g []int) []float64 {
		split := make([][]float64, len(g))
		for k, a := range g {
			split[k] = in.Apps[a].Col(profile.LLCMPKI)
		}
		return clusterCurve(split, split, W)
	}
	stpCurve := func(g []int) []float64 {
		split, val := make([][]float64, len(g)), make([][]float64, len(g))
		for k, a := range g {
			split[k] = in.Apps[a].Col(profile.LLCMPKC)
			inv := make([]float64, W)
			for w, s := range in.Apps[a].Col(profile.Slowdown) {
				inv[w] = -1 / s
			}
			val[k] = inv
		}
		return clusterCurve(split, val, W)
	}
	curves := make([][]float64, n)
	for i, g := range groups {
		curves[i] = mpki(g)
	}
	var best *Solution
	bestSTP := math.Inf(-1)
	var nodes int64
	level := func() error {
		if len(groups) > W {
			return nil
		}
		sc := make([][]float64, len(groups))
		for i, g := range groups {
			sc[i] = stpCurve(g)
		}
		ways := Lookahead(sc, W)
		cl := make([]Cluster, len(groups))
		for i, g := range groups {
			cl[i] = Cluster{Apps: append([]int(nil), g...), Ways: ways[i]}
		}
		s, err := packed(in.Machine, cl)
		if err != nil {
			return err
		}
		r, err := Evaluate(in, s)
		if err != nil {
			return err
		}
		nodes++
		if r.STP > bestSTP {
			best, bestSTP = s, r.STP
		}
		return nil
	}
	if err := level(); err != nil {
		return nil, err
	}
	for len(groups) > 1 {
		bd, ba, bb := math.Inf(1), -1, -1
		var bc []float64
		for a := 0; a < len(groups); a++ {
			for b := a + 1; b < len(groups); b++ {
				g := append(append([]int(nil), groups[a]...), groups[b]...)
				comb := mpki(g)
				d := 0.0
				for w := 1; w <= W; w++ {
					part := comb[0]
					if w > 1 {
						ws := Lookahead([][]float64{curves[a], curves[b]}, w)
						part = curves[a][ws[0]-1] + curves[b][ws[1]-1]
					}
					d += math.Abs(comb[w-1] - part)
				}
				if d < bd {
					bd, ba, bb, bc = d, a, b, comb
				}
			}
		}
		groups[ba] = append(groups[ba], groups[bb]...)
		curves[ba] = bc
		groups = append(groups[:bb], groups[bb+1:]...)
		curves = append(curves[:bb], curves[bb+1:]...)
		if err := level(); err != nil {
			return nil, err
		}
	}
	best.Nodes = nodes
	return best, nil
}
