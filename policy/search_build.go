package policy

import (
	"math"
	"math/bits"

	"colo/perfmodel"
	"colo/profile"
)

// buildTables computes the level-0 cluster and bound tables, ubMin and the tables of
// every pressure level (one pass over the clusters for all of them).
func (s *searchState) buildTables(jobs int, tick func(int64)) {
	unf := s.obj == MinUnf
	apps, bus := s.in.Apps, s.bus
	ops0 := []rowOp{opSum}
	spec0 := []dpRow{{t0Inv, opSum}}
	if unf {
		ops0 = append(ops0, opMax, opMin)
		spec0 = append(spec0, dpRow{t0Max, opMax})
	}
	ops := [][]rowOp{ops0}
	opsL := []rowOp{opSum, opMinSum}
	specL := []dpRow{{tlQ, opMinSum}, {tlInv, opSum}}
	if unf {
		opsL = append(opsL, opMax)
		specL[blLbMax] = dpRow{tlMax, opMax}
	}
	if bus != nil && len(apps) <= maxLevelApps {
		if lo := s.lowestPressure(jobs); lo > bus.P[0] {
			bus.P[0] = lo // every allocation puts at least this pressure on the bus
		}
		nl := levelCount
		if unf {
			nl = levelCountUnf
		}
		if s.useLag() {
			nl = 0 // lagBound replaces the levels
		}
		bus.addLevels(nl)
	}
	levels := bus.levels()
	for range levels {
		ops = append(ops, opsL)
	}
	sd := columns(apps, profile.Slowdown)
	var val appValues
	if bus == nil {
		val = func(i int, f float64, dst [][]float64) {
			x := profile.Interp(sd[i], f)
			d := dst[0]
			d[t0Inv] = 1 / x
			if unf {
				d[t0Max], d[t0Min] = x, x
			}
		}
	} else {
		val = func(i int, f float64, dst [][]float64) {
			a := perfmodel.CacheApp(apps[i], f)
			x := a.SlowdownCache * bus.lowFactor(bus.P[0], &a)
			d := dst[0]
			d[t0Inv] = 1 / x
			if unf {
				d[t0Max], d[t0Min] = x, a.SlowdownCache*bus.highFactor(&a)
			}
			for l := 1; l <= len(levels); l++ {
				F, q := bus.factorAndQ(bus.P[l], &a)
				x := a.SlowdownCache * F
				d := dst[l]
				d[tlInv] = 1 / x
				d[tlQ] = q
				if unf {
					d[tlMax] = x
				}
			}
		}
	}
	tabs := buildClusterTables(apps, s.W, ops, val, jobs, tick)
	s.tab = tabs[0]
	s.stpRow, s.lbRow = b0STP, b0LbMax
	if unf && bus == nil {
		// STP only breaks ties of unfairness: a per-application bound instead of a DP row
		// halves the DP (the O(3^n) part that dominates at 18–20 applications)
		spec0 = spec0[1:]
		s.stpRow, s.lbRow = -1, 0
		s.stpUB = stpUBTable(sd)
	}
	s.bnd = buildBoundTable(s.tab, spec0, jobs, tick)
	for l := 1; l <= len(levels); l++ {
		s.lv = append(s.lv, level{thr: bus.thr(bus.P[l]), tab: tabs[l], bnd: buildBoundTable(tabs[l], specL, jobs, tick)})
	}
	if unf {
		s.ubMin = ubMinTable(apps, sd, bus)
	}
}

// ubMinTable bounds the smallest final slowdown of every set R without application 0:
//
//	ubMin[R] = min_{i∈R} max_{0≤f≤W} S_i(f) · F_high,i
//
// valid because every application's slowdown at any share f is at most the maximum of its
// (piecewise-linear, MODEL.md §3.2) curve, so the smallest slowdown in R is at most the
// smallest of those maxima (times the largest bandwidth factor, busBounds.hiMax, with a
// model). It is nearly exact in practice: the least slowed-down application is usually a
// light-sharing one whose whole curve is close to 1.
func ubMinTable(apps []*profile.Table, sd [][]float64, bus *busBounds) []float64 {
	n := len(apps)
	N := 1 << uint(n)
	maxS := make([]float64, n)
	for i := range apps {
		m := profile.Interp(sd[i], 0)
		for _, x := range sd[i] {
			m = math.Max(m, x)
		}
		if bus != nil {
			m *= bus.hiMax(i)
		}
		maxS[i] = m
	}
	ub := make([]float64, N/2)
	ub[0] = math.Inf(1)
	for R := 2; R < N; R += 2 {
		low := R & -R
		ub[R>>1] = math.Min(ub[(R^low)>>1], maxS[bits.TrailingZeros(uint(low))])
	}
	return ub
}

// stpUBTable bounds the cache-only STP of every set R without application 0:
//
//	stpUB[R] = Σ_{i∈R} 1 / min_{0≤f≤W} S_i(f),
//
// valid because every application's slowdown at any share is at least the minimum of its
// piecewise-linear curve (MODEL.md §3.2: the extremes lie at the breakpoints).
func stpUBTable(sd [][]float64) []float64 {
	n := len(sd)
	N := 1 << uint(n)
	best := make([]float64, n)
	for i := range sd {
		m := profile.Interp(sd[i], 0)
		for _, x := range sd[i] {
			m = math.Min(m, x)
		}
		best[i] = 1 / m
	}
	ub := make([]float64, N/2)
	for R := 2; R < N; R += 2 {
		low := R & -R
		ub[R>>1] = ub[(R^low)>>1] + best[bits.TrailingZeros(uint(low))]
	}
	return ub
}

// lowestPressure is a lower bound of the bus pressure of every allocation, found by
// bisection with the additive test of busBounds over the whole workload: pressure P is
// reached by every allocation when min over allocations of Σq_P ≥ thr(P), the minimum a
// subset DP (opMinSum). Two rounds of three probes narrow [P_0, P_max] to a sixteenth.
// The same probes bound the pressure from above: no allocation reaches P when the maximum
// of Σq_P (opSum) is below thr(P); that lowers bus.Pmax (the factors' upper bounds) and
// the levels are then spread between the two, where they can still separate nodes.
func (s *searchState) lowestPressure(jobs int) float64 {
	bus := s.bus
	lo, hi := bus.P[0], bus.Pmax
	if math.IsInf(hi, 1) || !(hi > lo) {
		return lo
	}
	const probes = 3
	ops := make([][]rowOp, probes)
	for i := range ops {
		ops[i] = []rowOp{opMinSum, opSum}
	}
	full := (1 << uint(s.n)) - 1
	for round := 0; round < 2; round++ {
		var P [probes]float64
		for i := range P {
			P[i] = lo + (hi-lo)*float64(i+1)/(probes+1)
		}
		tabs := buildClusterTables(s.in.Apps, s.W, ops, func(i int, f float64, dst [][]float64) {
			bw := s.in.Apps[i].At(profile.BandwidthMBps, f)
			for j := range dst {
				q := bus.q(P[j], bw)
				dst[j][0], dst[j][1] = q, q
			}
		}, jobs, nil)
		nlo, nhi := lo, hi
		for j := probes - 1; j >= 0; j-- {
			bt := buildBoundTable(tabs[j], []dpRow{{0, opMinSum}, {1, opSum}}, jobs, nil)
			least, most := math.Inf(1), math.Inf(-1)
			rem := full ^ 1
			for sub := rem; ; sub = (sub - 1) & rem {
				c := sub | 1
				rest := full ^ c
				q := tabs[j].row(c, 0)
				if rest == 0 {
					least = math.Min(least, q[s.W-1])
					most = math.Max(most, q[s.W-1])
				} else {
					for k := 1; k < s.W; k++ {
						least = math.Min(least, q[k-1]+bt.at(rest, s.W-k, 0))
						most = math.Max(most, q[k-1]+bt.at(rest, s.W-k, 1))
					}
				}
				if sub == 0 {
					break
				}
			}
			if most < bus.thrBelow(P[j]) {
				nhi = P[j] // no allocation reaches P[j]
			}
			if least >= bus.thr(P[j]) {
				nlo = math.Max(nlo, P[j])
			}
		}
		lo, hi = nlo, nhi
	}
	bus.Pmax = hi
	return lo
}
