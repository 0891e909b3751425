// Package perfmodel is the PBBCache performance model (data/pbbcache-skylake/MODEL.md):
// from the solo per-ways tables of the applications of a workload and a clustering of the
// LLC (clusters of applications sharing k ways), it estimates every application's
// cache-only slowdown (table lookup, Whirlpool-style split of a shared cluster), then its
// bandwidth-contention factor under one of the `simple`, `morad` or `stalls` bus models, and
// the workload metrics (STP, ANTT, unfairness from package metric).
//
// Each equation of MODEL.md is one function here, except the fractional interpolation of a
// per-ways curve (MODEL.md §3.2), which is profile.Interp so that the simulator's table
// workloads use the very same rule, and the slowdown column (MODEL.md §2), derived once when
// a profile is loaded (profile.Slowdown).
//
// The bandwidth functions work on plain numbers so that the simulator can call them:
// BandwidthFactors(model, demands, stallsTotal, stallsMem, limit).
package perfmodel

import (
	"fmt"
	"math"
	"strings"

	"colo/metric"
	"colo/profile"
)

// BWModel names a memory-bandwidth contention model (MODEL.md §4).
type BWModel string

// The bandwidth models. None disables bandwidth contention (B = ∞).
const (
	None   BWModel = "none"
	Simple BWModel = "simple"
	Morad  BWModel = "morad"
	Stalls BWModel = "stalls"
)

// ParseBWModel accepts none, simple, morad or stalls ("" means none).
func ParseBWModel(s string) (BWModel, error) {
	switch BWModel(strings.ToLower(strings.TrimSpace(s))) {
	case "", None:
		return None, nil
	case Simple:
		return Simple, nil
	case Morad:
		return Morad, nil
	case Stalls:
		return Stalls, nil
	}
	return "", fmt.Errorf("unknown bandwidth model %q (want simple, morad, stalls or none)", s)
}

// Shares splits a k-way cluster among the applications whose LLCMPKC curves are given
// (curves[i][w−1] = misses per kilo-cycle at w ways), Whirlpool-style (MODEL.md §3.1;
// seed001.md §1.5 get_scurves): starting from s_i = 0, each of the k ways in turn is split
// in proportion to the miss rate each application would have with one more way,
//
//	m_i = L_i(min(s_i + 1, W)),   s_i ← s_i + m_i / Σ_l m_l,
//
// with L_i linearly interpolated (profile.Interp). The shares sum to k; shares below one
// way are allowed (the rule when there are more applications than ways). When every m_i is
// 0 (PBBCache would divide by zero) the way is split equally. One application alone gets
// the k ways. The result is written to dst (len(curves)) and returned.
func Shares(dst []float64, curves [][]float64, k int) []float64 {
	SharesSteps(dst, curves, k, nil)
	return dst
}

// SharesSteps runs the split of Shares for j = 1..k ways and calls step(j, s) after each
// way with the shares of a j-way cluster (s must not be retained), so that one pass gives
// the split of every cluster size. dst receives the shares of the k-way cluster.
func SharesSteps(dst []float64, curves [][]float64, k int, step func(j int, s []float64)) {
	n := len(curves)
	for i := range dst[:n] {
		dst[i] = 0
	}
	if n == 1 {
		for j := 1; j <= k; j++ {
			dst[0] = float64(j)
			if step != nil {
				step(j, dst[:1])
			}
		}
		return
	}
	var mbuf [32]float64
	m := mbuf[:0]
	if n > len(mbuf) {
		m = make([]float64, 0, n)
	}
	m = m[:n]
	for j := 1; j <= k; j++ {
		tot := 0.0
		for i, c := range curves {
			W := float64(len(c))
			m[i] = profile.Interp(c, math.Min(dst[i]+1, W))
			tot += m[i]
		}
		for i := range m {
			if tot > 0 {
				dst[i] += m[i] / tot
			} else {
				dst[i] += 1 / float64(n)
			}
		}
		if step != nil {
			step(j, dst[:n])
		}
	}
}

// MemStalls is the memory-bound share of the stall cycles that the `stalls` model
// stretches (MODEL.md §4.3): M = min(T, stalls_l3_miss + stalls_store_buf), with T the
// total stall fraction.
func MemStalls(stallsTotal, stallsL3Miss, stallsStoreBuf float64) float64 {
	return math.Min(stallsTotal, stallsL3Miss+stallsStoreBuf)
}

// SimpleFactors is KPart's proportional-reduction model (MODEL.md §4.1): with demands b_i
// and limit B, no effect while Σb_i ≤ B; otherwise with b_max = max b_i, Q = Σb_i²/b_max,
//
//	x_m = (B + Q − Σb_i)/Q,  b_i' = b_i·(1 − (b_i/b_max)(1 − x_m)),  F_i = b_i/b_i'
//
// so that Σb_i' = B and heavier users lose a larger fraction. F_i = 1 for b_i = 0. When the
// reduced bandwidth of an application would be ≤ 0 (demands so far above B that the
// proportional rule breaks down) it returns an error.
func SimpleFactors(dst, demands []float64, limit float64) ([]float64, error) {
	dst = ones(dst, len(demands))
	if noLimit(limit) {
		return dst, nil
	}
	sum, sq, bmax := 0.0, 0.0, 0.0
	for _, b := range demands {
		sum += b
		sq += b * b
		bmax = math.Max(bmax, b)
	}
	if sum <= limit || bmax == 0 {
		return dst, nil
	}
	q := sq / bmax
	xm := (limit + q - sum) / q
	for i, b := range demands {
		if b == 0 {
			continue
		}
		bs := b * (1 - (b/bmax)*(1-xm))
		if bs <= 0 {
			return nil, fmt.Errorf("simple bandwidth model: demand %.0f MB/s of %.0f total is beyond what the proportional rule can share out of %.0f MB/s; raise --max-bw", b, sum, limit)
		}
		dst[i] = b / bs
	}
	return dst, nil
}

// moradShare is the one positive root u of c·u² + c·(1−U)·u + (1−U) = 0 for c = 1 − 1/x
// (MODEL.md §4.2), written with d = −c = 1/x − 1 > 0 and a = 1 − U in the cancellation-free
// form u = 2a / (d·a + √(d²a² + 4da)).
func moradShare(d, a float64) float64 {
	if a <= 0 {
		return 0
	}
	return 2 * a / (d*a + math.Sqrt(d*d*a*a+4*d*a))
}

// MoradFactors is Morad et al.'s shared-bus model (JPDC 2016; MODEL.md §4.2): with
// x_i = b_i/B, find u_i > 0 and U = Σu_i ∈ (0, 1) with
//
//	c_i·u_i² + c_i·(1 − U)·u_i + (1 − U) = 0,   c_i = 1 − 1/x_i,
//
// and return F_i = x_i/u_i (MoradFactorAt at the root U, MoradRoot). It applies whether or
// not Σb_i exceeds B. F_i = 1 for b_i = 0 and for a single application. A demand b_i ≥ B
// is outside the model: error.
func MoradFactors(dst, demands []float64, limit float64) ([]float64, error) {
	dst = ones(dst, len(demands))
	if noLimit(limit) {
		return dst, nil
	}
	U, active, err := MoradRoot(demands, limit)
	if err != nil {
		return nil, err
	}
	if active <= 1 {
		return dst, nil
	}
	for i, b := range demands {
		if b > 0 {
			dst[i] = MoradFactorAt(b/limit, U)
		}
	}
	return dst, nil
}

// MoradFactorAt is one application's Morad factor F = x/u at a given total U, where u is
// the positive root of its quadratic (MODEL.md §4.2). For fixed x it increases with U
// (u(x, U) decreases as 1 − U shrinks), which the exact search uses for its bounds.
func MoradFactorAt(x, U float64) float64 {
	if x <= 0 {
		return 1
	}
	return x / moradShare(1/x-1, 1-U)
}

// MoradShareAt is one application's share u(x, U) of the bus at a given total U: the
// positive root of its quadratic c·u² + c·(1−U)·u + (1−U) = 0, c = 1 − 1/x (MODEL.md §4.2),
// 0 for x ≤ 0 or U ≥ 1. It increases with x and decreases with U, so the physical root of
// MoradRoot satisfies U* ≥ U₀ exactly when Σ_i u(x_i, U₀) ≥ U₀ (g(U) = Σu_i(U) − U is
// strictly decreasing): a test that is additive over the applications, which the exact
// search turns into a dynamic program over subsets.
func MoradShareAt(x, U float64) float64 {
	if x <= 0 {
		return 0
	}
	return moradShare(1/x-1, 1-U)
}

// SimplePressure is the one number of an allocation that the simple model's factors depend
// on besides the application's own demand (MODEL.md §4.1): with S = Σb_i and Q = Σb_i²,
//
//	h = (S − B)/Q  when S > B (else 0),   F_i = 1/(1 − b_i·h),
//
// which is SimpleFactors rewritten (1 − x_m = (S − B)·b_max/Q). F_i grows with h and with
// b_i, and h ≥ h₀ > 0 exactly when Σ_i (b_i − h₀·b_i²) ≥ B: a test additive over the
// applications. h itself is not monotone in the demands (raising a heavy demand can lower
// it), so the search bounds it through that test, never through a monotone argument.
func SimplePressure(demands []float64, limit float64) float64 {
	if noLimit(limit) {
		return 0
	}
	S, Q := 0.0, 0.0
	for _, b := range demands {
		S += b
		Q += b * b
	}
	if S <= limit || Q == 0 {
		return 0
	}
	return (S - limit) / Q
}

// MoradRoot returns the physical total U of the Morad system for the demands (and the
// number of applications with a positive demand). For fixed U each quadratic has exactly
// one positive root u_i(U) (c_i < 0), increasing in 1 − U and in x_i, so
// g(U) = Σu_i(U) − U is strictly decreasing from g(0) > 0 to g(1) = −1: the root is unique
// and found by bisection (PBBCache runs a Newton solver instead; see OversubscribedWarning).
// It is increasing in every demand. With fewer than two active applications U = Σx_i.
func MoradRoot(demands []float64, limit float64) (U float64, active int, err error) {
	lo, hi, active, err := MoradBracket(demands, limit, 200)
	return (lo + hi) / 2, active, err
}

// MoradBracket brackets the root of MoradRoot after at most iters bisection steps:
// lo ≤ U ≤ hi (lo = hi = Σx_i with fewer than two active applications). A few dozen steps
// give a lower bound of U that is good to ~1e-8, which is all the exact search needs.
func MoradBracket(demands []float64, limit float64, iters int) (lo, hi float64, active int, err error) {
	var dbuf [32]float64
	d := dbuf[:0]
	sum := 0.0
	for _, b := range demands {
		x := b / limit
		if x >= 1 {
			return 0, 0, 0, fmt.Errorf("morad bandwidth model: a solo demand of %.0f MB/s is not below the limit %.0f MB/s; raise --max-bw", b, limit)
		}
		if x > 0 {
			active++
			sum += x
			d = append(d, 1/x-1)
		}
	}
	if active <= 1 {
		return sum, sum, active, nil
	}
	lo, hi = moradBisect(d, iters)
	return lo, hi, active, nil
}

// moradG is g(U) = Σ_i u_i(U) − U of MoradRoot, with d_i = 1/x_i − 1.
func moradG(d []float64, U float64) float64 {
	s := -U
	for _, di := range d {
		s += moradShare(di, 1-U)
	}
	return s
}

// moradBisect bisects g on [0, 1] for at most iters steps (until the bracket is 1e-15
// wide) and returns the bracket. The bisection's steps are those of the plain method —
// lo or hi ← mid by the sign of the computed g(mid) — but most of them are decided without
// evaluating g: Newton's method first estimates the root r, and two evaluations certify
// a ≤ r ≤ b around it (computed g(a) > 0, g(b) ≤ 0). Since the exact g has slope ≤ −1
// (Σu_i falls as U grows) and its computed value is within ε = 1e-14·(n+1) of it, every
// mid < a − m has computed g(mid) > 0 and every mid > b + m has computed g(mid) < 0 for
// the margin m = 1e-12 > 2ε: exactly the sign the plain bisection would find there. Only
// the mids within the margin of [a, b] — the last dozen steps — evaluate g, so the
// bracket is bit-for-bit that of the plain bisection (TestMoradBisectIsPlainBisection)
// at about a third of the evaluations.
func moradBisect(d []float64, iters int) (lo, hi float64) {
	m := 1e-12 + 1e-14*float64(len(d)+1)
	skipLo, skipHi := math.Inf(-1), math.Inf(1) // mids below skipLo: g > 0; above skipHi: g < 0
	if len(d) <= 1000 {
		r := moradNewton(d)
		const delta = 1e-13
		if a := r - delta; a > 0 && moradG(d, a) > 0 {
			skipLo = a - m
		}
		if b := r + delta; b < 1 && moradG(d, b) <= 0 {
			skipHi = b + m
		}
	}
	lo, hi = 0.0, 1.0
	for it := 0; it < iters && hi-lo > 1e-15; it++ {
		mid := (lo + hi) / 2
		var pos bool
		switch {
		case mid < skipLo:
			pos = true
		case mid > skipHi:
			pos = false
		default:
			pos = moradG(d, mid) > 0
		}
		if pos {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, hi
}

// moradNewton estimates the root of g by Newton's method from U = 1/2, kept inside the
// bracket it narrows (a bisection step whenever Newton would leave it). With a = 1 − U,
// u solves d·u² + d·a·u − a = 0, so du/da = (1 − d·u)/(2d·u + d·a) and
// g′(U) = −1 − Σ du_i/da. Only an estimate: moradBisect certifies what it uses.
func moradNewton(d []float64) float64 {
	lo, hi, U := 0.0, 1.0, 0.5
	for it := 0; it < 60; it++ {
		a := 1 - U
		g, dg := -U, -1.0
		for _, di := range d {
			u := moradShare(di, a)
			g += u
			dg -= (1 - di*u) / (2*di*u + di*a)
		}
		if g > 0 {
			lo = U
		} else {
			hi = U
		}
		next := U - g/dg
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-U) < 1e-17 || hi-lo < 1e-16 {
			return next
		}
		U = next
	}
	return U
}

// StallsFactor is the stall-weighted Morad factor (MODEL.md §4.3): only the memory-bound
// stall cycles M are stretched by the Morad factor f, out of the total stalls T:
//
//	F = (T + M·(f − 1)) / T.
//
// F = 1 when T = 0.
func StallsFactor(fMorad, stallsTotal, stallsMem float64) float64 {
	if stallsTotal <= 0 {
		return 1
	}
	return (stallsTotal + stallsMem*(fMorad-1)) / stallsTotal
}

// BandwidthFactors returns every application's bandwidth-contention factor F_i ≥ 1
// (final slowdown = cache-only slowdown × F_i, MODEL.md §4) under model, from the solo
// demands b_i (MB/s), total stall fractions T_i and memory-bound stall fractions M_i (see
// MemStalls; used by the stalls model only, may be nil otherwise) and the machine limit B
// (MB/s; ≤ 0 or +Inf means no limit, all factors 1).
func BandwidthFactors(model BWModel, demands, stallsTotal, stallsMem []float64, limit float64) ([]float64, error) {
	return bandwidthFactors(nil, model, demands, stallsTotal, stallsMem, limit)
}

func bandwidthFactors(dst []float64, model BWModel, demands, stallsTotal, stallsMem []float64, limit float64) ([]float64, error) {
	switch model {
	case None, "":
		return ones(dst, len(demands)), nil
	case Simple:
		return SimpleFactors(dst, demands, limit)
	case Morad:
		return MoradFactors(dst, demands, limit)
	case Stalls:
		if len(stallsTotal) != len(demands) || len(stallsMem) != len(demands) {
			return nil, fmt.Errorf("stalls bandwidth model: need total and memory stall fractions for each of the %d applications", len(demands))
		}
		f, err := MoradFactors(dst, demands, limit)
		if err != nil {
			return nil, err
		}
		for i := range f {
			f[i] = StallsFactor(f[i], stallsTotal[i], stallsMem[i])
		}
		return f, nil
	}
	return nil, fmt.Errorf("unknown bandwidth model %q", model)
}

// SaturatedFactors is the bus outside a model's domain (a solo demand at or above B for
// the Morad models, demands beyond what the simple model's proportional rule can share):
// the bus delivers B in all, shared in proportion to the demands, so every application
// with a demand is stretched by the oversubscription and the others not at all:
//
//	F_i = max(1, Σb_j / B) for b_i > 0,  F_i = 1 for b_i = 0.
func SaturatedFactors(dst, demands []float64, limit float64) []float64 {
	dst = ones(dst, len(demands))
	if noLimit(limit) {
		return dst
	}
	sum := 0.0
	for _, b := range demands {
		sum += b
	}
	for i, b := range demands {
		if b > 0 {
			dst[i] = math.Max(1, sum/limit)
		}
	}
	return dst
}

// ContendedFactors is the bandwidth contention a running machine experiences (the
// simulator's bus): BandwidthFactors where the model applies, and outside its domain
// SaturatedFactors (weighted by the memory-bound stalls under the stalls model, as
// StallsFactor weights the Morad factor); inModel is false then. colo eval refuses such
// inputs instead (BandwidthFactors' error), so both agree wherever eval answers. dst is
// reused when large enough.
func ContendedFactors(dst []float64, model BWModel, demands, stallsTotal, stallsMem []float64, limit float64) (f []float64, inModel bool) {
	f, err := bandwidthFactors(dst, model, demands, stallsTotal, stallsMem, limit)
	if err == nil {
		return f, true
	}
	f = SaturatedFactors(dst, demands, limit)
	if model == Stalls && len(stallsTotal) == len(f) && len(stallsMem) == len(f) {
		for i := range f {
			f[i] = StallsFactor(f[i], stallsTotal[i], stallsMem[i])
		}
	}
	return f, false
}

func noLimit(limit float64) bool { return limit <= 0 || math.IsInf(limit, 1) || math.IsNaN(limit) }

func ones(dst []float64, n int) []float64 {
	if cap(dst) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = 1
	}
	return dst
}

// Cluster is a set of applications (indices into the workload) sharing Ways ways.
type Cluster struct {
	Apps []int
	Ways int
}

// Options selects the bandwidth model and the machine's bandwidth limit.
type Options struct {
	BW    BWModel
	MaxBW float64 // MB/s; ≤ 0 means unlimited (no bandwidth contention)
}

// App is the model's estimate for one application.
type App struct {
	Share         float64 // fractional ways it effectively holds in its cluster (f_i)
	SlowdownCache float64 // cache-only slowdown S_i(f_i) (PBBCache "SlowdownNB")
	BandwidthMBps float64 // solo bandwidth at f_i (its demand on the bus)
	StallsTotal   float64 // total stall fraction at f_i
	StallsMem     float64 // memory-bound stall fraction at f_i (MemStalls)
	BWFactor      float64 // bandwidth-contention factor F_i
	Slowdown      float64 // final slowdown S_i·F_i
}

// Result is the evaluation of one workload under one clustering.
type Result struct {
	Apps       []App
	STP        float64
	ANTT       float64
	Unfairness float64
	Jain       float64
	// Warnings are non-fatal remarks, e.g. where PBBCache's Newton solver may land on a
	// non-physical Morad root and report different numbers (OversubscribedWarning).
	Warnings []string
}

// CacheApp is the cache-only part of the model for an application holding a fractional
// share f of ways (MODEL.md §2, §3.2): its slowdown, solo bandwidth and stall fractions at f.
func CacheApp(t *profile.Table, f float64) App {
	st := t.At(profile.StallsTotal, f)
	return App{
		Share:         f,
		SlowdownCache: t.At(profile.Slowdown, f),
		BandwidthMBps: t.At(profile.BandwidthMBps, f),
		StallsTotal:   st,
		StallsMem:     MemStalls(st, t.At(profile.StallsL3Miss, f), t.At(profile.StallsStoreBuf, f)),
	}
}

// Check validates a clustering of n applications on a W-way cache: every application in
// exactly one cluster, every cluster with ≥ 1 application and ≥ 1 way, Σ ways ≤ W.
func Check(n, W int, clusters []Cluster) error {
	seen := make([]bool, n)
	tot := 0
	for ci, c := range clusters {
		if len(c.Apps) == 0 {
			return fmt.Errorf("cluster %d has no applications", ci+1)
		}
		if c.Ways < 1 {
			return fmt.Errorf("cluster %d has %d ways, want ≥ 1", ci+1, c.Ways)
		}
		tot += c.Ways
		for _, a := range c.Apps {
			if a < 0 || a >= n {
				return fmt.Errorf("cluster %d: application index %d out of range 0..%d", ci+1, a, n-1)
			}
			if seen[a] {
				return fmt.Errorf("application %d is in two clusters", a+1)
			}
			seen[a] = true
		}
	}
	for a, s := range seen {
		if !s {
			return fmt.Errorf("application %d is in no cluster", a+1)
		}
	}
	if tot > W {
		return fmt.Errorf("clusters use %d ways, the cache has %d", tot, W)
	}
	return nil
}

// Evaluate applies the whole model (MODEL.md §2–§5) to a workload (one table per
// application, duplicates allowed) under a clustering: per cluster the Whirlpool split,
// per application the interpolated cache-only slowdown, bandwidth and stalls, then the
// bandwidth model over the whole workload, and STP, ANTT, unfairness and Jain of the final
// slowdowns.
func Evaluate(apps []*profile.Table, clusters []Cluster, opt Options) (*Result, error) {
	if len(apps) == 0 {
		return nil, fmt.Errorf("empty workload")
	}
	W := apps[0].Ways()
	for _, t := range apps {
		if t.Ways() != W {
			return nil, fmt.Errorf("profiles of %s and %s have different way counts (%d, %d)", apps[0].Name, t.Name, W, t.Ways())
		}
	}
	if err := Check(len(apps), W, clusters); err != nil {
		return nil, err
	}
	res := &Result{Apps: make([]App, len(apps))}
	for _, c := range clusters {
		curves := make([][]float64, len(c.Apps))
		for i, a := range c.Apps {
			curves[i] = apps[a].Col(profile.LLCMPKC)
		}
		sh := Shares(make([]float64, len(c.Apps)), curves, c.Ways)
		for i, a := range c.Apps {
			res.Apps[a] = CacheApp(apps[a], sh[i])
		}
	}
	if err := res.applyBW(opt); err != nil {
		return nil, err
	}
	return res, nil
}

// applyBW runs the bandwidth model on the cache-only estimates and fills the metrics.
func (r *Result) applyBW(opt Options) error {
	n := len(r.Apps)
	b, st, sm := make([]float64, n), make([]float64, n), make([]float64, n)
	for i, a := range r.Apps {
		b[i], st[i], sm[i] = a.BandwidthMBps, a.StallsTotal, a.StallsMem
	}
	f, err := BandwidthFactors(opt.BW, b, st, sm, opt.MaxBW)
	if err != nil {
		return err
	}
	if (opt.BW == Morad || opt.BW == Stalls) && !noLimit(opt.MaxBW) {
		if w := OversubscribedWarning(b, opt.MaxBW); w != "" {
			r.Warnings = append(r.Warnings, w)
		}
	}
	s := make([]float64, n)
	for i := range r.Apps {
		r.Apps[i].BWFactor = f[i]
		r.Apps[i].Slowdown = r.Apps[i].SlowdownCache * f[i]
		s[i] = r.Apps[i].Slowdown
	}
	r.STP = metric.STP(s)
	r.ANTT = metric.ANTT(s)
	r.Unfairness = metric.Unfairness(s)
	r.Jain = metric.Jain(s)
	return nil
}

// Finish applies the bandwidth model to per-application cache-only estimates (from
// CacheApp) and computes the metrics; the search uses it on candidates it built itself.
func Finish(apps []App, opt Options) (*Result, error) {
	r := &Result{Apps: apps}
	return r, r.applyBW(opt)
}

// OversubscribedWarning returns a warning when the solo demands oversubscribe the bus
// (Σb_i ≥ B) under a Morad-based model, and "" otherwise. PBBCache solves the Morad system
// with a Newton-type solver (sympy nsolve) started at U = Σx_i, u_i = x_i; when Σx_i ≥ 1
// that start lies outside the physical domain 0 < U < 1 and the solver can land on a
// non-physical root, reporting final "slowdowns" below 1 (MODEL.md §4.2: 0.29 for soplex06
// at B = 20,000 on the README workload). colo always uses the unique physical root
// (MoradFactors), which equals PBBCache's wherever PBBCache's is physical; so it corrects
// those cases, and says so with this warning.
func OversubscribedWarning(demands []float64, limit float64) string {
	sum := 0.0
	for _, b := range demands {
		sum += b
	}
	if noLimit(limit) || sum < limit {
		return ""
	}
	return fmt.Sprintf("solo bandwidths sum to %.0f MB/s, at or above --max-bw %.0f: PBBCache's Newton solver may land on a non-physical Morad root here (slowdowns below 1); colo uses the physical root, so its numbers can differ from PBBCache's", sum, limit)
}

// EvaluateMasks is Evaluate for applications given by capacity bitmasks, which may
// overlap partially (Dunn and CPA place overlapping masks, seed001.md §2.3, §2.5). The
// PBBCache model (MODEL.md §3.1) only defines the split of a cluster whose applications
// share identical ways; colo generalises it way by way: the ways are taken from bit 0 up,
// and each way is split among the applications whose masks contain it, in proportion to
// the miss rate each would have with one more way, m_i = L_i(min(s_i + 1, W)). For
// identical masks this is exactly the cluster split of Shares, and for disjoint masks it
// is strict partitioning, so the two evaluations agree wherever both apply.
func EvaluateMasks(apps []*profile.Table, masks []uint64, opt Options) (*Result, error) {
	if len(apps) == 0 || len(masks) != len(apps) {
		return nil, fmt.Errorf("need one mask per application (%d masks, %d applications)", len(masks), len(apps))
	}
	W := apps[0].Ways()
	for i, t := range apps {
		if t.Ways() != W {
			return nil, fmt.Errorf("profiles of %s and %s have different way counts (%d, %d)", apps[0].Name, t.Name, W, t.Ways())
		}
		if masks[i] == 0 || masks[i]>>uint(W) != 0 {
			return nil, fmt.Errorf("application %d (%s): mask %#x is empty or wider than %d ways", i+1, t.Name, masks[i], W)
		}
	}
	s := make([]float64, len(apps))
	m := make([]float64, len(apps))
	for b := 0; b < W; b++ {
		tot, nsh := 0.0, 0
		for i, t := range apps {
			if masks[i]>>uint(b)&1 == 0 {
				continue
			}
			m[i] = t.At(profile.LLCMPKC, math.Min(s[i]+1, float64(W)))
			tot += m[i]
			nsh++
		}
		for i := range apps {
			if masks[i]>>uint(b)&1 == 0 {
				continue
			}
			if tot > 0 {
				s[i] += m[i] / tot
			} else {
				s[i] += 1 / float64(nsh)
			}
		}
	}
	res := &Result{Apps: make([]App, len(apps))}
	for i, t := range apps {
		res.Apps[i] = CacheApp(t, s[i])
	}
	if err := res.applyBW(opt); err != nil {
		return nil, err
	}
	return res, nil
}
