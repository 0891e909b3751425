package policy

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"

	"colo/perfmodel"
	"colo/profile"
)

// MaxOptcApps is the largest workload the exact clustering search accepts: its tables
// take about 4·W·8·2^n bytes (about 0.4 GB at n = 20 on 11 ways, 1.6 GB at 22).
const MaxOptcApps = 22

// OptcSTP is the STP-optimal clustering over every clustering and way split (PBBCache
// optc-stp), found by Search.
func OptcSTP(in Input, opt Options) (*Solution, error) { return Search(in, MaxSTP, opt) }

// OptcUnf is the fairness-optimal clustering (lowest unfairness, ties to the highest STP;
// PBBCache optc-unf, the LFOC+ paper's Best-Static), found by Search.
func OptcUnf(in Input, opt Options) (*Solution, error) { return Search(in, MinUnf, opt) }

// clusterTable holds, for every non-empty subset c of the workload (bit i = application
// i) and every way count k = 1..W, the cache-only aggregates of c sharing k ways
// (Whirlpool split, MODEL.md §3): Σ 1/S_i, max S_i and min S_i. There are only 2^n − 1
// distinct clusters, so each is computed once — PBBCache recomputes a cluster every time
// it appears in one of the Bell(n) clusterings. The three rows of a cluster are stored
// together (stride 3W, or W when only Σ 1/S is needed) for locality.
type clusterTable struct {
	n, W, stride int
	data         []float64
}

// at returns the aggregates of cluster c at k ways (mx, mn are ±Inf without min/max rows).
func (t *clusterTable) at(c, k int) (inv, mx, mn float64) {
	b := c*t.stride + k - 1
	if t.stride == t.W {
		return t.data[b], math.Inf(-1), math.Inf(1)
	}
	return t.data[b], t.data[b+t.W], t.data[b+2*t.W]
}

// With a bandwidth model, lowF and highF(i, f) bound application i's bandwidth factor at
// share f (bandwidthBounds): Σ 1/S and max S are taken of S·lowF and min S of S·highF,
// which keeps them valid bounds of the final values (final S = S·F).
func buildClusterTable(apps []*profile.Table, W int, needMinMax bool, lowF, highF func(i int, f float64) float64, jobs int, tick func(int64)) *clusterTable {
	n := len(apps)
	N := 1 << uint(n)
	t := &clusterTable{n: n, W: W, stride: W}
	if needMinMax {
		t.stride = 3 * W
	}
	t.data = make([]float64, N*t.stride)
	mpkc := columns(apps, profile.LLCMPKC)
	sd := columns(apps, profile.Slowdown)
	parallelRange(1, N, jobs, 4096, func(lo, hi int) {
		idx := make([]int, 0, n)
		curves := make([][]float64, 0, n)
		dst := make([]float64, n)
		for c := lo; c < hi; c++ {
			idx, curves = idx[:0], curves[:0]
			for m := uint(c); m != 0; m &= m - 1 {
				i := bits.TrailingZeros(m)
				idx = append(idx, i)
				curves = append(curves, mpkc[i])
			}
			base := c * t.stride
			perfmodel.SharesSteps(dst[:len(idx)], curves, W, func(k int, s []float64) {
				inv, mx, mn := 0.0, math.Inf(-1), math.Inf(1)
				for j, f := range s {
					x := profile.Interp(sd[idx[j]], f)
					if lowF == nil {
						mn = math.Min(mn, x)
					} else {
						if needMinMax {
							mn = math.Min(mn, x*highF(idx[j], f))
						}
						x *= lowF(idx[j], f)
					}
					inv += 1 / x
					mx = math.Max(mx, x)
				}
				t.data[base+k-1] = inv
				if needMinMax {
					t.data[base+W+k-1], t.data[base+2*W+k-1] = mx, mn
				}
			})
		}
		if tick != nil {
			tick(int64(hi - lo))
		}
	})
	return t
}

// boundTables are, for every subset R of the workload and r = 1..W, the exact extremes of
// the cache-only model over every way to cluster R into clusters using exactly r ways:
//
//	stp[R][r]   = max Σ_{i∈R} 1/S_i    (the best cache-only STP of R on r ways)
//	lbMax[R][r] = min max_{i∈R} S_i    (no solution of R on r ways has a lower maximum)
//
// computed by dynamic programming over subsets: the cluster holding R's lowest
// application is some c ⊆ R with k ways, and the rest R∖c is solved on r − k ways,
//
//	stp[R][r] = max_{c∋low(R), k} inv[c][k] + stp[R∖c][r−k]   (and lbMax likewise with max/min),
//
// which is exact because Σ and max decompose over disjoint clusters and the cache-only
// slowdown of an application depends only on its own cluster. Nothing here assumes the
// curves are monotone in ways (42 of the 55 slowdown curves of the data set are not):
// every (c, k) is enumerated. Cost: Σ_R 2^{|R|−1} = (3^n − 1)/2 cluster choices, each
// combined with W(W−1)/2 way pairs. Only sets without application 0 are needed — the
// search always places application 0 first, so no remaining set ever contains it — which
// cuts the cost to (3^{n−1} − 1)/2 and the memory by half (rows indexed by R/2). Rows of
// one R are stored together (stride 2(W+1)).
//
// The minimum slowdown is bounded more cheaply, without a DP over ways:
//
//	ubMin[R] = min_{i∈R} max_{0<f≤W} S_i(f)
//
// valid because every application's slowdown at any share f is at most the maximum of its
// (piecewise-linear, MODEL.md §3.2) curve, so the smallest slowdown in R is at most the
// smallest of those maxima (times the largest bandwidth factor, hiMax, with a model). It is nearly exact in practice: the least slowed-down
// application is usually a light-sharing one whose whole curve is close to 1.
type boundTables struct {
	W, stride int
	data      []float64
	ubMin     []float64 // per R; nil for MaxSTP
}

// at returns the bounds of R on r ways (lbMax, ubMin are ±Inf when not computed).
func (b *boundTables) at(R, r int) (stp, lbMax, ubMin float64) {
	i := (R>>1)*b.stride + r
	if b.ubMin == nil {
		return b.data[i], math.Inf(-1), math.Inf(1)
	}
	return b.data[i], b.data[i+b.W+1], b.ubMin[R>>1]
}

func buildBounds(t *clusterTable, apps []*profile.Table, needMinMax bool, hiMax func(int) float64, jobs int, tick func(int64)) *boundTables {
	n, W := t.n, t.W
	N := 1 << uint(n)
	W1 := W + 1
	b := &boundTables{W: W, stride: W1}
	if needMinMax {
		b.stride = 2 * W1
		maxS := make([]float64, n)
		for i, a := range apps {
			sd := a.Col(profile.Slowdown)
			m := profile.Interp(sd, 0)
			for _, x := range sd {
				m = math.Max(m, x)
			}
			if hiMax != nil {
				m *= hiMax(i)
			}
			maxS[i] = m
		}
		b.ubMin = make([]float64, N/2)
		b.ubMin[0] = math.Inf(1)
		for R := 2; R < N; R += 2 {
			low := bits.TrailingZeros(uint(R))
			b.ubMin[R>>1] = math.Min(b.ubMin[(R&(R-1))>>1], maxS[low])
		}
	}
	b.data = make([]float64, N/2*b.stride)
	byPop := make([][]int, n+1)
	for R := 2; R < N; R += 2 {
		p := bits.OnesCount(uint(R))
		byPop[p] = append(byPop[p], R)
	}
	TS, BS := t.stride, b.stride
	for p := 1; p <= n; p++ {
		layer := byPop[p]
		parallelRange(0, len(layer), jobs, max(1, 1<<16>>uint(min(p, 16))), func(lo, hi int) {
			acc := make([]float64, BS)
			stp := acc[0:W1]
			var lbm []float64
			if needMinMax {
				lbm = acc[W1 : 2*W1]
			}
			for _, R := range layer[lo:hi] {
				for r := 0; r < W1; r++ {
					stp[r] = math.Inf(-1)
					if needMinMax {
						lbm[r] = math.Inf(1)
					}
				}
				low := R & -R
				rem := R ^ low
				for sub := rem; ; sub = (sub - 1) & rem {
					c := sub | low
					rest := R ^ c
					cb := t.data[c*TS : c*TS+TS]
					inv := cb[:W]
					if rest == 0 {
						for k := 1; k <= W; k++ {
							stp[k] = math.Max(stp[k], inv[k-1])
							if needMinMax {
								lbm[k] = math.Min(lbm[k], cb[W+k-1])
							}
						}
					} else {
						rb := b.data[(rest>>1)*BS : (rest>>1)*BS+BS]
						rstp := rb[:W1]
						for k := 1; k < W; k++ {
							m := W - k
							vk := inv[k-1]
							dst := stp[k+1 : k+1+m]
							src := rstp[1 : 1+m]
							src = src[:len(dst)]
							for j := range dst {
								if x := vk + src[j]; x > dst[j] {
									dst[j] = x
								}
							}
						}
						if needMinMax {
							smx := cb[W : 2*W]
							rlm := rb[W1 : 2*W1]
							for k := 1; k < W; k++ {
								m := W - k
								mk := smx[k-1]
								d1 := lbm[k+1 : k+1+m]
								s1 := rlm[1 : 1+m]
								s1 = s1[:len(d1)]
								for j := range d1 {
									x := s1[j]
									if mk > x {
										x = mk
									}
									if x < d1[j] {
										d1[j] = x
									}
								}
							}
						}
					}
					if sub == 0 {
						break
					}
				}
				copy(b.data[(R>>1)*BS:(R>>1)*BS+BS], acc)
			}
			if tick != nil {
				tick(int64(hi-lo) << uint(p-1))
			}
		})
	}
	return b
}

// parallelRange runs f over [lo, hi) in chunks of at most chunk, on jobs goroutines.
func parallelRange(lo, hi, jobs, chunk int, f func(lo, hi int)) {
	if jobs <= 1 || hi-lo <= chunk {
		for s := lo; s < hi; s += chunk {
			f(s, min(s+chunk, hi))
		}
		return
	}
	var next atomic.Int64
	next.Store(int64(lo))
	var wg sync.WaitGroup
	for j := 0; j < jobs; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				s := int(next.Add(int64(chunk))) - chunk
				if s >= hi {
					return
				}
				f(s, min(s+chunk, hi))
			}
		}()
	}
	wg.Wait()
}

// bandwidthBounds bounds the bandwidth factor F_i of an application at share f under any
// allocation of the others, so that the cache-only tables give valid bounds of the final
// objective. Both bounds are nil without a bandwidth model (F = 1).
//
// Lower bound lowF(i, f) (for STP and the maximum slowdown):
//   - simple: 1 (the model only reduces bandwidth; every factor is ≥ 1).
//   - morad: the root U grows with every demand (perfmodel.MoradRoot) and every application
//     of the workload is in every solution, so U ≥ U_min = U(x^min), x_j^min the minimum of
//     j's bandwidth curve over 0..W ways (including its extrapolation below one way). For
//     fixed x, F(x, U) grows with U (perfmodel.MoradFactorAt), and application i's own demand
//     at share f is known exactly, so F_i ≥ max(1, F(x_i(f), U_min)).
//   - stalls: 1 + ρ_i(f)·(F − 1), ρ = M/T ≥ 0, grows with F: the same bound through it.
//
// Upper bound highF(i, f) (for the minimum slowdown):
//   - simple: +Inf (none derived; the search stays exact, it only prunes less).
//   - morad: with a = 1 − U, F − 1 = u(U − u)/(u² + ua + a) ≤ u·U/a ≤ x·U/(1 − U), since the
//     physical root has u ≤ x (F ≥ 1); and U ≤ U_max = U(x^max). So F_i ≤ 1 + x_i(f)·U_max/(1 − U_max),
//     tight for the light applications that usually hold the minimum.
//   - stalls: 1 + ρ(F − 1) with ρ = M/T at share f, through the same bound.
//
// hiMax(i) bounds highF(i, f) over every f (x_i^max in place of x_i(f), ρ ≤ 1).
func bandwidthBounds(apps []*profile.Table, m perfmodel.Options) (lowF, highF func(i int, f float64) float64, hiMax func(i int) float64) {
	if m.BW == perfmodel.None || m.BW == "" || m.MaxBW <= 0 || math.IsInf(m.MaxBW, 1) {
		return nil, nil, nil
	}
	one := func(int, float64) float64 { return 1 }
	inf := func(int, float64) float64 { return math.Inf(1) }
	if m.BW == perfmodel.Simple {
		return one, inf, func(int) float64 { return math.Inf(1) }
	}
	xmax, xmin := make([]float64, len(apps)), make([]float64, len(apps))
	for i, t := range apps {
		bw := t.Col(profile.BandwidthMBps)
		x0 := profile.Interp(bw, 0)
		xmax[i], xmin[i] = x0, x0
		for _, v := range bw {
			xmax[i], xmin[i] = math.Max(xmax[i], v), math.Min(xmin[i], v)
		}
	}
	stalls := m.BW == perfmodel.Stalls
	through := func(t *profile.Table, f, F float64) float64 {
		if stalls {
			a := perfmodel.CacheApp(t, f)
			return perfmodel.StallsFactor(F, a.StallsTotal, a.StallsMem)
		}
		return F
	}
	lowF, highF, hiMax = one, inf, func(int) float64 { return math.Inf(1) }
	if Umin, _, err := perfmodel.MoradRoot(xmin, m.MaxBW); err == nil {
		lowF = lowFactorAt(apps, m, Umin)
	}
	if Umax, _, err := perfmodel.MoradRoot(xmax, m.MaxBW); err == nil && Umax < 1 {
		k := Umax / (1 - Umax)
		highF = func(i int, f float64) float64 {
			t := apps[i]
			F := 1 + t.At(profile.BandwidthMBps, f)/m.MaxBW*k
			return through(t, f, F) * (1 + 1e-9)
		}
		hiMax = func(i int) float64 { return (1 + xmax[i]/m.MaxBW*k) * (1 + 1e-9) }
	}
	return lowF, highF, hiMax
}

// lowFactorAt is lowF of bandwidthBounds for a given lower bound U0 of the bus total:
// max(1, F(x_i(f), U0)), through the stalls weighting for stalls. It is valid wherever the
// true total is at least U0 (F grows with U at fixed x).
func lowFactorAt(apps []*profile.Table, m perfmodel.Options, U0 float64) func(i int, f float64) float64 {
	return func(i int, f float64) float64 {
		t := apps[i]
		F := math.Max(1, perfmodel.MoradFactorAt(t.At(profile.BandwidthMBps, f)/m.MaxBW, U0))
		if m.BW == perfmodel.Stalls {
			a := perfmodel.CacheApp(t, f)
			F = perfmodel.StallsFactor(F, a.StallsTotal, a.StallsMem)
		}
		return math.Max(1, F*(1-1e-9))
	}
}

// stpLevel is an STP bound table computed with the factors' lower bound at bus total U:
// valid for the applications not yet placed at any node whose U_node ≥ U.
type stpLevel struct {
	U   float64
	bnd *boundTables
}

// stpLevels extra STP tables are built for the refined bound when the workload has at most
// maxLevelApps applications (each level costs one more table and DP).
const (
	stpLevels    = 6
	maxLevelApps = 16
)

func (s *searchState) xminMBps() []float64 {
	out := make([]float64, len(s.xmin))
	for i, x := range s.xmin {
		out[i] = x * s.in.Model.MaxBW
	}
	return out
}

// searchState is shared by the workers of one search.
type searchState struct {
	in   Input
	obj  Objective
	W    int
	tab  *clusterTable
	bnd  *boundTables
	fast bool // no bandwidth model: leaves are scored from the tables
	// refine enables the per-node STP bound with a Morad-based model (refineSTP).
	refine bool
	xmin   []float64 // each application's smallest demand / B
	// xminUpTo[i][r] is application i's smallest demand (MB/s) at any share f ≤ r ways.
	xminUpTo [][]float64
	levels   []stpLevel // increasing U; levels[0] is the global U_min (s.bnd)
	mu       sync.Mutex
	best     []choice // incumbent, nil if none
	bu, bs   float64
	// incumbent objective for lock-free pruning (bits of float64)
	incU, incS atomic.Uint64
	err        error
}

type choice struct {
	c uint32 // cluster subset
	k int8   // ways
}

const eps = 1e-9

// bound returns the optimistic (unfairness, STP) of any completion of a partial solution
// with aggregates (inv, mx, mn) whose remaining applications R get exactly r ways.
// Validity: final slowdowns are cache-only slowdowns S times bandwidth factors F with
// lowF ≤ F ≤ highF (bandwidthBounds; both 1 without a model), and the tables hold S·lowF
// for Σ 1/S and max S and S·highF for min S. So the final STP is at most inv + stp[R][r],
// the final maximum slowdown is at least max(mx, lbMax[R][r]) and the final minimum at most
// min(mn, ubMin[R]).
func (s *searchState) bound(R, r int, inv, mx, mn float64) (u, stp float64) {
	stp = inv
	if R != 0 {
		bs, lm, um := s.bnd.at(R, r)
		stp += bs
		mx, mn = math.Max(mx, lm), math.Min(mn, um)
	}
	if s.obj == MinUnf {
		u = mx / mn
	}
	return u, stp
}

// prune reports whether a subtree with optimistic (u, stp) cannot beat the incumbent.
// Margins of eps keep exact ties (and rounding differences between the tables and a leaf's
// own evaluation) in the search.
func (s *searchState) prune(u, stp float64) bool {
	bu := math.Float64frombits(s.incU.Load())
	bs := math.Float64frombits(s.incS.Load())
	if s.obj == MaxSTP {
		return stp < bs-eps
	}
	return u > bu*(1+eps) || u >= bu*(1-eps) && stp < bs-eps
}

// leaf scores a complete solution and offers it as incumbent.
func (s *searchState) leaf(path []choice, inv, mx, mn float64) {
	var u, stp float64
	if s.fast {
		u, stp = mx/mn, inv
	} else {
		cl := make([]perfmodel.Cluster, len(path))
		for i, ch := range path {
			cl[i] = perfmodel.Cluster{Apps: appsOf(uint(ch.c)), Ways: int(ch.k)}
		}
		r, err := perfmodel.Evaluate(s.in.Apps, cl, s.in.Model)
		if err != nil {
			s.mu.Lock()
			if s.err == nil {
				s.err = err
			}
			s.mu.Unlock()
			return
		}
		u, stp = r.Unfairness, r.STP
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.best == nil || s.obj.Better(u, stp, s.bu, s.bs) ||
		!s.obj.Better(s.bu, s.bs, u, stp) && lessPath(path, s.best) {
		s.best = append([]choice(nil), path...)
		s.bu, s.bs = u, stp
		s.incU.Store(math.Float64bits(u))
		s.incS.Store(math.Float64bits(stp))
	}
}

// lessPath orders equally good solutions so that the answer does not depend on which
// worker found it first.
func lessPath(a, b []choice) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i].c != b[i].c {
			return a[i].c < b[i].c
		}
		if a[i].k != b[i].k {
			return a[i].k < b[i].k
		}
	}
	return len(a) < len(b)
}

func appsOf(c uint) []int {
	var out []int
	for ; c != 0; c &= c - 1 {
		out = append(out, bits.TrailingZeros(c))
	}
	return out
}

// dfs explores every completion of path: the next cluster holds the lowest remaining
// application (so every clustering is generated once) and takes k ways; the last cluster
// takes exactly the ways left.
// scratch holds, per worker, the model's values of the applications placed so far.
type scratch struct {
	apps   []perfmodel.App
	dem    []float64
	curves [][]float64
	idx    []int
	sh     []float64
}

func newScratch(n int) *scratch {
	return &scratch{apps: make([]perfmodel.App, n), dem: make([]float64, n), sh: make([]float64, n)}
}

// refineSTP is a tighter STP bound for a node under a Morad-based model, used after the
// table bound passed: the applications already placed (the complement of rest, including
// cluster c with k ways, whose values it computes) have exact demands, the others at
// least their smallest demand at a share of at most the rr ways left (a share never
// exceeds its cluster's ways), so the bus total is at least U_node = U(those demands) — U
// grows with every demand — and each placed application's factor is at least F(x_i, U_node)
// (increasing in U at fixed x; through the stalls weighting for stalls). The rest keeps
// its table bound stp[rest][r'], from the STP level with the largest U ≤ U_node: the rest's
// factors are at least F(x, U_level) since the true total is at least U_node.
func (s *searchState) refineSTP(sc *scratch, c, k, rest, rr int) float64 {
	sc.idx, sc.curves = sc.idx[:0], sc.curves[:0]
	for m := uint(c); m != 0; m &= m - 1 {
		i := bits.TrailingZeros(m)
		sc.idx = append(sc.idx, i)
		sc.curves = append(sc.curves, s.in.Apps[i].Col(profile.LLCMPKC))
	}
	sh := perfmodel.Shares(sc.sh[:len(sc.idx)], sc.curves, k)
	for j, i := range sc.idx {
		sc.apps[i] = perfmodel.CacheApp(s.in.Apps[i], sh[j])
	}
	B := s.in.Model.MaxBW
	placed := ((1 << uint(len(s.in.Apps))) - 1) ^ rest
	for i := range sc.dem {
		if placed>>uint(i)&1 == 1 {
			sc.dem[i] = sc.apps[i].BandwidthMBps
		} else {
			sc.dem[i] = s.xminUpTo[i][rr]
		}
	}
	U, _, _, err := perfmodel.MoradBracket(sc.dem, B, 22) // a lower bound of U_node
	if err != nil {
		return math.Inf(1)
	}
	ub := 0.0
	if rest != 0 {
		b := s.bnd
		for _, l := range s.levels {
			if l.U <= U {
				b = l.bnd
			}
		}
		ub, _, _ = b.at(rest, rr)
	}
	stalls := s.in.Model.BW == perfmodel.Stalls
	for m := uint(placed); m != 0; m &= m - 1 {
		a := &sc.apps[bits.TrailingZeros(m)]
		F := math.Max(1, perfmodel.MoradFactorAt(a.BandwidthMBps/B, U))
		if stalls {
			F = perfmodel.StallsFactor(F, a.StallsTotal, a.StallsMem)
		}
		ub += 1 / (a.SlowdownCache * math.Max(1, F*(1-1e-9)))
	}
	return ub
}

func (s *searchState) dfs(path []choice, R, r int, inv, mx, mn float64, nodes *int64) {
	var sc *scratch
	if s.refine {
		sc = newScratch(len(s.in.Apps))
		for _, ch := range path { // values of the clusters placed before this subtree
			s.refineSTP(sc, int(ch.c), int(ch.k), 0, 0)
		}
	}
	s.dfsR(sc, path, R, r, inv, mx, mn, nodes)
}

func (s *searchState) dfsR(sc *scratch, path []choice, R, r int, inv, mx, mn float64, nodes *int64) {
	*nodes++
	if R == 0 {
		if r == 0 {
			s.leaf(path, inv, mx, mn)
		}
		return
	}
	low := R & -R
	rem := R ^ low
	for sub := rem; ; sub = (sub - 1) & rem {
		c := sub | low
		rest := R ^ c
		kmin, kmax := 1, r-1
		if rest == 0 {
			kmin, kmax = r, r
		}
		for k := kmin; k <= kmax; k++ {
			ti, tx, tn := s.tab.at(c, k)
			ci, cx, cn := inv+ti, math.Max(mx, tx), math.Min(mn, tn)
			if u, st := s.bound(rest, r-k, ci, cx, cn); s.prune(u, st) {
				continue
			}
			if sc != nil && s.prune(0, s.refineSTP(sc, c, k, rest, r-k)) {
				continue
			}
			s.dfsR(sc, append(path, choice{uint32(c), int8(k)}), rest, r-k, ci, cx, cn, nodes)
		}
		if sub == 0 {
			break
		}
	}
}

// dive builds a first incumbent greedily: at every level it takes the child with the best
// bound (exact for STP without a bandwidth model, so the dive then is the optimum).
func (s *searchState) dive() {
	var path []choice
	R, r := (1<<uint(len(s.in.Apps)))-1, s.W
	inv, mx, mn := 0.0, math.Inf(-1), math.Inf(1)
	for R != 0 {
		low := R & -R
		rem := R ^ low
		found := false
		var bc, bk int
		var bu, bst float64
		for sub := rem; ; sub = (sub - 1) & rem {
			c := sub | low
			rest := R ^ c
			kmin, kmax := 1, r-1
			if rest == 0 {
				kmin, kmax = r, r
			}
			for k := kmin; k <= kmax; k++ {
				ti, tx, tn := s.tab.at(c, k)
				u, st := s.bound(rest, r-k, inv+ti, math.Max(mx, tx), math.Min(mn, tn))
				if !found || s.obj.Better(u, st, bu, bst) {
					found, bc, bk, bu, bst = true, c, k, u, st
				}
			}
			if sub == 0 {
				break
			}
		}
		ti, tx, tn := s.tab.at(bc, bk)
		inv, mx, mn = inv+ti, math.Max(mx, tx), math.Min(mn, tn)
		path = append(path, choice{uint32(bc), int8(bk)})
		R ^= bc
		r -= bk
	}
	s.leaf(path, inv, mx, mn)
}

// Search is the exact optimal clustering: over every partition of the workload into
// clusters and every split of all W ways among them (each cluster ≥ 1 way), the solution
// with the best final objective under in.Model (bandwidth model included) — the space
// PBBCache's optc-* enumerate as Bell(n) clusterings × compositions. It is exact and
// scales because:
//
//  1. cluster tables: the cache-only aggregates of each of the 2^n − 1 clusters at each way
//     count are computed once (buildClusterTable);
//  2. bounds: dynamic programming over subsets gives, for every set R of not yet placed
//     applications and ways r, the exact best cache-only STP and the exact lowest possible
//     maximum slowdown, plus a cheap bound on the minimum (buildBounds). These are valid
//     bounds of the final objective for any completion (searchState.bound explains why), without assuming
//     that slowdown curves are monotone in ways — in this data they mostly are not, which is
//     why PBBCache's bound (every unassigned cluster at its largest possible size) is not
//     valid here;
//  3. for STP without a bandwidth model the objective is additive over clusters and the DP
//     value is the optimum itself: the first dive is optimal and everything else is pruned;
//  4. branch and bound: depth-first, clusters in canonical order (the next cluster holds
//     the lowest unplaced application), children pruned by the bounds against a shared
//     incumbent, the root's children (first cluster, its ways) spread over opt.Jobs workers
//     best bound first. Exact ties are resolved by a fixed order on solutions, so the
//     answer does not depend on the number of workers.
func Search(in Input, o Objective, opt Options) (*Solution, error) {
	n, W := len(in.Apps), in.Machine.LLC.Ways
	if n > MaxOptcApps {
		return nil, fmt.Errorf("the exact clustering search takes at most %d applications (%d given)", MaxOptcApps, n)
	}
	if n >= 32 || W > 127 {
		return nil, fmt.Errorf("workload too large")
	}
	jobs := max(1, opt.Jobs)
	N := int64(1) << uint(n)
	var pow3 int64 = 1
	for i := 0; i < n-1; i++ {
		pow3 *= 3
	}
	total := N + pow3/2 + 1 // table build + DP, then the root children
	var done atomic.Int64
	tick := func(d int64) {
		if opt.Progress != nil {
			opt.Progress(done.Add(d), total)
		}
	}
	needMM := o == MinUnf
	lowF, highF, hiMax := bandwidthBounds(in.Apps, in.Model)
	s := &searchState{in: in, obj: o, W: W}
	s.fast = lowF == nil
	if !s.fast && o == MaxSTP && in.Model.BW != perfmodel.Simple {
		s.refine = true
		for _, t := range in.Apps {
			bw := t.Col(profile.BandwidthMBps)
			x := profile.Interp(bw, 0)
			for _, v := range bw {
				x = math.Min(x, v)
			}
			s.xmin = append(s.xmin, x/in.Model.MaxBW)
			up := make([]float64, W+1)
			m := profile.Interp(bw, 0)
			for r := 1; r <= W; r++ {
				m = math.Min(m, bw[r-1])
				up[r] = m
			}
			s.xminUpTo = append(s.xminUpTo, up)
		}
	}
	if s.refine && n <= maxLevelApps {
		// Extra STP tables at bus totals between U_min and U_max (levels), so that deep nodes,
		// whose U_node is large, bound the rest with larger factors.
		xmax := make([]float64, n)
		for i, t := range in.Apps {
			bw := t.Col(profile.BandwidthMBps)
			x := profile.Interp(bw, 0)
			for _, v := range bw {
				x = math.Max(x, v)
			}
			xmax[i] = x
		}
		umin, _, e1 := perfmodel.MoradRoot(s.xminMBps(), in.Model.MaxBW)
		umax, _, e2 := perfmodel.MoradRoot(xmax, in.Model.MaxBW)
		if e1 == nil && e2 == nil && umax > umin {
			for g := 1; g <= stpLevels; g++ {
				U := umin + (umax-umin)*float64(g)/float64(stpLevels+1)
				tab := buildClusterTable(in.Apps, W, false, lowFactorAt(in.Apps, in.Model, U), nil, jobs, nil)
				s.levels = append(s.levels, stpLevel{U, buildBounds(tab, in.Apps, false, nil, jobs, nil)})
			}
		}
	}
	s.tab = buildClusterTable(in.Apps, W, needMM, lowF, highF, jobs, tick)
	s.bnd = buildBounds(s.tab, in.Apps, needMM, hiMax, jobs, tick)
	s.dive()
	if s.err != nil {
		return nil, s.err
	}
	// Root children: the cluster holding application 0 and its ways, best bound first;
	// those the first incumbent already beats are not even stored.
	type child struct {
		c     int32
		k     int8
		u, st float64
	}
	full := (1 << uint(n)) - 1
	var kids []child
	rem := full ^ 1
	for sub := rem; ; sub = (sub - 1) & rem {
		c := sub | 1
		rest := full ^ c
		kmin, kmax := 1, W-1
		if rest == 0 {
			kmin, kmax = W, W
		}
		for k := kmin; k <= kmax; k++ {
			ti, tx, tn := s.tab.at(c, k)
			u, st := s.bound(rest, W-k, ti, tx, tn)
			if !s.prune(u, st) {
				kids = append(kids, child{int32(c), int8(k), u, st})
			}
		}
		if sub == 0 {
			break
		}
	}
	sort.Slice(kids, func(a, b int) bool { // a total order: deterministic
		if o.Better(kids[a].u, kids[a].st, kids[b].u, kids[b].st) {
			return true
		}
		if o.Better(kids[b].u, kids[b].st, kids[a].u, kids[a].st) {
			return false
		}
		return kids[a].c < kids[b].c || kids[a].c == kids[b].c && kids[a].k < kids[b].k
	})
	var nodes atomic.Int64
	rootDone := int64(0)
	var rdMu sync.Mutex
	remaining := total - done.Load()
	parallelRange(0, len(kids), jobs, 1, func(lo, hi int) {
		var local int64
		for _, kd := range kids[lo:hi] {
			if s.prune(kd.u, kd.st) {
				continue
			}
			c, k := int(kd.c), int(kd.k)
			ti, tx, tn := s.tab.at(c, k)
			s.dfs([]choice{{uint32(c), int8(k)}}, full^c, W-k, ti, tx, tn, &local)
		}
		nodes.Add(local)
		if opt.Progress != nil {
			rdMu.Lock()
			rootDone += int64(hi - lo)
			d := total - remaining + remaining*rootDone/int64(max(1, len(kids)))
			rdMu.Unlock()
			opt.Progress(d, total)
		}
	})
	if s.err != nil {
		return nil, s.err
	}
	cl := make([]Cluster, len(s.best))
	for i, ch := range s.best {
		cl[i] = Cluster{Apps: appsOf(uint(ch.c)), Ways: int(ch.k)}
	}
	sol, err := packed(in.Machine, cl)
	if err != nil {
		return nil, err
	}
	sol.Nodes = nodes.Load() + 1
	return sol, nil
}
