// The LLC model: per-way occupancy, the split of ways among the workloads that share
// them, and its update each step.

package sim

import (
	"fmt"
	"math"

	"colo/profile"
)

// Occupancy is a workload's current LLC occupancy in bytes on one domain (noise-free).
func (m *Machine) Occupancy(id ID, domain int) (float64, error) {
	w, _, err := m.find(id)
	if err != nil {
		return 0, err
	}
	if domain < 0 || domain >= m.D {
		return 0, fmt.Errorf("domain %d out of range 0..%d", domain, m.D-1)
	}
	s := 0.0
	for j := 0; j < m.W; j++ {
		s += w.occ[domain*m.W+j]
	}
	return s, nil
}

func (m *Machine) rebuild() {
	if m.domWls == nil {
		m.domWls = make([][]*workload, m.D)
		m.sharers = make([][][]*workload, m.D)
		m.order = make([][]int, m.D)
		for d := range m.sharers {
			m.sharers[d] = make([][]*workload, m.W)
			m.order[d] = make([]int, m.W)
		}
	}
	for d := 0; d < m.D; d++ {
		m.domWls[d] = m.domWls[d][:0]
		for j := 0; j < m.W; j++ {
			m.sharers[d][j] = m.sharers[d][j][:0]
		}
	}
	if m.holders == nil {
		m.holders = make([][]*workload, m.D)
	}
	for d := range m.holders {
		m.holders[d] = m.holders[d][:0]
	}
	for _, w := range m.wls {
		w.sumOcc(m.W)
		for d := 0; d < m.D; d++ {
			if d == w.domain || w.occSum[d] != 0 {
				m.holders[d] = append(m.holders[d], w)
			}
		}
		d := w.domain
		m.domWls[d] = append(m.domWls[d], w)
		mask := m.clos[w.clos].masks[d]
		for j := 0; j < m.W; j++ {
			if mask&(1<<uint(j)) != 0 {
				m.sharers[d][j] = append(m.sharers[d][j], w)
			}
		}
	}
	for d := 0; d < m.D; d++ {
		o := m.order[d]
		for j := range o {
			o[j] = j
		}
		// insertion sort: ways with fewer sharers first (exclusive ways before shared ones)
		for i := 1; i < len(o); i++ {
			for k := i; k > 0 && len(m.sharers[d][o[k]]) < len(m.sharers[d][o[k-1]]); k-- {
				o[k], o[k-1] = o[k-1], o[k]
			}
		}
	}
	n := len(m.wls)
	if cap(m.out) < n {
		m.out = make([]Counters, n)
		m.occBuf = make([]uint64, n*m.D)
	}
	m.out = m.out[:n]
	for i := range m.out {
		m.out[i].Occupancy = m.occBuf[i*m.D : (i+1)*m.D]
	}
	if cap(m.busD) < n {
		m.busD = make([]float64, n)
		m.busT = make([]float64, n)
		m.busM = make([]float64, n)
		m.busF = make([]float64, n)
	}
	m.dirty = false
	m.stale = true
}

// Split shares the ways of one LLC domain among the workloads whose masks hold them,
// generalising PBBCache's Whirlpool split (MODEL.md §3.1) to overlapping masks: ways are
// taken one at a time, exclusive ways first (fewest sharers first, then by index), and
// way j is divided among its sharers S_j in proportion to
//
//	m_i = threads_i · quota_i · LLCMPKC_i(min(s_i + 1, W_i)),   s_i ← s_i + m_i / Σ_{l∈S_j} m_l
//
// (equal split if every m_i is 0). When all sharers hold the same mask this is exactly
// perfmodel.Shares. Every way held by some mask is handed out in full, so the shares of a
// domain sum to the number of ways covered by at least one mask: overlapping masks
// conserve capacity.
func (m *Machine) Split(d int) {
	for _, w := range m.domWls[d] {
		w.s = 0
		for j := range w.share {
			w.share[j] = 0
		}
	}
	for _, j := range m.order[d] {
		sh := m.sharers[d][j]
		switch len(sh) {
		case 0:
			continue
		case 1:
			sh[0].share[j] = 1
			sh[0].s++
			continue
		}
		tot := 0.0
		for _, w := range sh {
			c := w.phases[w.phase].mpkc
			w.weight = w.cpus() * profile.Interp(c, math.Min(w.s+1, float64(len(c))))
			tot += w.weight
		}
		for _, w := range sh {
			f := 1 / float64(len(sh))
			if tot > 0 {
				f = w.weight / tot
			}
			w.share[j] = f
			w.s += f
		}
	}
}

// EffectiveWays is the way count at which a workload's table is read, from the ways s it
// is entitled to, the bytes target it would hold there and the bytes resident it holds in
// its domain now (lines outside its mask still hit until evicted):
//
//	eff = max( s · min(1, resident/target),  env⁻¹(resident) )
//
// where env is the running maximum of its llc_usage curve (env(0) = 0) and env⁻¹ its
// piecewise-linear inverse: the fewest ways whose solo run held as much. The first term
// makes a table workload alone in k ways read row k once warm; the second makes resident
// lines — not the mask — decide performance while a partition fills or after it moved.
func EffectiveWays(s, target, resident float64, env []float64) float64 {
	a := 0.0
	if target > 0 {
		a = s * math.Min(1, resident/target)
	}
	b := float64(len(env) - 1)
	for w := 1; w < len(env); w++ {
		if env[w] >= resident {
			lo, hi := env[w-1], env[w]
			b = float64(w - 1)
			if hi > lo {
				b += (resident - lo) / (hi - lo)
			}
			break
		}
	}
	return math.Max(a, b)
}

// updateWay moves the occupancy of way j of domain d toward the split for one step of
// sec seconds. A workload sharing the way with fraction f = share_j/s of its entitlement
// aims at t = f·target bytes there and fills lines at f·insRate (its misses × line size).
// Lines above their holder's aim (including lines of workloads whose mask left the way,
// and of removed workloads) are evicted as others insert: with R the total insertion rate
// into the way and C its capacity, random replacement gives
//
//	occ ← t + (occ − t)·exp(−R·sec/C).
//
// Holders below their aim then grow by min(t − occ, f·insRate·sec), scaled down together
// if that exceeds the free space. The way never holds more than C.
func (m *Machine) updateWay(d, j int, sec float64) {
	C := m.wayBytes
	k := d*m.W + j
	// Only the holders of domain d can have lines in it or a share of it; the others
	// would add exact zeros to the sums below, so skipping them changes no bit.
	hs := m.holders[d]
	R := 0.0
	for _, w := range hs {
		if w.domain == d && w.share[j] > 0 && w.s > 0 {
			R += w.share[j] / w.s * w.insRate
		}
	}
	decay := 1.0
	if R > 0 {
		decay = math.Exp(-R * sec / C)
	}
	total := m.orphan[k] * decay
	m.orphan[k] = total
	need := 0.0
	settled := total == 0
	for _, w := range hs {
		t := 0.0
		if w.domain == d && w.share[j] > 0 && w.s > 0 {
			t = w.share[j] / w.s * w.target
		}
		o := w.occ[k]
		if o > t {
			o = t + (o-t)*decay
			if o != w.occ[k] {
				w.occ[k] = o
				w.occMoved = true
			}
		} else if o < t {
			need += math.Min(t-o, w.share[j]/w.s*w.insRate*sec)
		}
		settled = settled && o == t
		total += o
	}
	// every holder at its aim and no orphan lines: the next updates change nothing until
	// the split does (Step clears settled when it computes the rates again)
	m.settled[k] = settled
	if need <= 0 {
		return
	}
	scale := 1.0
	if free := C - total; need > free {
		scale = math.Max(0, free) / need
	}
	for _, w := range hs {
		if w.domain != d || w.share[j] <= 0 || w.s <= 0 {
			continue
		}
		t := w.share[j] / w.s * w.target
		if o := w.occ[k]; o < t {
			if v := o + scale*math.Min(t-o, w.share[j]/w.s*w.insRate*sec); v != o {
				w.occ[k] = v
				w.occMoved = true
			}
		}
	}
}
