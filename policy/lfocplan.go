package policy

import (
	"fmt"
	"math"
	"unsafe"

	"colo/metric"
	"colo/perfmodel"
	"colo/profile"
)

// LFOCPlanner runs LFOC / LFOC+ (LFOCClusters) again and again without allocating, for
// the online controller's 500 ms decisions: every buffer is kept between calls, and the
// Whirlpool pair curves of two sensitive applications (the bulk of the work) are cached
// across calls, keyed by the identity of the applications' curve slices — they change only
// when an application is re-sampled, which gives it new slices. Curves must therefore
// never be modified in place while a planner holds them. The zero value is ready to use;
// not safe for concurrent use.
type LFOCPlanner struct {
	st, cs, ls, tmp []int
	out             []Cluster
	members         []int // backing of out[k].Apps: n slots per cluster
	s               [][]float64
	w, order        []int
	extra, merged   []bool
	partner         []int
	solP, solW      []int // recorded solutions, n entries each
	cost1w          []float64
	ok1w            []bool
	pc              []int32 // per local pair (a < b): offset of its curves in pool, −1 unknown
	sd              []float64
	cache           map[pairKey]int32
	pool            []float64
	sig             []*float64 // curves of the local applications of the last pc
}

// maxPairCache bounds the pair curves a planner keeps (2W floats each).
const maxPairCache = 1 << 14

// pairKey identifies the curves of an ordered pair of applications.
type pairKey struct {
	sa, ma, sb, mb *float64
	w              int
}

func first(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	return unsafe.SliceData(v)
}

func growInts(b []int, n int) []int {
	if cap(b) < n {
		return make([]int, n)
	}
	return b[:n]
}

func growBools(b []bool, n int) []bool {
	if cap(b) < n {
		return make([]bool, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// Plan is LFOCClusters(plus, ...) on the planner's buffers: the clusters returned (and
// their Apps) are valid until the next call.
func (p *LFOCPlanner) Plan(plus bool, classes []Class, curves []AppCurves, ways int, pr LFOCParams) ([]Cluster, error) {
	if len(classes) != len(curves) {
		return nil, fmt.Errorf("lfoc: %d classes for %d applications", len(classes), len(curves))
	}
	if pr.MaxStreamingPerPart < 1 || pr.StreamingWays < 1 || pr.MaxStreamingParts < 1 || pr.LightPerStreaming < 0 {
		return nil, fmt.Errorf("lfoc: invalid parameters %+v", pr)
	}
	n := len(classes)
	st, cs, ls := p.st[:0], p.cs[:0], p.ls[:0]
	for i, c := range classes {
		switch c {
		case Sensitive:
			cs = append(cs, i)
		case Light:
			ls = append(ls, i)
		default: // streaming and unknown
			st = append(st, i)
		}
	}
	p.st, p.cs, p.ls = st, cs, ls
	p.members = growInts(p.members, n*(ways+1))
	p.out = p.out[:0]
	newCluster := func(w int) *Cluster {
		k := len(p.out)
		p.out = append(p.out, Cluster{Apps: p.members[k*n : k*n : k*n+n], Ways: w})
		return &p.out[k]
	}
	if len(cs) == 0 {
		c := newCluster(ways)
		for i := 0; i < n; i++ {
			c.Apps = append(c.Apps, i)
		}
		return p.out, nil
	}
	nStr, used := 0, 0
	if len(st) > 0 {
		parts := min(pr.MaxStreamingParts, ceilDiv(len(st), pr.MaxStreamingPerPart))
		used = parts * pr.StreamingWays
		if plus {
			c := newCluster(used)
			c.Apps = append(c.Apps, st...)
		} else {
			r := ceilDiv(len(st), parts)
			for k := 0; k < parts; k++ {
				lo, hi := k*r, min((k+1)*r, len(st))
				if lo < hi {
					c := newCluster(pr.StreamingWays)
					c.Apps = append(c.Apps, st[lo:hi]...)
				}
			}
		}
		nStr = len(p.out)
	}
	remaining := ways - used
	if remaining < 1 {
		return nil, fmt.Errorf("lfoc: the streaming partitions take all %d ways", ways)
	}
	if len(cs) > remaining {
		// the least sensitive (lowest 1-way slowdown) are handled as light-sharing
		byS := p.sortDesc(cs, func(i int) float64 { return curves[i].Slowdown[0] })
		p.tmp = append(p.tmp[:0], byS...)
		cs = cs[:0]
		cs = append(cs, p.tmp[:remaining]...)
		ls = append(ls, p.tmp[remaining:]...)
		p.ls = ls
		insertionSortInts(cs)
	}
	if plus && len(cs) > 1 {
		p.pairClustering(cs, curves, remaining, pr.T1Threshold, newCluster)
	} else {
		p.s = p.s[:0]
		for _, a := range cs {
			p.s = append(p.s, curves[a].Slowdown)
		}
		p.w = lookaheadInto(growInts(p.w, len(cs)), p.s, remaining)
		for i, w := range p.w {
			c := newCluster(w)
			c.Apps = append(c.Apps, cs[i])
		}
	}
	out := p.out
	li := 0
	for k := 0; k < nStr; k++ {
		room := pr.MaxStreamingPerPart*out[k].Ways - len(out[k].Apps) + 1
		if room <= 0 {
			continue
		}
		take := min(room*pr.LightPerStreaming, len(ls)-li)
		out[k].Apps = append(out[k].Apps, ls[li:li+take]...)
		li += take
	}
	for k := 0; li < len(ls); li, k = li+1, k+1 {
		c := nStr + k%(len(out)-nStr)
		out[c].Apps = append(out[c].Apps, ls[li])
	}
	return out, nil
}

// sortDesc returns idx sorted by descending key, stable, in the planner's order buffer.
func (p *LFOCPlanner) sortDesc(idx []int, key func(int) float64) []int {
	o := append(p.order[:0], idx...)
	for i := 1; i < len(o); i++ {
		for j := i; j > 0 && key(o[j]) > key(o[j-1]); j-- {
			o[j], o[j-1] = o[j-1], o[j]
		}
	}
	p.order = o
	return o
}

func insertionSortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// initialPartitioning is InitialPartitioning into w (len(s)).
func initialPartitioning(w []int, extra []bool, s [][]float64, total int, threshold float64) []int {
	n := len(s)
	w = lookaheadInto(w, s, total)
	at := func(i, ways int) float64 { return s[i][ways-1] }
	for rep := 0; rep < n; rep++ {
		i := 0
		for k := 1; k < n; k++ {
			if at(k, w[k]) > at(i, w[i]) {
				i = k
			}
		}
		if extra[i] || w[i]+1 > len(s[i]) {
			return w
		}
		best, bj := math.Inf(1), -1
		for j := 0; j < n; j++ {
			if j == i || extra[j] || w[j] == 1 || at(j, w[j]-1) > at(i, w[i]) {
				continue
			}
			c := (at(i, w[i]+1) - at(i, w[i])) + (at(j, w[j]-1) - at(j, w[j]))
			if c < best {
				best, bj = c, j
			}
		}
		if bj < 0 || best > threshold {
			return w
		}
		w[i]++
		w[bj]--
		extra[i] = true
	}
	return w
}

// pair returns the slowdowns of local applications i and j sharing k ways (Whirlpool,
// seed001.md §1.5 get_scurves), computing the pair's curves on first use — or taking them
// from the cross-call cache when neither application's curves changed.
func (p *LFOCPlanner) pair(apps []int, curves []AppCurves, i, j, k int) (float64, float64) {
	n := len(apps)
	a, b := min(i, j), max(i, j)
	off := p.pc[a*n+b]
	W := len(curves[apps[a]].Slowdown)
	if off < 0 {
		ca, cb := curves[apps[a]], curves[apps[b]]
		key := pairKey{first(ca.Slowdown), first(ca.LLCMPKC), first(cb.Slowdown), first(cb.LLCMPKC), W}
		var ok bool
		if off, ok = p.cache[key]; !ok {
			off = int32(len(p.pool))
			p.pool = append(p.pool, make([]float64, 2*W)...)
			pool := p.pool[off : int(off)+2*W]
			var shares [2]float64
			perfmodel.SharesSteps(shares[:], [][]float64{ca.LLCMPKC, cb.LLCMPKC}, W, func(k int, f []float64) {
				pool[k-1] = profile.Interp(ca.Slowdown, f[0])
				pool[W+k-1] = profile.Interp(cb.Slowdown, f[1])
			})
			p.cache[key] = off
		}
		p.pc[a*n+b] = off
	}
	x, y := p.pool[int(off)+k-1], p.pool[int(off)+W+k-1]
	if i > j {
		x, y = y, x
	}
	return x, y
}

// pairClustering is PairClustering, appending its clusters with newCluster.
func (p *LFOCPlanner) pairClustering(apps []int, curves []AppCurves, total int, threshold float64, newCluster func(int) *Cluster) {
	n := len(apps)
	p.s = p.s[:0]
	for _, a := range apps {
		p.s = append(p.s, curves[a].Slowdown)
	}
	s := p.s
	at := func(i, w int) float64 { return s[i][w-1] }
	if p.cache == nil || len(p.cache)+n*n > maxPairCache {
		p.cache, p.pool = make(map[pairKey]int32), p.pool[:0] // forget curves of the past
		p.sig = p.sig[:0]
	}
	p.extra = growBools(p.extra, n)
	w := initialPartitioning(growInts(p.w, n), p.extra, s, total, threshold)
	p.w = w
	// The local pair → pool offsets stay valid while the same curves sit at the same
	// local indices (the usual case between two re-samplings): then no cache lookup at all.
	same := len(p.sig) == 2*n && len(p.pc) == n*n
	for i, a := range apps {
		if same && (p.sig[2*i] != first(curves[a].Slowdown) || p.sig[2*i+1] != first(curves[a].LLCMPKC)) {
			same = false
		}
	}
	if !same {
		if cap(p.sig) < 2*n {
			p.sig = make([]*float64, 2*n)
		}
		p.sig = p.sig[:2*n]
		for i, a := range apps {
			p.sig[2*i], p.sig[2*i+1] = first(curves[a].Slowdown), first(curves[a].LLCMPKC)
		}
		if cap(p.pc) < n*n {
			p.pc = make([]int32, n*n)
		}
		p.pc = p.pc[:n*n]
		for i := range p.pc {
			p.pc[i] = -1
		}
	}
	partner := growInts(p.partner, n)
	for i := range partner {
		partner[i] = -1
	}
	p.partner = partner
	p.solP, p.solW = p.solP[:0], p.solW[:0]
	record := func() {
		p.solP = append(p.solP, partner...)
		p.solW = append(p.solW, w...)
	}
	record()
	if cap(p.cost1w) < n*n {
		p.cost1w = make([]float64, n*n)
	}
	cost1w := p.cost1w[:n*n]
	ok1w := growBools(p.ok1w, n*n)
	p.ok1w = ok1w
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if w[i] == 1 && w[j] == 1 {
				si, sj := p.pair(apps, curves, i, j, 1)
				cost1w[i*n+j], ok1w[i*n+j] = (si+sj)-(at(i, 1)+at(j, 1)), true
			}
		}
	}
	drop := func(x int) {
		for y := 0; y < n; y++ {
			ok1w[min(x, y)*n+max(x, y)] = false
		}
	}
	merged := growBools(p.merged, n)
	p.merged = merged
	all := growInts(p.tmp, n)
	for i := range all {
		all[i] = i
	}
	p.tmp = all
	for _, i := range p.sortDesc(all, func(i int) float64 { return at(i, w[i]) }) {
		if merged[i] {
			continue
		}
		costT2, ba, bb := math.Inf(1), -1, -1
		if w[i]+1 <= len(s[i]) {
			best := math.Inf(1)
			for a := 0; a < n; a++ {
				for b := a + 1; b < n; b++ {
					if ok1w[a*n+b] && a != i && b != i && cost1w[a*n+b] < best {
						best, ba, bb = cost1w[a*n+b], a, b
					}
				}
			}
			if ba >= 0 {
				costT2 = (at(i, w[i]+1) - at(i, w[i])) + best
			}
		}
		if costT2 < 0 {
			merged[ba], merged[bb] = true, true
			partner[ba], partner[bb] = bb, ba
			w[ba], w[bb] = 1, 1 // the pair shares one way; the other way goes to i
			w[i]++
			drop(ba)
			drop(bb)
			drop(i)
			record()
			continue
		}
		bestT3, bj := math.Inf(1), -1
		for j := 0; j < n; j++ {
			if j == i || merged[j] {
				continue
			}
			si, sj := p.pair(apps, curves, i, j, w[i]+w[j])
			if c := si + sj - at(i, w[i]) - at(j, w[j]); c < bestT3 {
				bestT3, bj = c, j
			}
		}
		if bestT3 < 0 {
			merged[i], merged[bj] = true, true
			partner[i], partner[bj] = bj, i
			tw := w[i] + w[bj]
			w[i], w[bj] = tw, tw
			drop(i)
			drop(bj)
			record()
		}
	}
	// Pick the fairest recorded solution, ties to the highest STP.
	if cap(p.sd) < n {
		p.sd = make([]float64, n)
	}
	sd := p.sd[:n]
	bestU, bestSTP, bi := math.Inf(1), math.Inf(-1), 0
	for k := 0; k < len(p.solP)/n; k++ {
		sp, sw := p.solP[k*n:k*n+n], p.solW[k*n:k*n+n]
		for i := 0; i < n; i++ {
			if j := sp[i]; j >= 0 {
				sd[i], _ = p.pair(apps, curves, i, j, sw[i])
			} else {
				sd[i] = at(i, sw[i])
			}
		}
		u, stp := metric.Unfairness(sd), metric.STP(sd)
		if u < bestU || u == bestU && stp > bestSTP {
			bestU, bestSTP, bi = u, stp, k
		}
	}
	sp, sw := p.solP[bi*n:bi*n+n], p.solW[bi*n:bi*n+n]
	for i := 0; i < n; i++ {
		j := sp[i]
		if j >= 0 && j < i {
			continue
		}
		c := newCluster(sw[i])
		c.Apps = append(c.Apps, apps[i])
		if j >= 0 {
			c.Apps = append(c.Apps, apps[j])
		}
	}
}
