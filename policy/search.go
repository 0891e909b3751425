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
// take about 5·W·8·2^n bytes (about 0.5 GB at n = 20 on 11 ways, 2 GB at 22).
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

func buildClusterTable(apps []*profile.Table, W int, needMinMax bool, jobs int, tick func(int64)) *clusterTable {
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
					inv += 1 / x
					mx, mn = math.Max(mx, x), math.Min(mn, x)
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
// combined with W(W−1)/2 way pairs. Rows of one R are stored together (stride 2(W+1)).
//
// The minimum slowdown is bounded more cheaply, without a DP over ways:
//
//	ubMin[R] = min_{i∈R} max_{0<f≤W} S_i(f)
//
// valid because every application's slowdown at any share f is at most the maximum of its
// (piecewise-linear, MODEL.md §3.2) curve, so the smallest slowdown in R is at most the
// smallest of those maxima. It is nearly exact in practice: the least slowed-down
// application is usually a light-sharing one whose whole curve is close to 1.
type boundTables struct {
	W, stride int
	data      []float64
	ubMin     []float64 // per R; nil for MaxSTP
}

// at returns the bounds of R on r ways (lbMax, ubMin are ±Inf when not computed).
func (b *boundTables) at(R, r int) (stp, lbMax, ubMin float64) {
	i := R*b.stride + r
	if b.ubMin == nil {
		return b.data[i], math.Inf(-1), math.Inf(1)
	}
	return b.data[i], b.data[i+b.W+1], b.ubMin[R]
}

func buildBounds(t *clusterTable, apps []*profile.Table, needMinMax bool, jobs int, tick func(int64)) *boundTables {
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
			maxS[i] = m
		}
		b.ubMin = make([]float64, N)
		b.ubMin[0] = math.Inf(1)
		for R := 1; R < N; R++ {
			low := bits.TrailingZeros(uint(R))
			b.ubMin[R] = math.Min(b.ubMin[R&(R-1)], maxS[low])
		}
	}
	b.data = make([]float64, N*b.stride)
	byPop := make([][]int, n+1)
	for R := 1; R < N; R++ {
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
						rb := b.data[rest*BS : rest*BS+BS]
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
				copy(b.data[R*BS:R*BS+BS], acc)
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

// maxFactor is an upper bound on the bandwidth factor F_i of any application under any
// allocation, used to keep the unfairness bound valid with a bandwidth model:
//   - none: 1.
//   - morad and stalls: with a = 1 − U the Morad equation gives F = x/u = (u+a)/(u(u+a)+a)
//     ≤ 1/a, since a² ≤ a; U is the root of g(U) = Σu_i(U) − U where each u_i(U) grows with
//     x_i, so U can only grow with any demand and is at most the root for the largest
//     demands x_i^max (the maximum of the bandwidth curve over 0..W ways, including its
//     extrapolation below one way). So F ≤ 1/(1 − U(x^max)); the stalls factor is
//     1 + (M/T)(F − 1) ≤ F as M ≤ T.
//   - simple: no bound is derived; +Inf (the search stays exact, it only prunes less).
func maxFactor(apps []*profile.Table, m perfmodel.Options) float64 {
	if m.BW == perfmodel.None || m.BW == "" || m.MaxBW <= 0 || math.IsInf(m.MaxBW, 1) {
		return 1
	}
	if m.BW == perfmodel.Simple {
		return math.Inf(1)
	}
	xmax := make([]float64, len(apps))
	for i, t := range apps {
		bw := t.Col(profile.BandwidthMBps)
		mx := profile.Interp(bw, 0)
		for _, v := range bw {
			mx = math.Max(mx, v)
		}
		xmax[i] = mx
	}
	// MoradFactors returns x_i/u_i; recover U = Σ u_i at the largest demands.
	f, err := perfmodel.MoradFactors(nil, xmax, m.MaxBW)
	if err != nil {
		return math.Inf(1)
	}
	U := 0.0
	for i, x := range xmax {
		if x > 0 {
			U += x / m.MaxBW / f[i]
		}
	}
	if U >= 1 {
		return math.Inf(1)
	}
	return 1 / (1 - U) * (1 + 1e-9)
}

// searchState is shared by the workers of one search.
type searchState struct {
	in     Input
	obj    Objective
	W      int
	tab    *clusterTable
	bnd    *boundTables
	fmax   float64
	fast   bool // no bandwidth model: leaves are scored from the tables
	mu     sync.Mutex
	best   []choice // incumbent, nil if none
	bu, bs float64
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
// Validity: final slowdowns are cache-only slowdowns times bandwidth factors F ∈ [1, fmax]
// (the physical Morad root has u_i < x_i; see maxFactor), so the final STP is at most the
// cache-only STP, which is at most inv + stp[R][r]; the final maximum slowdown is at least
// the cache-only maximum, at least max(mx, lbMax[R][r]); the final minimum is at most the
// cache-only minimum times fmax, at most min(mn, ubMin[R])·fmax.
func (s *searchState) bound(R, r int, inv, mx, mn float64) (u, stp float64) {
	stp = inv
	if R != 0 {
		bs, lm, um := s.bnd.at(R, r)
		stp += bs
		mx, mn = math.Max(mx, lm), math.Min(mn, um)
	}
	if s.obj == MinUnf {
		u = mx / (mn * s.fmax)
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
func (s *searchState) dfs(path []choice, R, r int, inv, mx, mn float64, nodes *int64) {
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
			s.dfs(append(path, choice{uint32(c), int8(k)}), rest, r-k, ci, cx, cn, nodes)
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
	for i := 0; i < n; i++ {
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
	s := &searchState{in: in, obj: o, W: W, fmax: maxFactor(in.Apps, in.Model)}
	s.fast = s.fmax == 1
	s.tab = buildClusterTable(in.Apps, W, needMM, jobs, tick)
	s.bnd = buildBounds(s.tab, in.Apps, needMM, jobs, tick)
	s.dive()
	if s.err != nil {
		return nil, s.err
	}
	// Root children: the cluster holding application 0 and its ways, best bound first.
	type child struct {
		c, k  int
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
			kids = append(kids, child{c, k, u, st})
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
			ti, tx, tn := s.tab.at(kd.c, kd.k)
			s.dfs([]choice{{uint32(kd.c), int8(kd.k)}}, full^kd.c, W-kd.k, ti, tx, tn, &local)
		}
		nodes.Add(local)
		if opt.Progress != nil {
			rdMu.Lock()
			rootDone += int64(hi - lo)
			d := total - remaining + remaining*rootDone/int64(len(kids))
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
