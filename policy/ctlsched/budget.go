package ctlsched

import (
	"fmt"
	"maps"
	"slices"
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
//     most b.Groups when the budget is known (b.Allows; an unknown budget, the zero
//     value, limits nothing). When they are more, the pairs are ranked — a pair holding a
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
	if b.Allows(len(groups)) {
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

// Want records the allocation the controller asks for job a.Job; Flush sends it, within
// the CLOS budget.
func (t *Jobs) Want(a sched.Allocation) {
	if !slices.Contains(t.order, a.Job) {
		t.order = append(t.order, a.Job)
	}
	t.want[a.Job] = a
}

// Flush sends (Send) what the controller asked for since the last Flush, in the order it
// asked, after fitting every wanted allocation of each socket into obs.CLOS (Fit; nil: no
// limit). A job Fit changes, or changed at an earlier Flush, is sent too (ascending ID,
// after the others) even if the controller did not ask again, so that a job put in
// system/default gets its allocation back when the budget allows it. Each change of a
// job's fate is said once in the decision log, prefixed with who. Where the budget does
// not bind, Flush sends exactly what Send would have.
func (t *Jobs) Flush(d *sched.Decisions, obs *sched.Observation, rules cbm.Rules, who string) {
	order := t.order
	t.order = nil
	eff := map[int]sched.Allocation{}
	why := map[int]string{}
	bySocket := map[int][]sched.Allocation{}
	for _, id := range slices.Sorted(maps.Keys(t.want)) {
		a := t.want[id]
		eff[id] = a
		if a.Socket >= 0 && a.Socket < len(obs.CLOS) {
			bySocket[a.Socket] = append(bySocket[a.Socket], a)
		}
	}
	prio := map[int]bool{}
	for _, r := range obs.Running {
		prio[r.ID] = r.Priority
	}
	for _, s := range slices.Sorted(maps.Keys(bySocket)) {
		fit, w := Fit(bySocket[s], obs.CLOS[s], rules, func(id int) bool { return prio[id] })
		for _, a := range fit {
			eff[a.Job] = a
		}
		maps.Copy(why, w)
	}
	send := func(id int) {
		a := eff[id]
		if why[id] != "" {
			a.Reason += "/clos-budget"
		}
		t.Send(d, a)
		switch {
		case why[id] == t.degraded[id]:
		case why[id] != "":
			d.Log = append(d.Log, fmt.Sprintf("%s: job %d: %s", who, id, why[id]))
		default:
			d.Log = append(d.Log, fmt.Sprintf("%s: job %d: the CLOS budget allows its allocation again", who, id))
		}
		if why[id] != "" {
			t.degraded[id] = why[id]
		} else {
			delete(t.degraded, id)
		}
	}
	var ids []int
	done := map[int]bool{}
	for _, id := range order {
		if _, ok := t.want[id]; ok && !done[id] {
			done[id] = true
			ids = append(ids, id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(t.want)) {
		if !done[id] && (why[id] != "" || t.degraded[id] != "") {
			ids = append(ids, id)
		}
	}
	if !t.overBudget(ids, eff, obs.CLOS) {
		for _, id := range ids {
			send(id)
		}
		return
	}
	for _, id := range t.within(ids, eff, obs.CLOS) {
		if id < 0 { // a hop through system/default
			a := t.sent[^id]
			t.Send(d, sched.Allocation{Job: ^id, Socket: a.Socket, Reason: "clos-budget-hop"})
			d.Log = append(d.Log, fmt.Sprintf("%s: job %d: through system/default to %#x: socket %d has %d control groups (CLOSIDs) and its group keeps other jobs",
				who, ^id, eff[^id].Mask, a.Socket, obs.CLOS[a.Socket].Groups))
			continue
		}
		send(id)
	}
}

// key is an allocation's group: socket, mask and MBA.
func key(a sched.Allocation) [3]int64 { return [3]int64{int64(a.Socket), int64(a.Mask), int64(a.MBA)} }

// state is the allocations the run loop holds (jobs in system/default and jobs whose
// allocation is unknown after Unsent left out).
func (t *Jobs) state() map[int]sched.Allocation {
	st := map[int]sched.Allocation{}
	for id, a := range t.sent {
		if a.Mask != 0 && a.MBA >= 0 {
			st[id] = a
		}
	}
	return st
}

// fits applies a to state and reports whether a's socket then holds at most its budget of
// distinct allocations (jobs with identical values share a group; a group whose last job
// leaves is gone, as resctrl/plan rewrites a job alone in its group in place).
func fits(state map[int]sched.Allocation, a sched.Allocation, clos []sched.CLOSBudget) bool {
	if a.Mask == 0 {
		delete(state, a.Job)
	} else {
		state[a.Job] = a
	}
	if a.Socket < 0 || a.Socket >= len(clos) {
		return true
	}
	return clos[a.Socket].Allows(groupsOn(state, a.Socket))
}

// groupsOn is the number of distinct allocations state holds on socket.
func groupsOn(state map[int]sched.Allocation, socket int) int {
	groups := map[[3]int64]bool{}
	for _, b := range state {
		if b.Socket == socket {
			groups[key(b)] = true
		}
	}
	return len(groups)
}

// overBudget reports whether sending eff of ids in that order would, at some step, hold
// more distinct allocations on a socket than clos allows (fits).
func (t *Jobs) overBudget(ids []int, eff map[int]sched.Allocation, clos []sched.CLOSBudget) bool {
	if len(clos) == 0 {
		return false
	}
	st := t.state()
	for _, id := range ids {
		if !fits(st, eff[id], clos) {
			return true
		}
	}
	return false
}

// within orders ids so that no step holds more groups than clos allows, where it can: the
// run loop applies allocations in order, and a job that joins a new group while its old
// one keeps members would hold one group too many in between. Each step sends, of the
// jobs whose allocation keeps the budget, one that does not add a group if any (joining a
// group, leaving for system/default, a job alone in its group rewritten in place), and
// among those the one whose allocation most of the remaining jobs ask for (the first in
// ids' order on a tie); if none keeps the budget, the first of them still in a group on
// a socket using its whole budget goes to system/default first (returned as ^id, a hop),
// which empties groups until its turn comes.
func (t *Jobs) within(ids []int, eff map[int]sched.Allocation, clos []sched.CLOSBudget) []int {
	st := t.state()
	left := append([]int(nil), ids...)
	out := make([]int, 0, len(ids))
	for len(left) > 0 {
		pending := map[[3]int64]int{}
		for _, id := range left {
			pending[key(eff[id])]++
		}
		k, best := 0, -1 // rank: 2 keeps the group count, 1 fits, then more jobs bound the same way
		for i, id := range left {
			before := groupsOn(st, eff[id].Socket)
			trial := maps.Clone(st)
			if !fits(trial, eff[id], clos) {
				continue
			}
			r := 1
			if groupsOn(trial, eff[id].Socket) <= before {
				r = 2
			}
			if score := r*len(ids)*2 + pending[key(eff[id])]; score > best {
				k, best = i, score
			}
		}
		if best < 0 {
			hopped := false
			for _, id := range left { // nothing fits: the first job in a group of a full socket waits in system/default
				a, ok := st[id]
				if ok && a.Socket >= 0 && a.Socket < len(clos) && !clos[a.Socket].Allows(groupsOn(st, a.Socket)+1) && len(out) <= 4*len(ids) {
					delete(st, a.Job)
					out = append(out, ^a.Job)
					hopped = true
					break
				}
			}
			if hopped {
				continue
			}
		}
		fits(st, eff[left[k]], clos)
		out = append(out, left[k])
		left = slices.Delete(left, k, k+1)
	}
	return out
}
