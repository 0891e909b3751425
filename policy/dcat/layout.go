package dcat

import (
	"fmt"
	"math/bits"
	"sort"

	"colo/cbm"
)

// Placement is one workload's way count to lay out and the mask it holds now (0 when it
// holds none yet).
type Placement struct {
	ID   string
	Ways int
	Old  uint64
}

// MovedWays is the repacking cost of one workload going from mask old to mask new: the ways
// it keeps in number but not in place, whose cached lines are lost (CAT only restricts where
// a class may fill, so lines in ways it no longer owns age out and its new ways start cold):
//
//	moved = min(|old|, |new|) − |old ∩ new|
//
// A plain shrink or a plain growth in place costs 0; the ways lost by a shrink and the cold
// ways of a growth are inherent to the resize, not to the layout (seed003.md §1.10 [eng]:
// "a good scheme keeps order stable and moves the fewest ways").
func MovedWays(old, new uint64) int {
	return min(bits.OnesCount64(old), bits.OnesCount64(new)) - bits.OnesCount64(old&new)
}

// Layout assigns each placement a mask of exactly Ways bits inside the ways [0, n) that are
// not in reserved, with no two masks overlapping, and returns the masks (by ID) and the total
// MovedWays of the change.
//
// Contiguous (Intel CAT: every CBM is one run of 1-bits, seed003.md §1.10): the positions are
// chosen by dynamic programming over (workload, first free way) to minimise the total moved
// ways for the workloads' current left-to-right order, so growing into a non-adjacent free way
// shifts as few neighbours as possible; when that order still moves ways, orders differing by
// the relocation of one workload are tried too (up to 20 workloads). A workload without a
// current mask is inserted at the position in the order that costs least. reserved must itself be one run at either end
// (or 0), so that the free ways form one run.
//
// Sparse (AMD, Intel parts with info/L3/sparse_masks): every workload keeps as many of its
// current ways as it still needs (its lowest ones), and growth takes the lowest free ways;
// nothing ever moves, the cost is 0.
//
// An error means the sizes do not fit; nothing is returned half-laid-out.
func Layout(ps []Placement, n int, reserved uint64, sparse bool) (map[string]uint64, int, error) {
	if n < 1 || n > 64 {
		return nil, 0, fmt.Errorf("layout: %d ways is outside 1..64", n)
	}
	full := uint64(cbm.Full(n))
	if reserved&^full != 0 {
		return nil, 0, fmt.Errorf("layout: reserved mask %#x is wider than %d ways", reserved, n)
	}
	avail := n - bits.OnesCount64(reserved)
	need := 0
	seen := map[string]bool{}
	for _, p := range ps {
		if p.Ways < 1 {
			return nil, 0, fmt.Errorf("layout: workload %q needs %d ways; every class needs at least 1", p.ID, p.Ways)
		}
		if seen[p.ID] {
			return nil, 0, fmt.Errorf("layout: workload %q listed twice", p.ID)
		}
		seen[p.ID] = true
		need += p.Ways
	}
	if need > avail {
		return nil, 0, fmt.Errorf("layout: %d ways requested but only %d of %d are free of the reserved mask %#x", need, avail, n, reserved)
	}
	if sparse {
		return layoutSparse(ps, full&^reserved)
	}
	lo, hi, err := freeRun(reserved, n)
	if err != nil {
		return nil, 0, err
	}
	return layoutContiguous(ps, lo, hi)
}

// freeRun returns the one run [lo, hi) of ways not in reserved.
func freeRun(reserved uint64, n int) (int, int, error) {
	if reserved == 0 {
		return 0, n, nil
	}
	free := uint64(cbm.Full(n)) &^ reserved
	if free == 0 {
		return 0, 0, fmt.Errorf("layout: the reserved mask %#x leaves no way free", reserved)
	}
	lo := bits.TrailingZeros64(free)
	hi := 64 - bits.LeadingZeros64(free)
	if free != uint64(cbm.Run(lo, hi-lo)) {
		return 0, 0, fmt.Errorf("layout: reserved mask %#x splits the free ways in two; reserve ways at one end of the cache", reserved)
	}
	return lo, hi, nil
}

func layoutSparse(ps []Placement, free uint64) (map[string]uint64, int, error) {
	out := make(map[string]uint64, len(ps))
	used := uint64(0)
	// Keep: each workload keeps its lowest min(|old|, ways) current ways that are still free.
	for _, p := range ps {
		keep := uint64(0)
		for m := p.Old & free &^ used; m != 0 && bits.OnesCount64(keep) < p.Ways; m &= m - 1 {
			keep |= m & -m
		}
		out[p.ID] = keep
		used |= keep
	}
	// Grow: in input order, the lowest free ways.
	for _, p := range ps {
		m := out[p.ID]
		for bits.OnesCount64(m) < p.Ways {
			f := free &^ used
			b := f & -f
			m |= b
			used |= b
		}
		out[p.ID] = m
	}
	moved := 0
	for _, p := range ps {
		moved += MovedWays(p.Old, out[p.ID])
	}
	return out, moved, nil
}

// maxRelocate bounds the order search of layoutContiguous (16 classes of service on Intel).
const maxRelocate = 20

// layoutContiguous places the workloads as disjoint runs inside [lo, hi).
func layoutContiguous(ps []Placement, lo, hi int) (map[string]uint64, int, error) {
	var placed, fresh []Placement
	for _, p := range ps {
		if p.Old != 0 {
			placed = append(placed, p)
		} else {
			fresh = append(fresh, p)
		}
	}
	sort.SliceStable(placed, func(i, j int) bool {
		return bits.TrailingZeros64(placed[i].Old) < bits.TrailingZeros64(placed[j].Old)
	})
	order := placed
	// Insert each new workload (in input order) where it costs least.
	for _, f := range fresh {
		best, bestCost := -1, 0
		for at := 0; at <= len(order); at++ {
			try := make([]Placement, 0, len(order)+1)
			try = append(try, order[:at]...)
			try = append(try, f)
			try = append(try, order[at:]...)
			_, c := dpPlace(try, lo, hi)
			if best < 0 || c < bestCost {
				best, bestCost = at, c
			}
		}
		next := make([]Placement, 0, len(order)+1)
		next = append(next, order[:best]...)
		next = append(next, f)
		next = append(next, order[best:]...)
		order = next
	}
	starts, cost := dpPlace(order, lo, hi)
	// The order itself may be what forces moves (a workload growing into a way beyond a
	// neighbour): try relocating any single workload elsewhere in the order, which lets a
	// small neighbour hop over a growing one. Only when the kept order moves something, and
	// for at most maxRelocate workloads (n² placements of O(n·W²) each).
	if cost > 0 && len(order) <= maxRelocate {
		for i := range order {
			rest := make([]Placement, 0, len(order)-1)
			rest = append(rest, order[:i]...)
			rest = append(rest, order[i+1:]...)
			for at := 0; at <= len(rest); at++ {
				if at == i {
					continue // the kept order
				}
				try := make([]Placement, 0, len(order))
				try = append(try, rest[:at]...)
				try = append(try, order[i])
				try = append(try, rest[at:]...)
				if st, c := dpPlace(try, lo, hi); c < cost {
					order, starts, cost = try, st, c
					break
				}
			}
			if cost == 0 {
				break
			}
		}
	}
	out := make(map[string]uint64, len(order))
	for i, p := range order {
		out[p.ID] = uint64(cbm.Run(starts[i], p.Ways))
	}
	return out, cost, nil
}

// dpPlace chooses start positions for the runs in the given order inside [lo, hi), minimising
// the total MovedWays; ties go to the leftmost packing. O(len(order)·(hi−lo)²).
func dpPlace(order []Placement, lo, hi int) ([]int, int) {
	n := len(order)
	width := hi - lo
	const inf = 1 << 30
	// cost[i][x]: minimal cost to place order[i:] with the first free way at lo+x.
	cost := make([][]int, n+1)
	choice := make([][]int, n+1)
	for i := range cost {
		cost[i] = make([]int, width+1)
		choice[i] = make([]int, width+1)
	}
	suffix := make([]int, n+1) // ways needed by order[i:]
	for i := n - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + order[i].Ways
	}
	for i := n - 1; i >= 0; i-- {
		for x := 0; x <= width; x++ {
			cost[i][x] = inf
			choice[i][x] = -1
			for s := x; s+suffix[i] <= width; s++ {
				rest := cost[i+1][s+order[i].Ways]
				if rest >= inf {
					continue
				}
				c := MovedWays(order[i].Old, uint64(cbm.Run(lo+s, order[i].Ways))) + rest
				if c < cost[i][x] {
					cost[i][x], choice[i][x] = c, s
				}
			}
		}
	}
	starts := make([]int, n)
	x := 0
	for i := 0; i < n; i++ {
		s := choice[i][x]
		starts[i] = lo + s
		x = s + order[i].Ways
	}
	if n == 0 {
		return starts, 0
	}
	return starts, cost[0][0]
}
