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
	specL := []dpRow{{tlInv, opSum}, {tlQ, opMinSum}}
	if unf {
		opsL = append(opsL, opMax)
		specL = append(specL, dpRow{tlMax, opMax})
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
				x := a.SlowdownCache * bus.lowFactor(bus.P[l], &a)
				d := dst[l]
				d[tlInv] = 1 / x
				d[tlQ] = bus.q(l, a.BandwidthMBps)
				if unf {
					d[tlMax] = x
				}
			}
		}
	}
	tabs := buildClusterTables(apps, s.W, ops, val, jobs, tick)
	s.tab = tabs[0]
	s.bnd = buildBoundTable(s.tab, spec0, jobs, tick)
	for l := 1; l <= len(levels); l++ {
		s.lv = append(s.lv, level{thr: bus.thr(l), tab: tabs[l], bnd: buildBoundTable(tabs[l], specL, jobs, tick)})
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
