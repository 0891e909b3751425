package policy

import (
	"math"

	"colo/perfmodel"
	"colo/profile"
)

// lagBound is the STP bound of the simple bandwidth model (MODEL.md §4.1), a Lagrangian
// relaxation over bands of the pressure h. With cache-only slowdowns S_i and demands b_i,
// an allocation x with S(x) = Σb_i > B has pressure h(x) = (Σb_i − B)/Σb_i² and
//
//	STP(x) = Σ_i (1 − b_i·h(x))/S_i,      Σ_i (b_i − h(x)·b_i²) = B   (the definition of h).
//
// So for any multiplier λ and g_x(h, λ) = Σ_i [(1 − b_i·h)/S_i + λ(b_i − h·b_i²)] − λB,
//
//	STP(x) = g_x(h(x), λ),
//
// and g_x is affine in h at fixed λ: if h(x) lies in a band [h_a, h_b],
//
//	STP(x) ≤ max(g_x(h_a, λ), g_x(h_b, λ)) ≤ max(G(h_a, λ), G(h_b, λ)),   G(h, λ) = max_x g_x(h, λ),
//
// and G is a subset DP like the STP bound (every term is additive over the applications,
// so over the clusters: Σ1/S, Σb/S, Σb, Σb² are four cluster-table rows). An allocation
// with S(x) ≤ B has h = 0 and STP = Σ1/S_i ≤ g_x(0, λ) for λ ≤ 0, so a band starting at
// h = 0 takes only λ ≤ 0. The bands cover [P_0, P_max] (busBounds, lowestPressure: every
// allocation's h lies there), so the search's bound is the largest band bound. At a node
// the placed clusters' four sums are exact and G is taken over the rest (the DP tables at
// (rest, ways left)). Each band's λ is chosen at the root (where G is the DP value of the
// whole workload) by bisection on the subgradient S(x*) − h·Q(x*) − B of the maximiser;
// a band whose root bound is already below the incumbent holds no better solution and is
// dropped.
type lagBound struct {
	B     float64
	base  *clusterTable // rows lagA (Σ1/S), lagD (Σb/S), lagS (Σb), lagQ (Σb²)
	bands []lagBand
}

const (
	lagA = iota
	lagD
	lagS
	lagQ
)

// lagBand is one pressure band [ha, hb] with its multiplier and the DP tables of G(ha, λ)
// and G(hb, λ).
type lagBand struct {
	ha, hb, lam float64
	ta, tb      *boundTable
}

// lagLevels is the number of pressure bands of lagBound, lagSteps the bisection steps on
// each band's multiplier (two DPs a step). Measured on the 16-application bench mix at
// 35,000 MB/s: 7 steps 22 s CPU and 61 nodes, 4 steps 17.5 s CPU and 219 nodes.
const (
	lagLevels = 6
	lagSteps  = 4
)

// newLagBound builds the base rows (one pass over the clusters).
func newLagBound(apps []*profile.Table, W int, B float64, jobs int) *lagBound {
	base := buildClusterTables(apps, W, [][]rowOp{{opSum, opSum, opSum, opSum}}, func(i int, f float64, dst [][]float64) {
		s := apps[i].At(profile.Slowdown, f)
		b := apps[i].At(profile.BandwidthMBps, f)
		d := dst[0]
		d[lagA], d[lagD], d[lagS], d[lagQ] = 1/s, b/s, b, b*b
	}, jobs, nil)[0]
	return &lagBound{B: B, base: base}
}

// table returns the cluster table of g(h, λ) (one row) and its DP.
func (g *lagBound) table(h, lam float64, jobs int) (*clusterTable, *boundTable) {
	b := g.base
	W := b.W
	N := len(b.data) / (b.rows * W)
	ct := &clusterTable{n: b.n, W: W, rows: 1, data: make([]float64, N*W)}
	parallelRange(1, N, jobs, 1<<14, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			r := b.data[c*4*W : c*4*W+4*W]
			d := ct.data[c*W : c*W+W]
			for k := range d {
				d[k] = r[k] - h*r[W+k] + lam*(r[2*W+k]-h*r[3*W+k])
			}
		}
	})
	return ct, buildBoundTable(ct, []dpRow{{0, opSum}}, jobs, nil)
}

// rootG returns G(h, λ) of the whole workload and the subgradient ∂G/∂λ = S − h·Q − B of
// one maximiser (found by following the DP back).
func (g *lagBound) rootG(ct *clusterTable, bt *boundTable, h, lam float64) (val, slope float64) {
	n, W := ct.n, ct.W
	full := (1 << uint(n)) - 1
	var S, Q float64
	add := func(c, k int) {
		r := g.base.row(c, lagS)
		S += r[k-1]
		Q += g.base.row(c, lagQ)[k-1]
	}
	// best child of (R, r): the cluster holding R's lowest application and its ways
	pick := func(R, r int) (bc, bk int, bv float64) {
		bv = math.Inf(-1)
		low := R & -R
		rem := R ^ low
		for sub := rem; ; sub = (sub - 1) & rem {
			c := sub | low
			rest := R ^ c
			row := ct.row(c, 0)
			if rest == 0 {
				if v := row[r-1]; v > bv {
					bc, bk, bv = c, r, v
				}
			} else {
				for k := 1; k < r; k++ {
					if v := row[k-1] + bt.at(rest, r-k, 0); v > bv {
						bc, bk, bv = c, k, v
					}
				}
			}
			if sub == 0 {
				break
			}
		}
		return bc, bk, bv
	}
	R, r := full, W
	c, k, v := pick(R, r)
	val = v - lam*g.B
	for {
		add(c, k)
		R, r = R^c, r-k
		if R == 0 {
			break
		}
		c, k, _ = pick(R, r)
	}
	return val, S - h*Q - g.B
}

// build chooses the bands and their multipliers at the root against the incumbent STP inc
// (prune(stp) reports whether a bound stp cannot beat it) over the pressure range
// [lo, hi]. Once late() (a time limit) it stops refining multipliers: every band is still
// covered, with the best multiplier found so far.
func (g *lagBound) build(lo, hi float64, prune func(stp float64) bool, late func() bool, jobs int) {
	if !(hi > lo) {
		hi = lo
	}
	nb := lagLevels
	if hi == lo {
		nb = 1
	}
	type pt struct {
		val, slope float64
		bt         *boundTable
	}
	at := func(h, lam float64) pt {
		ct, bt := g.table(h, lam, jobs)
		v, s := g.rootG(ct, bt, h, lam)
		return pt{v, s, bt}
	}
	// scale of the multiplier: λ·B of the order of the workload's STP
	scale := float64(g.base.n) / g.B / 8
	for i := 0; i < nb; i++ {
		ha := lo + (hi-lo)*float64(i)/float64(nb)
		hb := lo + (hi-lo)*float64(i+1)/float64(nb)
		nonPos := ha <= 0 // the band holds allocations with Σb ≤ B: λ ≤ 0 only
		eval := func(lam float64) (beta, slope float64, pa, pb pt) {
			pa, pb = at(ha, lam), at(hb, lam)
			if pa.val >= pb.val {
				return pa.val, pa.slope, pa, pb
			}
			return pb.val, pb.slope, pa, pb
		}
		lam := 0.0
		beta, slope, pa, pb := eval(lam)
		best := lagBand{ha: ha, hb: hb, lam: lam, ta: pa.bt, tb: pb.bt}
		bestBeta := beta
		consider := func(l, b float64, a, c pt) {
			if b < bestBeta {
				bestBeta, best = b, lagBand{ha: ha, hb: hb, lam: l, ta: a.bt, tb: c.bt}
			}
		}
		if prune(bestBeta) {
			continue
		}
		// bracket: β is convex in λ; move against the subgradient, doubling the step
		dir := -1.0
		if slope < 0 {
			dir = 1
		}
		if nonPos && dir > 0 {
			dir = 0 // λ = 0 is the best admissible
		}
		a, b := lam, lam
		step := scale
		for it := 0; dir != 0 && it < 8 && !prune(bestBeta) && !late(); it++ {
			l := lam + dir*step
			if nonPos {
				l = math.Min(l, 0)
			}
			be, sl, x, y := eval(l)
			consider(l, be, x, y)
			if sl*dir > 0 { // passed the minimum
				a, b = lam, l
				break
			}
			lam, step = l, step*2
			a, b = l, l
		}
		// bisection on the sign of the subgradient
		for it := 0; a != b && it < lagSteps && !prune(bestBeta) && !late(); it++ {
			m := (a + b) / 2
			be, sl, x, y := eval(m)
			consider(m, be, x, y)
			if (sl > 0) == (b > a) {
				b = m
			} else {
				a = m
			}
		}
		if !prune(bestBeta) {
			g.bands = append(g.bands, best)
		}
	}
}

// bound is the band bound of a child whose placed clusters have the sums p (lagA..lagQ)
// and whose rest R gets r ways (R = 0: nothing left).
func (g *lagBound) bound(p *[4]float64, R, r int) float64 {
	out := math.Inf(-1)
	for i := range g.bands {
		bd := &g.bands[i]
		va := p[lagA] - bd.ha*p[lagD] + bd.lam*(p[lagS]-bd.ha*p[lagQ]-g.B)
		vb := p[lagA] - bd.hb*p[lagD] + bd.lam*(p[lagS]-bd.hb*p[lagQ]-g.B)
		if R != 0 {
			va += bd.ta.at(R, r, 0)
			vb += bd.tb.at(R, r, 0)
		}
		out = math.Max(out, math.Max(va, vb))
	}
	return out
}

// add adds cluster c with k ways to the sums p.
func (g *lagBound) add(p *[4]float64, c, k int) {
	r := g.base.data[c*4*g.base.W:]
	W := g.base.W
	for j := 0; j < 4; j++ {
		p[j] += r[j*W+k-1]
	}
}

// useLag reports whether the search uses lagBound: STP under the simple model.
func (s *searchState) useLag() bool {
	return s.obj == MaxSTP && s.bus != nil && s.bus.model == perfmodel.Simple && s.n <= maxLevelApps
}
