package policy

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"
	"time"

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

// Rows of the level-0 cluster table (valid for every allocation) and of its bound table.
const (
	t0Inv = iota // Σ 1/(S·F_low)
	t0Max        // max S·F_low
	t0Min        // min S·F_high
)
const (
	b0STP   = iota // best Σ 1/(S·F_low) of the rest
	b0LbMax        // lowest max S·F_low of the rest
)

// Rows of a pressure level's cluster table and bound table (busBounds).
const (
	tlInv = iota // Σ 1/(S·F(P_l))
	tlQ          // Σ q_l (the level's pressure test)
	tlMax        // max S·F(P_l) (MinUnf only)
)

// Rows of a level's bound table: best Σ 1/(S·F(P_l)) of the rest (MaxSTP only: for
// unfairness STP only breaks ties, the level-0 bound does), the lowest Σ q_l the rest can
// put on the bus, and its lowest max S·F(P_l) (MinUnf only).
const (
	blMinQ = iota
	blSTP
	blLbMax = blSTP
)

// maxLevelApps bounds the workloads that get pressure levels (each level is one more
// cluster table and DP); levelCount (MaxSTP) and levelCountUnf (MinUnf) are how many.
// Measured on the 12–16-application bench mixes with the stalls model: more levels
// prune more nodes but cost more tables (n=16 optc-stp: 3 levels 1.9 M nodes, 6 levels
// 0.96 M, the same CPU time; n=13: 8 levels 311 nodes but twice the time of 2).
const (
	maxLevelApps  = 18
	levelCount    = 5
	levelCountUnf = 2
)

// level is one pressure level P_l > P_0 of busBounds with its tables.
type level struct {
	thr float64
	tab *clusterTable // rows tlInv, tlQ, [tlMax]
	bnd *boundTable   // rows blSTP, blMinQ, [blLbMax]
}

// searchState is shared by the workers of one search.
type searchState struct {
	in   Input
	obj  Objective
	n, W int
	tab  *clusterTable // level 0: rows t0Inv, [t0Max, t0Min]
	bnd  *boundTable   // level 0: rows b0STP, [b0LbMax]
	// ubMin[R/2] bounds the smallest final slowdown of R from above (MinUnf).
	ubMin []float64
	// rows of bnd: stpRow is −1 when bnd has no STP row (MinUnf without a model: STP only
	// breaks ties there, bounded by stpUB[R/2] instead), lbRow the lowest maximum (MinUnf).
	stpRow, lbRow int
	stpUB         []float64
	bus           *busBounds // nil without an active bandwidth model
	lag           *lagBound  // STP under the simple model (useLag), nil otherwise
	lv            []level    // pressure levels 1..len(lv) (index l−1)
	fast          bool       // no bandwidth model: leaves are scored from the tables
	// twinBit[j] is the bit of the previous application identical to j (0 if none).
	twinBit  []uint32
	hasTwins bool

	mu     sync.Mutex
	best   []choice // incumbent, nil if none
	bu, bs float64
	// incumbent objective for lock-free pruning (bits of float64)
	incU, incS atomic.Uint64
	err        error
	deadline   time.Time
	stop       atomic.Bool
	visited    atomic.Int64 // nodes, in steps of 1024, for Options.Status
}

type choice struct {
	c uint32 // cluster subset
	k int8   // ways
}

const eps = 1e-9

// statusEvery is how often Search calls Options.Status.
const statusEvery = 500 * time.Millisecond

// forChildren calls f(c, rest, k) for every child of the node whose unplaced
// applications are R with r ways left, in a fixed order: the next cluster c holds the
// lowest application of R (so every clustering is generated once) and takes k ways; the
// last cluster takes exactly the ways left. f returns false to stop. Identical
// applications (the same profile twice) are interchangeable, so a cluster may only take
// the next ones of each group of identical applications still unplaced: of every set of
// solutions that differ by swapping identical applications only the one with the
// smallest path (lessPath) is generated — the one the tie-break would choose anyway.
func (s *searchState) forChildren(R, r int, f func(c, rest, k int) bool) {
	low := R & -R
	rem := R ^ low
	for sub := rem; ; sub = (sub - 1) & rem {
		c := sub | low
		rest := R ^ c
		if s.hasTwins && !s.twinsOK(c, rest) {
			if sub == 0 {
				return
			}
			continue
		}
		kmin, kmax := 1, r-1
		if rest == 0 {
			kmin, kmax = r, r
		}
		for k := kmin; k <= kmax; k++ {
			if !f(c, rest, k) {
				return
			}
		}
		if sub == 0 {
			return
		}
	}
}

// twinsOK: no member of c has its previous identical application still unplaced outside c.
func (s *searchState) twinsOK(c, rest int) bool {
	var need uint32
	for m := uint(c); m != 0; m &= m - 1 {
		need |= s.twinBit[bits.TrailingZeros(m)]
	}
	return int(need)&rest == 0
}

// node is a partial solution: the level-0 aggregates of the placed clusters and, per
// pressure level, their exact Σ 1/(S·F(P_l)), max S·F(P_l) and Σ q_l (3 values a level).
type node struct {
	inv, mx, mn float64
	lv          []float64
	lp          [4]float64 // lagBound's sums of the placed clusters
}

// bound returns the optimistic (unfairness, STP) of any completion of child (c, k) of nd,
// whose remaining applications rest get exactly rr ways. Validity: final slowdowns are
// cache-only slowdowns S times bandwidth factors F with F_low ≤ F ≤ F_high (busBounds;
// both 1 without a model), and the level-0 tables hold S·F_low for Σ 1/S and max S and
// S·F_high for min S. So the final STP is at most inv + stp[rest][rr], the final maximum
// slowdown at least max(mx, lbMax[rest][rr]) and the final minimum at most
// min(mn, ubMin[rest]). With pressure levels, the highest level l whose test every
// completion passes (placed Σq_l + minQ_l[rest][rr] ≥ thr_l) proves P ≥ P_l, so the same
// bounds hold with the factors at P_l (tables of level l); both are taken.
func (s *searchState) bound(nd *node, c, k, rest, rr int) (u, stp float64) {
	t := s.tab
	base := c * t.rows * t.W
	stp = nd.inv + t.data[base+k-1]
	mx, mn := nd.mx, nd.mn
	unf := s.obj == MinUnf
	if unf {
		mx = math.Max(mx, t.data[base+t.W+k-1])
		mn = math.Min(mn, t.data[base+2*t.W+k-1])
	}
	if rest != 0 {
		if s.stpRow >= 0 {
			stp += s.bnd.at(rest, rr, s.stpRow)
		} else {
			stp += s.stpUB[rest>>1]
		}
		if unf {
			mx = math.Max(mx, s.bnd.at(rest, rr, s.lbRow))
			mn = math.Min(mn, s.ubMin[rest>>1])
		}
	}
	if unf {
		u = mx / mn
	}
	if s.lag != nil && !s.prune(u, stp) {
		p := nd.lp
		s.lag.add(&p, c, k)
		stp = math.Min(stp, s.lag.bound(&p, rest, rr))
	}
	if len(s.lv) == 0 || s.prune(u, stp) {
		return u, stp
	}
	// highest level whose test passes (the test is monotone in the level)
	lo, hi := 0, len(s.lv) // levels 1..lo pass; lo+1..hi unknown
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if s.passes(nd, mid, c, k, rest, rr) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 {
		return u, stp
	}
	L := &s.lv[lo-1]
	lt := L.tab
	lb := (c*lt.rows)*lt.W + k - 1
	a := nd.lv[3*(lo-1):]
	if unf {
		m := math.Max(a[1], lt.data[lb+tlMax*lt.W])
		if rest != 0 {
			m = math.Max(m, L.bnd.at(rest, rr, blLbMax))
		}
		return math.Max(u, m/mn), stp
	}
	st := a[0] + lt.data[lb+tlInv*lt.W]
	if rest != 0 {
		st += L.bnd.at(rest, rr, blSTP)
	}
	return u, math.Min(stp, st)
}

// passes reports whether every completion of child (c, k) passes the test of level l.
func (s *searchState) passes(nd *node, l, c, k, rest, rr int) bool {
	L := &s.lv[l-1]
	q := nd.lv[3*(l-1)+2] + L.tab.data[(c*L.tab.rows+tlQ)*L.tab.W+k-1]
	if rest != 0 {
		q += L.bnd.at(rest, rr, blMinQ)
	}
	return q >= L.thr
}

// child fills the aggregates of child (c, k) of nd into ch (ch.lv must have room).
func (s *searchState) child(nd *node, c, k int, ch *node) {
	t := s.tab
	base := c * t.rows * t.W
	ch.inv = nd.inv + t.data[base+k-1]
	ch.mx, ch.mn = nd.mx, nd.mn
	if s.obj == MinUnf {
		ch.mx = math.Max(ch.mx, t.data[base+t.W+k-1])
		ch.mn = math.Min(ch.mn, t.data[base+2*t.W+k-1])
	}
	if s.lag != nil {
		ch.lp = nd.lp
		s.lag.add(&ch.lp, c, k)
	}
	for l := range s.lv {
		lt := s.lv[l].tab
		lb := (c*lt.rows)*lt.W + k - 1
		a, b := nd.lv[3*l:3*l+3], ch.lv[3*l:3*l+3]
		b[0] = a[0] + lt.data[lb+tlInv*lt.W]
		b[2] = a[2] + lt.data[lb+tlQ*lt.W]
		b[1] = a[1]
		if s.obj == MinUnf {
			b[1] = math.Max(a[1], lt.data[lb+tlMax*lt.W])
		}
	}
}

func (s *searchState) rootNode() *node {
	nd := &node{mx: math.Inf(-1), mn: math.Inf(1), lv: make([]float64, 3*len(s.lv))}
	for l := range s.lv {
		nd.lv[3*l+1] = math.Inf(-1)
	}
	return nd
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

// worker is one goroutine's scratch: the nodes along its path and the leaf evaluator's.
type worker struct {
	s      *searchState
	path   []choice
	nodes  []node // by depth
	nvis   int64
	apps   []perfmodel.App
	curves [][]float64
	sh     []float64
}

func (s *searchState) newWorker() *worker {
	w := &worker{s: s, path: make([]choice, 0, s.W+1), nodes: make([]node, s.W+2),
		apps: make([]perfmodel.App, s.n), sh: make([]float64, s.n)}
	for d := range w.nodes {
		w.nodes[d].lv = make([]float64, 3*len(s.lv))
	}
	return w
}

// dfs explores every completion of the worker's path, whose node is w.nodes[d]. It
// returns false when the time limit stopped it.
func (w *worker) dfs(d, R, r int) bool {
	s := w.s
	w.nvis++
	if w.nvis&1023 == 0 {
		s.visited.Add(1024)
		if !s.deadline.IsZero() && time.Now().After(s.deadline) {
			s.stop.Store(true)
		}
	}
	if s.stop.Load() {
		return false
	}
	nd := &w.nodes[d]
	if R == 0 {
		if r == 0 {
			w.leaf(nd)
		}
		return true
	}
	ok := true
	s.forChildren(R, r, func(c, rest, k int) bool {
		if s.prune(s.bound(nd, c, k, rest, r-k)) {
			return true
		}
		s.child(nd, c, k, &w.nodes[d+1])
		w.path = append(w.path, choice{uint32(c), int8(k)})
		ok = w.dfs(d+1, rest, r-k)
		w.path = w.path[:len(w.path)-1]
		return ok
	})
	return ok
}

// leaf scores the complete solution w.path and offers it as incumbent.
func (w *worker) leaf(nd *node) {
	s := w.s
	u, stp := nd.mx/nd.mn, nd.inv
	if !s.fast {
		var err error
		u, stp, err = w.evaluate(w.path)
		if err != nil {
			s.mu.Lock()
			if s.err == nil {
				s.err = err
			}
			s.mu.Unlock()
			s.stop.Store(true)
			return
		}
	}
	s.offer(w.path, u, stp)
}

// evaluate is perfmodel.Evaluate of a path without its allocations: the same Whirlpool
// split (members in index order), the same interpolations and the same bandwidth model,
// so the same numbers.
func (w *worker) evaluate(path []choice) (u, stp float64, err error) {
	s := w.s
	for _, ch := range path {
		w.curves = w.curves[:0]
		for m := uint(ch.c); m != 0; m &= m - 1 {
			w.curves = append(w.curves, s.in.Apps[bits.TrailingZeros(m)].Col(profile.LLCMPKC))
		}
		sh := perfmodel.Shares(w.sh[:len(w.curves)], w.curves, int(ch.k))
		j := 0
		for m := uint(ch.c); m != 0; m &= m - 1 {
			i := bits.TrailingZeros(m)
			w.apps[i] = perfmodel.CacheApp(s.in.Apps[i], sh[j])
			j++
		}
	}
	r, err := perfmodel.Finish(w.apps, s.in.Model)
	if err != nil {
		return 0, 0, err
	}
	return r.Unfairness, r.STP, nil
}

// offer makes (path, u, stp) the incumbent if it is better, or equally good with a smaller
// path (lessPath), so that the answer does not depend on which worker found it first.
func (s *searchState) offer(path []choice, u, stp float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.best == nil || s.obj.Better(u, stp, s.bu, s.bs) ||
		!s.obj.Better(s.bu, s.bs, u, stp) && lessPath(path, s.best) {
		s.best = append(s.best[:0:0], path...)
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

// dive builds a first incumbent greedily: at every level it takes the child with the best
// bound (exact for STP without a bandwidth model, so the dive then is the optimum).
func (s *searchState) dive(w *worker) {
	R, r, d := (1<<uint(s.n))-1, s.W, 0
	w.path = w.path[:0]
	for R != 0 {
		nd := &w.nodes[d]
		found := false
		var bc, bk, brest int
		var bu, bst float64
		s.forChildren(R, r, func(c, rest, k int) bool {
			u, st := s.bound(nd, c, k, rest, r-k)
			if !found || s.obj.Better(u, st, bu, bst) {
				found, bc, bk, brest, bu, bst = true, c, k, rest, u, st
			}
			return true
		})
		s.child(nd, bc, bk, &w.nodes[d+1])
		w.path = append(w.path, choice{uint32(bc), int8(bk)})
		R, r, d = brest, r-bk, d+1
	}
	w.leaf(&w.nodes[d])
	w.path = w.path[:0]
}

// Search is the exact optimal clustering: over every partition of the workload into
// clusters and every split of all W ways among them (each cluster ≥ 1 way), the solution
// with the best final objective under in.Model (bandwidth model included) — the space
// PBBCache's optc-* enumerate as Bell(n) clusterings × compositions. It is exact and
// scales because:
//
//  1. cluster tables: the cache-only aggregates of each of the 2^n − 1 clusters at each way
//     count are computed once (buildClusterTables);
//  2. bounds: dynamic programming over subsets gives, for every set R of not yet placed
//     applications and ways r, the exact best cache-only STP and the exact lowest possible
//     maximum slowdown, plus a cheap bound on the minimum (buildBoundTable). These are valid
//     bounds of the final objective for any completion (searchState.bound explains why),
//     without assuming that slowdown curves are monotone in ways — in this data they
//     mostly are not, which is why PBBCache's bound (every unassigned cluster at its
//     largest possible size) is not valid here;
//  3. with a bandwidth model, pressure levels (busBounds): the same tables with the
//     factors at a bus pressure P_l, used at a node when the smallest pressure its
//     completions can reach is at least P_l;
//  4. for STP without a bandwidth model the objective is additive over clusters and the DP
//     value is the optimum itself: the first dive is optimal and everything else is pruned;
//  5. branch and bound: depth-first, clusters in canonical order (the next cluster holds
//     the lowest unplaced application), identical applications taken in order, children
//     pruned by the bounds against a shared incumbent (first from a greedy dive, then
//     improved by local search), the root's children (first cluster, its ways) spread over
//     opt.Jobs workers best bound first. Exact ties are resolved by a fixed order on
//     solutions, so the answer does not depend on the number of workers.
//
// With opt.TimeLimit the search stops there and returns its incumbent with Gap, the proven
// relative distance to the best bound of what it did not finish (0 when optimal).
func Search(in Input, o Objective, opt Options) (*Solution, error) {
	n, W := len(in.Apps), in.Machine.LLC.Ways
	if n > MaxOptcApps {
		return nil, fmt.Errorf("the exact clustering search takes at most %d applications (%d given)", MaxOptcApps, n)
	}
	if n >= 32 || W > 127 {
		return nil, fmt.Errorf("workload too large")
	}
	jobs := max(1, opt.Jobs)
	s := &searchState{in: in, obj: o, n: n, W: W}
	if opt.TimeLimit > 0 {
		s.deadline = time.Now().Add(opt.TimeLimit)
	}
	s.bus = newBusBounds(in.Apps, in.Model)
	if s.bus != nil && s.bus.inert {
		s.bus = nil // the simple model cannot bind: every factor is 1
	}
	s.fast = s.bus == nil
	s.twins()
	N := int64(1) << uint(n)
	var pow3 int64 = 1
	for i := 0; i < n-1; i++ {
		pow3 *= 3
	}
	L := int64(0)
	if s.bus != nil && n <= maxLevelApps && !s.useLag() {
		L = levelCount + 1
	}
	total := (N+pow3/2)*(1+L) + 1 // tables + DPs, then the root children
	var done atomic.Int64
	tick := func(d int64) {
		if opt.Progress != nil {
			opt.Progress(done.Add(d), total)
		}
	}
	s.buildTables(jobs, tick)

	w := s.newWorker()
	root := s.rootNode()
	w.nodes[0] = *root
	s.dive(w)
	if s.err == nil && !s.fast {
		s.improve(w)
	}
	if s.err == nil && s.useLag() && !math.IsInf(s.bus.Pmax, 1) {
		// the simple model's bound needs the incumbent (its bands are chosen against it)
		g := newLagBound(in.Apps, W, s.bus.B, jobs)
		late := func() bool { return !s.deadline.IsZero() && time.Now().After(s.deadline) }
		g.build(s.bus.P[0], s.bus.Pmax, func(st float64) bool { return s.prune(0, st) }, late, jobs)
		s.lag = g
		s.dive(w)
		if s.err == nil {
			s.improve(w)
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	// Root children: the cluster holding application 0 and its ways, best bound first;
	// those the first incumbent already beats are not even stored.
	type kid struct {
		c, k  int
		u, st float64
	}
	full := (1 << uint(n)) - 1
	var kids []kid
	s.forChildren(full, W, func(c, rest, k int) bool {
		u, st := s.bound(root, c, k, rest, W-k)
		if !s.prune(u, st) {
			kids = append(kids, kid{c: c, k: k, u: u, st: st})
		}
		return true
	})
	sort.Slice(kids, func(a, b int) bool { // a total order: deterministic
		if o.Better(kids[a].u, kids[a].st, kids[b].u, kids[b].st) {
			return true
		}
		if o.Better(kids[b].u, kids[b].st, kids[a].u, kids[a].st) {
			return false
		}
		return kids[a].c < kids[b].c || kids[a].c == kids[b].c && kids[a].k < kids[b].k
	})
	fin := make([]atomic.Bool, len(kids)) // root child i finished (explored or pruned)
	var nodes atomic.Int64
	nodes.Add(w.nvis)
	var rootDone atomic.Int64
	remaining := total - done.Load()
	// gap is the proven relative gap of the incumbent: the best bound of the root children
	// not finished yet (sorted best first, so the first of them) against it.
	gap := func() float64 {
		bu := math.Float64frombits(s.incU.Load())
		bs := math.Float64frombits(s.incS.Load())
		for i := range kids {
			kd := &kids[i]
			if fin[i].Load() || s.prune(kd.u, kd.st) {
				continue
			}
			if o == MaxSTP {
				return math.Max(0, (kd.st-bs)/bs)
			}
			return math.Max(0, (bu-kd.u)/bu)
		}
		return 0
	}
	stopStatus := func() {}
	if opt.Status != nil {
		quit, ended := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(ended)
			t := time.NewTicker(statusEvery)
			defer t.Stop()
			for {
				select {
				case <-quit:
					return
				case <-t.C:
					opt.Status(s.visited.Load(), gap())
				}
			}
		}()
		stopStatus = func() { close(quit); <-ended }
	}
	parallelRange(0, len(kids), jobs, 1, func(lo, hi int) {
		w := s.newWorker()
		w.nodes[0] = *root
		w.nodes[0].lv = root.lv
		for i := lo; i < hi; i++ {
			kd := &kids[i]
			if s.prune(kd.u, kd.st) {
				fin[i].Store(true)
				continue
			}
			if !s.deadline.IsZero() && time.Now().After(s.deadline) {
				s.stop.Store(true)
			}
			if s.stop.Load() {
				break
			}
			s.child(root, kd.c, kd.k, &w.nodes[1])
			w.path = append(w.path[:0], choice{uint32(kd.c), int8(kd.k)})
			fin[i].Store(w.dfs(1, full^kd.c, W-kd.k))
		}
		nodes.Add(w.nvis)
		if opt.Progress != nil {
			d := rootDone.Add(int64(hi - lo))
			opt.Progress(total-remaining+remaining*d/int64(max(1, len(kids))), total)
		}
	})
	stopStatus()
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
	sol.Nodes = nodes.Load()
	if s.stop.Load() {
		// The best bound of the unfinished root children (the others are proven).
		bu, bs := s.bu, s.bs
		for i, kd := range kids {
			if !fin[i].Load() && !s.prune(kd.u, kd.st) {
				bu, bs = math.Min(bu, kd.u), math.Max(bs, kd.st)
			}
		}
		if o == MaxSTP {
			sol.Gap = (bs - s.bs) / s.bs
		} else {
			sol.Gap = (s.bu - bu) / s.bu
		}
		sol.Gap = math.Max(0, sol.Gap)
	}
	return sol, nil
}

// twins finds identical applications (the same profile table) for symmetry breaking.
func (s *searchState) twins() {
	s.twinBit = make([]uint32, s.n)
	for j := range s.in.Apps {
		for i := j - 1; i >= 0; i-- {
			if s.in.Apps[i] == s.in.Apps[j] {
				s.twinBit[j] = 1 << uint(i)
				s.hasTwins = true
				break
			}
		}
	}
}
