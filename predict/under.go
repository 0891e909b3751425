package predict

import (
	"fmt"
	"math"
)

// Allocation is what the agent (or a run) has given a tenant A and its competitors on
// one LLC domain: A's L3 ways, and for each competitor the share of its ways that fall
// inside A's mask and its MBA throttle.
type Allocation struct {
	// LLCMB is the domain's LLC size in MB (10^6 bytes); TotalWays its ways.
	LLCMB     float64
	TotalWays int
	// Ways are A's ways (0 or TotalWays: the whole cache, unpartitioned).
	Ways int
	// Overlap[c] is the fraction of competitor c's ways that are also A's (1: shared,
	// 0: disjoint partitions); missing entries are 1.
	Overlap []float64
	// MBA[c] is competitor c's memory-bandwidth throttle as a fraction of unthrottled
	// (1: none); missing entries are 1.
	MBA []float64
}

// Unpartitioned is the allocation of plain sharing (every competitor in A's ways, no MBA).
func Unpartitioned() Allocation { return Allocation{} }

func (a Allocation) overlap(c int) float64 {
	if c < len(a.Overlap) {
		return math.Max(0, math.Min(1, a.Overlap[c]))
	}
	return 1
}

func (a Allocation) mba(c int) float64 {
	if c < len(a.MBA) {
		return math.Max(0, math.Min(1, a.MBA[c]))
	}
	return 1
}

// EffectiveDial is the SoI dial (MB) equivalent to A's situation under the allocation,
// the "capacity-equivalent bubble":
//
//	I_eff = L · (1 − w_A/W) + Σ_c m_c · o_c · I_c
//
// with L the LLC size, w_A of W ways A's partition, I_c competitor c's contentiousness
// score (MB), o_c the share of c's ways inside A's mask and m_c c's MBA fraction.
// Bubble-Up sizes pressure as the LLC footprint of a bubble (Mars et al., MICRO 2011, §3): a partition of
// w_A ways withholds the other (W − w_A)/W of the cache from A exactly as a bubble of that
// footprint would, and CAT keeps a competitor's lines out of ways it does not hold
// (Herdrich et al., HPCA 2016), so only the share of its pressure that lands in A's ways counts; MBA
// slows the competitor's misses, scaling its pressure by m_c to first order. With no
// partition (w_A = W, o_c = m_c = 1) it is the plain sum of scores, Govindan's reduction
// rule for several co-runners (CombineScores). The model leaves out the bandwidth a
// disjoint competitor still takes (it predicts too little slowdown for bandwidth-bound
// pairs under a partition; docs/predict.md gives the measured error).
func EffectiveDial(scores []float64, al Allocation) float64 {
	d := 0.0
	if al.TotalWays > 0 && al.Ways > 0 && al.Ways < al.TotalWays {
		d = al.LLCMB * (1 - float64(al.Ways)/float64(al.TotalWays))
	}
	for c, s := range scores {
		d += al.mba(c) * al.overlap(c) * s
	}
	return d
}

// PredictUnder predicts A's normalised performance (t_iso/t, t_iso with the whole LLC
// and no competitor) next to competitors with the given contentiousness scores under the
// allocation. With A's per-ways curve (its time alone in w ways, Dials = ways ascending,
// the last the whole cache: the allocation probe's or the per-ways tables' measurement)
// the two effects combine as independent slowdowns,
//
//	P̂ = [t_A(W ways) / t_A(w_A ways)] · [t_A(0) / t_A(I_s)],   I_s = Σ_c m_c · o_c · I_c,
//
// the capacity A keeps (read off the ways curve, linear interpolation) times the Bubble-Up
// prediction for the pressure that still lands in A's ways (thesis Eq. 4.2 read at the
// reduced dial); without a ways curve the capacity is folded into the dial instead
// (EffectiveDial). A's sensitivity curve is read by linear interpolation (its isotonic fit
// for MethodMonotone; nearest is not offered since the dials fall between grid points) and
// saturates at its last dial with a note. With Unpartitioned() and one competitor it is
// Predict(a, score, MethodLinear).
func PredictUnder(a Curve, ways *Curve, scores []float64, al Allocation, m Method) (float64, string, error) {
	if len(a.Dials) == 0 {
		return 0, "", fmt.Errorf("%s: empty sensitivity curve", fileOr(a))
	}
	if m == MethodNearest {
		m = MethodLinear
	}
	partitioned := al.TotalWays > 0 && al.Ways > 0 && al.Ways < al.TotalWays
	capacity := 1.0
	d := EffectiveDial(scores, al)
	if partitioned && ways != nil && len(ways.Dials) > 0 {
		full := ways.Perf[len(ways.Perf)-1]
		capacity = NormalisedPerf(full, ways.At(float64(al.Ways)))
		d = EffectiveDial(scores, Allocation{Overlap: al.Overlap, MBA: al.MBA})
	}
	last := a.Dials[len(a.Dials)-1]
	note := ""
	if d > last {
		note = fmt.Sprintf("effective dial %.4g MB beyond the curve's last dial %v MB: read at %v MB (an underestimate of the slowdown)", d, last, last)
		d = last
	}
	p, err := Predict(a, d, m)
	return capacity * p, note, err
}
