package policy

import (
	"math"

	"colo/perfmodel"
	"colo/profile"
)

// busBounds is a bandwidth model (MODEL.md §4) as the exact search sees it. In every model
// an application's factor depends only on its own values (demand b, stall fractions, all
// functions of its share) and on one number of the whole allocation, the pressure P:
//
//   - morad: P = U, the physical root of the Morad system (perfmodel.MoradRoot);
//     F = F_morad(x, U), x = b/B, increasing in U at fixed x (perfmodel.MoradFactorAt);
//   - stalls: the same U; F = 1 + ρ·(F_morad − 1), ρ = M/T ∈ [0, 1] at the share, increasing
//     in F_morad, so in U;
//   - simple: P = h = (S − B)/Σb² when S = Σb > B, else 0 (perfmodel.SimplePressure);
//     F = 1/(1 − b·h), increasing in h.
//
// So a lower bound P ≥ P₀ gives every application the factor lower bound F(own values, P₀),
// and an upper bound the factor upper bound. The pressure of an allocation is itself
// bounded by a test additive over the applications (perfmodel.MoradShareAt,
// perfmodel.SimplePressure):
//
//	morad, stalls:  U ≥ U₀  ⇔  Σ_i u(x_i, U₀) ≥ U₀
//	simple:         h ≥ h₀  ⇐  Σ_i (b_i − h₀·b_i²) ≥ B   (h₀ > 0)
//
// Σ over placed applications is exact at a node, and the smallest Σ the others can still
// reach is a subset DP like the STP bound (opMinSum): the node's pressure is at least the
// highest level P_l whose test every completion passes — the "best aggregate demand still
// reachable in the subtree". P[0] is a lower bound valid for every allocation without a
// test: first every demand at its minimum over the curve (morad/stalls, whose U grows with
// every demand; (Σ min − B)/Σ max² for simple), then raised by bisection over the test for
// the whole workload (searchState.lowestPressure).
type busBounds struct {
	model perfmodel.BWModel
	B     float64
	// P[0] is valid for every allocation; P[1:] are increasing levels, each valid where its
	// test passes.
	P []float64
	// Pmax bounds the pressure of every allocation from above (+Inf: no bound).
	Pmax  float64
	xmax  []float64 // each application's largest demand over its curve (MB/s)
	xmin  []float64
	inert bool // simple model that no allocation can activate (Σ max demands ≤ B)
}

// newBusBounds returns nil without a bandwidth model.
func newBusBounds(apps []*profile.Table, m perfmodel.Options) *busBounds {
	if m.BW == perfmodel.None || m.BW == "" || m.MaxBW <= 0 || math.IsInf(m.MaxBW, 1) || math.IsNaN(m.MaxBW) {
		return nil
	}
	b := &busBounds{model: m.BW, B: m.MaxBW, Pmax: math.Inf(1)}
	for _, t := range apps {
		bw := t.Col(profile.BandwidthMBps)
		x0 := profile.Interp(bw, 0)
		lo, hi := x0, x0
		for _, v := range bw { // piecewise linear: the extremes are at the breakpoints
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		b.xmin, b.xmax = append(b.xmin, lo), append(b.xmax, hi)
	}
	if b.model == perfmodel.Simple {
		S, Smin, Qmin, Qmax := 0.0, 0.0, 0.0, 0.0
		for i := range b.xmax {
			S += b.xmax[i]
			Smin += b.xmin[i]
			Qmin += b.xmin[i] * b.xmin[i]
			Qmax += b.xmax[i] * b.xmax[i]
		}
		if S <= b.B {
			b.inert = true
			b.P, b.Pmax = []float64{0}, 0
			return b
		}
		// h = (S − B)/Q with S ≤ Σ x_max and Q ≥ max(Σ x_min², S²/n) (Cauchy–Schwarz);
		// n(S − B)/S² is largest at S = 2B.
		n := float64(len(apps))
		h1 := math.Inf(1)
		if Qmin > 0 {
			h1 = (S - b.B) / Qmin
		}
		Sb := math.Min(S, 2*b.B)
		b.Pmax = math.Min(h1, n*(Sb-b.B)/(Sb*Sb))
		h0 := 0.0
		if Smin > b.B && Qmax > 0 {
			h0 = (Smin - b.B) / Qmax
		}
		b.P = []float64{h0}
		return b
	}
	b.P = []float64{0}
	if U, _, err := perfmodel.MoradRoot(b.xmin, b.B); err == nil {
		b.P[0] = U
	}
	if U, _, err := perfmodel.MoradRoot(b.xmax, b.B); err == nil && U < 1 {
		b.Pmax = U
	}
	return b
}

// addLevels adds m levels evenly spaced strictly between P[0] and Pmax (call once).
func (b *busBounds) addLevels(m int) {
	if b.inert || math.IsInf(b.Pmax, 1) || !(b.Pmax > b.P[0]) {
		return
	}
	for g := 1; g <= m; g++ {
		b.P = append(b.P, b.P[0]+(b.Pmax-b.P[0])*float64(g)/float64(m+1))
	}
}

// lowFactor is a lower bound of the factor of an application with cache-only values a
// when the pressure is at least P (+Inf when the simple model cannot share the bus out).
func (b *busBounds) lowFactor(P float64, a *perfmodel.App) float64 {
	var F float64
	if b.model == perfmodel.Simple {
		x := a.BandwidthMBps * P
		if x >= 1 {
			return math.Inf(1)
		}
		F = 1 / (1 - x)
	} else {
		F = math.Max(1, perfmodel.MoradFactorAt(a.BandwidthMBps/b.B, P))
		if b.model == perfmodel.Stalls {
			F = perfmodel.StallsFactor(F, a.StallsTotal, a.StallsMem)
		}
	}
	return math.Max(1, F*(1-1e-9))
}

// highFactor bounds the factor of an application with cache-only values a from above,
// over every allocation (+Inf without a bound).
//   - morad: with a = 1 − U, F − 1 = u(U − u)/(u² + ua + a) ≤ u·U/a ≤ x·U/(1 − U), since
//     the physical root has u ≤ x (F ≥ 1), and U ≤ U_max = U(x^max);
//   - stalls: 1 + ρ(F − 1) with ρ = M/T at the share, through the same bound;
//   - simple: 1/(1 − b·h_max).
func (b *busBounds) highFactor(a *perfmodel.App) float64 {
	return b.highFactorOf(a.BandwidthMBps, a.StallsTotal, a.StallsMem)
}

func (b *busBounds) highFactorOf(bw, T, M float64) float64 {
	if math.IsInf(b.Pmax, 1) {
		return math.Inf(1)
	}
	if b.model == perfmodel.Simple {
		x := bw * b.Pmax
		if x >= 1 {
			return math.Inf(1)
		}
		return 1 / (1 - x) * (1 + 1e-9)
	}
	F := 1 + bw/b.B*b.Pmax/(1-b.Pmax)
	if b.model == perfmodel.Stalls {
		F = perfmodel.StallsFactor(F, T, M)
	}
	return F * (1 + 1e-9)
}

// hiMax bounds highFactor of application i over every share (its largest demand, ρ ≤ 1).
func (b *busBounds) hiMax(i int) float64 { return b.highFactorOf(b.xmax[i], 1, 1) }

// q is an application's term of the test Σq ≥ thr(P) of pressure P at demand bw (MB/s).
func (b *busBounds) q(P, bw float64) float64 {
	if b.model == perfmodel.Simple {
		return bw - P*bw*bw
	}
	return perfmodel.MoradShareAt(bw/b.B, P)
}

// thr is the right-hand side of the test of pressure P, with a margin against rounding.
func (b *busBounds) thr(P float64) float64 {
	if b.model == perfmodel.Simple {
		return b.B * (1 + 1e-12)
	}
	return P + 1e-12
}

// thrBelow is thr with the margin the other way: Σq < thrBelow(P) proves the pressure is
// below P.
func (b *busBounds) thrBelow(P float64) float64 {
	if b.model == perfmodel.Simple {
		return b.B * (1 - 1e-12)
	}
	return P - 1e-12
}

// factorAndQ is lowFactor and q at once (the Morad share u gives both: F = x/u).
func (b *busBounds) factorAndQ(P float64, a *perfmodel.App) (F, q float64) {
	if b.model == perfmodel.Simple {
		return b.lowFactor(P, a), b.q(P, a.BandwidthMBps)
	}
	x := a.BandwidthMBps / b.B
	u := perfmodel.MoradShareAt(x, P)
	F = 1
	if x > 0 {
		F = math.Max(1, x/u)
	}
	if b.model == perfmodel.Stalls {
		F = perfmodel.StallsFactor(F, a.StallsTotal, a.StallsMem)
	}
	return math.Max(1, F*(1-1e-9)), u
}

// levels returns the pressure levels above P[0] (none for nil).
func (b *busBounds) levels() []float64 {
	if b == nil || len(b.P) < 2 {
		return nil
	}
	return b.P[1:]
}
