package policy

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"colo/perfmodel"
	"colo/profile"
)

// Row aggregations of the cluster tables and the subset dynamic program.
type rowOp uint8

const (
	opSum    rowOp = iota // cluster: Σ over members; DP: best (largest) Σ over clusterings (STP)
	opMax                 // cluster: max over members; DP: lowest possible maximum (max slowdown)
	opMin                 // cluster: min over members (not in the DP: the minimum is bounded by ubMin)
	opMinSum              // cluster: Σ over members; DP: lowest possible Σ (bus pressure test)
)

// clusterTable holds, for every non-empty subset c of the workload (bit i = application
// i) and every way count k = 1..W, aggregates of the applications of c sharing k ways
// (Whirlpool split, MODEL.md §3): one row per aggregate (Σ 1/S, max S, min S, Σ q …, see
// searchLevel), each row W values. There are only 2^n − 1 distinct clusters, so each is
// computed once — PBBCache recomputes a cluster every time it appears in one of the
// Bell(n) clusterings. The rows of a cluster are stored together (stride rows·W).
type clusterTable struct {
	n, W, rows int
	data       []float64
}

// row returns row j of cluster c (W values, index k−1).
func (t *clusterTable) row(c, j int) []float64 {
	b := (c*t.rows + j) * t.W
	return t.data[b : b+t.W]
}

// appValues fills application i's contribution to every row of every level at share f.
type appValues func(i int, f float64, dst [][]float64)

// buildClusterTables computes the tables of several levels in one pass over the clusters
// and shares (the Whirlpool split and the interpolations are shared by all levels):
// tables[l] has len(ops[l]) rows aggregated by ops[l], val gives each member's values.
func buildClusterTables(apps []*profile.Table, W int, ops [][]rowOp, val appValues, jobs int, tick func(int64)) []*clusterTable {
	n := len(apps)
	N := 1 << uint(n)
	L := len(ops)
	tabs := make([]*clusterTable, L)
	for l := range tabs {
		tabs[l] = &clusterTable{n: n, W: W, rows: len(ops[l]), data: make([]float64, N*len(ops[l])*W)}
	}
	mpkc := columns(apps, profile.LLCMPKC)
	parallelRange(1, N, jobs, 4096, func(lo, hi int) {
		idx := make([]int, 0, n)
		curves := make([][]float64, 0, n)
		dst := make([]float64, n)
		vals := make([][]float64, L)
		acc := make([][]float64, L)
		for l := range vals {
			vals[l] = make([]float64, len(ops[l]))
			acc[l] = make([]float64, len(ops[l]))
		}
		for c := lo; c < hi; c++ {
			idx, curves = idx[:0], curves[:0]
			for m := uint(c); m != 0; m &= m - 1 {
				i := bits.TrailingZeros(m)
				idx = append(idx, i)
				curves = append(curves, mpkc[i])
			}
			perfmodel.SharesSteps(dst[:len(idx)], curves, W, func(k int, s []float64) {
				for l := range acc {
					for j, op := range ops[l] {
						switch op {
						case opSum, opMinSum:
							acc[l][j] = 0
						case opMax:
							acc[l][j] = math.Inf(-1)
						case opMin:
							acc[l][j] = math.Inf(1)
						}
					}
				}
				for j, f := range s {
					val(idx[j], f, vals)
					for l := range acc {
						for r, op := range ops[l] {
							switch op {
							case opSum, opMinSum:
								acc[l][r] += vals[l][r]
							case opMax:
								acc[l][r] = math.Max(acc[l][r], vals[l][r])
							case opMin:
								acc[l][r] = math.Min(acc[l][r], vals[l][r])
							}
						}
					}
				}
				for l, t := range tabs {
					for r := range ops[l] {
						t.data[(c*t.rows+r)*W+k-1] = acc[l][r]
					}
				}
			})
		}
		if tick != nil {
			tick(int64(hi - lo))
		}
	})
	return tabs
}

// boundTable holds, for every subset R of the workload without application 0 and r = 1..W,
// the exact extremes of cluster-table rows over every way to cluster R into clusters using
// exactly r ways:
//
//	opSum:    best[R][r] = max Σ_{clusters} row   (e.g. the best STP of R on r ways)
//	opMax:    best[R][r] = min max_{clusters} row (no solution of R on r ways has a lower maximum)
//	opMinSum: best[R][r] = min Σ_{clusters} row   (the lowest bus pressure R can put on the bus)
//
// computed by dynamic programming over subsets: the cluster holding R's lowest
// application is some c ⊆ R with k ways, and the rest R∖c is solved on r − k ways,
//
//	best[R][r] = opt_{c∋low(R), k} row[c][k] ⊕ best[R∖c][r−k]   (⊕ = + or max),
//
// which is exact because Σ and max decompose over disjoint clusters and a member's
// cache-only values depend only on its own cluster. Nothing here assumes the curves are
// monotone in ways (42 of the 55 slowdown curves of the data set are not): every (c, k) is
// enumerated. Cost: Σ_R 2^{|R|−1} = (3^n − 1)/2 cluster choices, each combined with
// W(W−1)/2 way pairs per row. Only sets without application 0 are needed — the search
// always places application 0 first, so no remaining set ever contains it — which cuts
// the cost to (3^{n−1} − 1)/2 and the memory by half (entries indexed by R/2). The rows of
// one R are stored together (stride rows·(W+1)).
type boundTable struct {
	W, rows int
	data    []float64
}

// at returns row j of the bound table at (R, r); R must not contain application 0.
func (b *boundTable) at(R, r, j int) float64 {
	return b.data[((R>>1)*b.rows+j)*(b.W+1)+r]
}

// dpRow is one row of a bound table: the cluster-table row it aggregates and how.
type dpRow struct {
	src int
	op  rowOp
}

func buildBoundTable(t *clusterTable, spec []dpRow, jobs int, tick func(int64)) *boundTable {
	n, W := t.n, t.W
	N := 1 << uint(n)
	W1 := W + 1
	b := &boundTable{W: W, rows: len(spec)}
	BS := len(spec) * W1
	b.data = make([]float64, N/2*BS)
	// keep[j][c/2] has bit k set when (c, k) is not dominated for row j (dominated below).
	keep := make([][]uint32, len(spec))
	for j := range keep {
		keep[j] = make([]uint32, N/2)
	}
	byPop := make([][]int, n+1)
	for R := 2; R < N; R += 2 {
		p := bits.OnesCount(uint(R))
		byPop[p] = append(byPop[p], R)
	}
	TS := t.rows * W
	for p := 1; p <= n; p++ {
		layer := byPop[p]
		parallelRange(0, len(layer), jobs, max(1, 1<<16>>uint(min(p, 16))), func(lo, hi int) {
			acc := make([]float64, BS)
			for _, R := range layer[lo:hi] {
				for j, sp := range spec {
					v := math.Inf(1)
					if sp.op == opSum {
						v = math.Inf(-1)
					}
					for r := 0; r < W1; r++ {
						acc[j*W1+r] = v
					}
				}
				low := R & -R
				rem := R ^ low
				for sub := rem; ; sub = (sub - 1) & rem {
					c := sub | low
					rest := R ^ c
					cb := t.data[c*TS : c*TS+TS]
					for j, sp := range spec {
						src := cb[sp.src*W : sp.src*W+W]
						dst := acc[j*W1 : j*W1+W1]
						if rest == 0 {
							for k := 1; k <= W; k++ {
								dst[k] = combineBest(sp.op, dst[k], src[k-1])
							}
							continue
						}
						rb := b.data[(rest>>1)*BS+j*W1 : (rest>>1)*BS+j*W1+W1]
						dpCombine(sp.op, dst, src, rb, W, keep[j][c>>1])
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
		// Dominance, for the next layers: cluster R with k ways is dominated when splitting
		// off its lowest application with k1 ways and clustering the others best on k − k1
		// ways is at least as good (row j's order) — a solution using (R, k) is then never
		// better than one using the split, which the DP also considers, so skipping (R, k)
		// leaves every bound table value unchanged.
		parallelRange(0, len(layer), jobs, 4096, func(lo, hi int) {
			for _, R := range layer[lo:hi] {
				low := R & -R
				d := R ^ low
				cb := t.data[R*TS : R*TS+TS]
				lb := t.data[low*TS : low*TS+TS]
				for j, sp := range spec {
					src, one := cb[sp.src*W:sp.src*W+W], lb[sp.src*W:sp.src*W+W]
					var m uint32
					for k := 1; k <= W; k++ {
						dom := false
						if d != 0 {
							db := b.data[(d>>1)*BS+j*W1 : (d>>1)*BS+j*W1+W1]
							for k1 := 1; k1 < k && !dom; k1++ {
								switch sp.op {
								case opSum:
									dom = src[k-1] <= one[k1-1]+db[k-k1]
								case opMinSum:
									dom = src[k-1] >= one[k1-1]+db[k-k1]
								case opMax:
									dom = src[k-1] >= math.Max(one[k1-1], db[k-k1])
								}
							}
						}
						if !dom {
							m |= 1 << uint(k)
						}
					}
					keep[j][R>>1] = m
				}
			}
		})
	}
	return b
}

func combineBest(op rowOp, old, x float64) float64 {
	if op == opSum {
		return math.Max(old, x)
	}
	return math.Min(old, x)
}

// dpCombine folds cluster values src (k ways at src[k−1]) with the rest's table rb
// (r' ways at rb[r']) into dst[k + r'], for the way counts k in keep (bit k).
func dpCombine(op rowOp, dst, src, rb []float64, W int, keep uint32) {
	for km := keep &^ (1 << uint(W)); km != 0; km &= km - 1 {
		k := bits.TrailingZeros32(km)
		m := W - k
		vk := src[k-1]
		d := dst[k+1 : k+1+m]
		s := rb[1 : 1+m]
		s = s[:len(d)]
		switch op {
		case opSum:
			for j := range d {
				if x := vk + s[j]; x > d[j] {
					d[j] = x
				}
			}
		case opMinSum:
			for j := range d {
				if x := vk + s[j]; x < d[j] {
					d[j] = x
				}
			}
		case opMax:
			for j := range d {
				x := s[j]
				if vk > x {
					x = vk
				}
				if x < d[j] {
					d[j] = x
				}
			}
		}
	}
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
