package ctlsched

import (
	"fmt"
	"sort"

	"colo/cbm"
	"colo/sched"
)

// Fit is what the CLOS budget of one socket (sched.CLOSBudget, resctrl/plan.Budgets)
// leaves of the allocations a controller wants there, and why. It is the one place where
// dcat, lfoc+ and vp honour the budget; it only ever takes ways away from a mask or puts
// a job back in system/default, so it never makes two of the controller's masks overlap
// that did not.
//
//  1. Foreign ways: the planner refuses a mask (the full mask too) that overlaps the
//     ways another agent's group claims. Such a mask loses
//     those ways; if the rest is not a valid mask under rules (not one run on a cache
//     without sparse masks: its longest run is kept, the higher on a tie; fewer than
//     min_cbm_bits ways, or none), the job goes to system/default.
//  2. Control groups: jobs asking for identical mask and MBA share one group (the
//     planner's shared CLOS), so the distinct non-default (mask, MBA) pairs must be at
//     most b.Groups. When they are more, the pairs are ranked — a pair holding a
//     priority job first, then by its lowest job ID (the longest-running job keeps its
//     group) — and the jobs of the pairs past the budget go to system/default: the
//     lowest-priority, youngest tenants lose their partition first.
//
// want must hold every job the controller has allocated on the socket (not only this
// tick's changes); priority says which jobs are priority jobs. Fit returns the allocations
// in want's order and, per job it changed, the reason.
func Fit(want []sched.Allocation, b sched.CLOSBudget, rules cbm.Rules, priority func(job int) bool) ([]sched.Allocation, map[int]string) {
	out := append([]sched.Allocation(nil), want...)
	why := map[int]string{}
	for i, a := range out {
		m := cbm.Mask(a.Mask)
		if m&cbm.Mask(b.Foreign) == 0 {
			continue
		}
		r := m &^ cbm.Mask(b.Foreign)
		if !rules.Sparse {
			r = r.LongestRun(rules.Width)
		}
		if r == 0 || rules.Validate(r) != cbm.Valid {
			out[i].Mask, out[i].MBA = 0, 0
			why[a.Job] = fmt.Sprintf("mask %s overlaps ways %#x another agent's group claims and too little is left: system/default", m, b.Foreign)
			continue
		}
		out[i].Mask = uint64(r)
		why[a.Job] = fmt.Sprintf("mask %s overlaps ways %#x another agent's group claims: %s", m, b.Foreign, r)
	}
	type pair struct {
		mask uint64
		mba  int
	}
	type group struct {
		prio  bool
		first int
		jobs  []int // indices into out
	}
	groups := map[pair]*group{}
	for i, a := range out {
		if a.Mask == 0 {
			continue
		}
		k := pair{a.Mask, a.MBA}
		g := groups[k]
		if g == nil {
			g = &group{first: a.Job}
			groups[k] = g
		}
		g.first = min(g.first, a.Job)
		g.prio = g.prio || (priority != nil && priority(a.Job))
		g.jobs = append(g.jobs, i)
	}
	if len(groups) <= b.Groups {
		return out, why
	}
	ranked := make([]*group, 0, len(groups))
	for _, g := range groups {
		ranked = append(ranked, g)
	}
	sort.Slice(ranked, func(x, y int) bool {
		if ranked[x].prio != ranked[y].prio {
			return ranked[x].prio
		}
		return ranked[x].first < ranked[y].first // job IDs are unique: a total order
	})
	for _, g := range ranked[max(b.Groups, 0):] {
		for _, i := range g.jobs {
			a := out[i]
			out[i].Mask, out[i].MBA = 0, 0
			why[a.Job] = fmt.Sprintf("%d distinct allocations on socket %d, %d control groups (CLOSIDs) left to the run: mask %#x MBA %d merged into system/default",
				len(groups), a.Socket, max(b.Groups, 0), a.Mask, a.MBA)
		}
	}
	return out, why
}
