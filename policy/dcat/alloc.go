package dcat

import (
	"math"
	"sort"
	"time"

	"colo/cbm"
)

// allocate is step 5 of the paper: release, Reclaim, restores, then growth (+1 per round,
// Unknown before Receiver), on way counts only; layout turns counts into masks.
func (c *Controller) allocate() {
	capa := c.opt.Capacity()
	minW := c.opt.MinWays
	used := 0
	for _, id := range c.ids {
		w := c.ws[id]
		if !w.placed {
			w.ways = 0
			w.set(Reclaim, w.baseline)
		}
		if w.placed && w.target < w.ways {
			w.ways = max(w.target, minW)
		}
		used += w.ways
	}
	free := capa - used

	// Reclaim: the part up to the baseline is guaranteed (taken back from workloads above
	// their baseline if the pool is short); the part of a preferred size above the baseline
	// comes from the pool only.
	need := 0
	for _, id := range c.ids {
		w := c.ws[id]
		if w.state == Reclaim {
			need += max(0, min(w.target, w.baseline)-w.ways)
		}
	}
	if need > free {
		free += c.takeBack(need - free)
	}
	for _, id := range c.ids {
		w := c.ws[id]
		if w.state != Reclaim {
			continue
		}
		g := max(0, min(w.target, w.baseline)-w.ways)
		w.ways += g
		free -= g
	}
	for _, id := range c.ids {
		w := c.ws[id]
		if w.state != Reclaim || w.target <= w.ways {
			continue
		}
		x := min(w.target-w.ways, free)
		w.ways += x
		free -= x
	}
	// Restores: a Keeper whose last shrink cost too much gets its way back before growth.
	for _, id := range c.ids {
		w := c.ws[id]
		if w.state == Keeper && w.target > w.ways && free > 0 {
			w.ways++
			free--
		}
	}
	// Growth, +1 per round: Unknown first (to find Streaming workloads sooner), then Receiver;
	// within a class, the workload least above its baseline first (ties: ID).
	grow := func(s State) []*workload {
		var out []*workload
		for _, id := range c.ids {
			w := c.ws[id]
			if w.state == s && w.target > w.ways {
				out = append(out, w)
			}
		}
		sort.SliceStable(out, func(i, j int) bool {
			return out[i].ways-out[i].baseline < out[j].ways-out[j].baseline
		})
		return out
	}
	var starved []*workload
	for _, w := range grow(Unknown) {
		if free > 0 {
			w.ways++
			free--
		} else if w.noGain {
			// "all the available cache size is used" without gain: Streaming.
			free += w.ways - minW
			w.ways = minW
			w.set(Streaming, minW)
		} else {
			starved = append(starved, w)
		}
	}
	for _, w := range starved {
		if free > 0 {
			w.ways++
			free--
		}
	}
	for _, w := range grow(Receiver) {
		if free > 0 {
			w.ways++
			free--
		}
	}
}

// takeBack removes up to k ways from workloads above their baseline (never below it) and
// returns how many it removed.
func (c *Controller) takeBack(k int) int {
	var cand []*workload
	for _, id := range c.ids {
		w := c.ws[id]
		if w.placed && w.state != Reclaim && w.ways > w.baseline {
			cand = append(cand, w)
		}
	}
	if c.opt.Policy == MaxPerformance {
		return c.takeBackKnapsack(cand, k)
	}
	taken := 0
	for taken < k {
		var v *workload
		for _, w := range cand {
			if w.ways > w.baseline && (v == nil || w.ways-w.baseline > v.ways-v.baseline) {
				v = w
			}
		}
		if v == nil {
			break
		}
		v.ways--
		taken++
	}
	return taken
}

// SizeValue is one candidate size of a workload in the knapsack: a number of ways and the
// normalised IPC measured there.
type SizeValue struct {
	Ways  int
	Value float64
}

// candidates lists the sizes the max-performance search may give w: its baseline (normalised
// IPC 1 by definition unless measured) and every measured size between the baseline and its
// current ways; unmeasured sizes are not candidates (seed003.md §1.6, "if table entries are
// valid"), except the current size, valued as the baseline when unmeasured.
func (c *Controller) candidates(w *workload) []SizeValue {
	var t map[int]float64
	if w.cur >= 0 {
		t = w.phases[w.cur].table
	}
	out := []SizeValue{}
	for n := w.baseline; n <= w.ways; n++ {
		v, ok := t[n]
		switch {
		case ok:
		case n == w.baseline || n == w.ways:
			v = 1
		default:
			continue
		}
		out = append(out, SizeValue{Ways: n, Value: v})
	}
	return out
}

// BestSizes solves the max-performance allocation of seed003.md §1.6: choose one size per
// workload from its candidate list so that Σ ways ≤ budget and Σ normalised IPC is maximal,
// a multiple-choice knapsack solved exactly by dynamic programming in O(n · budget · sizes).
// Ties (within 1e-9) go to the solution keeping more ways, then to earlier workloads keeping
// more. It returns the chosen index into each list, or nil if no choice fits the budget.
func BestSizes(options [][]SizeValue, budget int) []int {
	n := len(options)
	const eps = 1e-9
	type cell struct {
		value float64
		ways  int
		ok    bool
	}
	// best[i][b]: optimum for options[i:] within budget b; pick[i][b]: the choice at i.
	best := make([][]cell, n+1)
	pick := make([][]int, n+1)
	for i := range best {
		best[i] = make([]cell, budget+1)
		pick[i] = make([]int, budget+1)
	}
	for b := 0; b <= budget; b++ {
		best[n][b] = cell{ok: true}
	}
	for i := n - 1; i >= 0; i-- {
		for b := 0; b <= budget; b++ {
			best[i][b] = cell{value: math.Inf(-1)}
			pick[i][b] = -1
			// Larger sizes first so that ties keep more ways for earlier workloads.
			for j := len(options[i]) - 1; j >= 0; j-- {
				o := options[i][j]
				if o.Ways > b || !best[i+1][b-o.Ways].ok {
					continue
				}
				r := best[i+1][b-o.Ways]
				v, wy := o.Value+r.value, o.Ways+r.ways
				cur := best[i][b]
				if !cur.ok || v > cur.value+eps || (math.Abs(v-cur.value) <= eps && wy > cur.ways) {
					best[i][b] = cell{value: v, ways: wy, ok: true}
					pick[i][b] = j
				}
			}
		}
	}
	if n == 0 {
		return []int{}
	}
	if !best[0][budget].ok {
		return nil
	}
	out := make([]int, n)
	b := budget
	for i := 0; i < n; i++ {
		out[i] = pick[i][b]
		b -= options[i][out[i]].Ways
	}
	return out
}

func (c *Controller) takeBackKnapsack(cand []*workload, k int) int {
	held := 0
	opts := make([][]SizeValue, len(cand))
	for i, w := range cand {
		held += w.ways
		opts[i] = c.candidates(w)
	}
	budget := held - k
	if budget < 0 {
		budget = 0
	}
	choice := BestSizes(opts, budget)
	if choice == nil { // cannot happen while baselines are admitted, kept for safety
		return 0
	}
	taken := 0
	for i, w := range cand {
		nw := opts[i][choice[i]].Ways
		taken += w.ways - nw
		w.ways = nw
	}
	return taken
}

// layout turns the way counts into masks and builds the decision.
func (c *Controller) layout(now time.Duration) Decision {
	var reserved uint64
	if c.opt.HostWays > 0 {
		reserved = uint64(cbm.Run(c.opt.Ways-c.opt.HostWays, c.opt.HostWays))
	}
	ps := make([]Placement, 0, len(c.ids))
	for _, id := range c.ids {
		w := c.ws[id]
		ps = append(ps, Placement{ID: id, Ways: w.ways, Old: w.mask})
	}
	masks, moved, err := Layout(ps, c.opt.Ways, reserved, c.opt.Sparse)
	if err != nil {
		// The allocation never exceeds the capacity; reaching this is a bug.
		panic(err)
	}
	d := Decision{At: now, MovedWays: moved, HostMask: reserved}
	if reserved == 0 {
		d.HostMask = uint64(cbm.Full(c.opt.Ways))
	}
	for _, id := range c.ids {
		w := c.ws[id]
		m := masks[id]
		if m != w.mask {
			d.Changed = true
			if w.placed {
				// The IPC of a window that straddles a resize belongs to neither size.
				w.resetAcc(now)
			}
		}
		if !w.placed {
			w.placed = true
			w.resetAcc(now)
		}
		w.mask = m
		d.Allocs = append(d.Allocs, Alloc{ID: id, Baseline: w.baseline, Ways: w.ways, Mask: m, State: w.state, Phase: max(w.cur, idlePhase)})
	}
	if len(ps) < c.lastCount {
		d.Changed = true
	}
	c.lastCount = len(ps)
	return d
}
