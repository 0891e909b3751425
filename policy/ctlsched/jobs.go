package ctlsched

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"colo/cbm"
	"colo/sched"
)

// Jobs is the bookkeeping every controller adapter keeps of the jobs it placed: the
// socket each runs on, the tick it was placed at until it is seen running, the last
// collector sample fed to the controller and the last allocation sent to the run loop.
type Jobs struct {
	socket  map[int]int
	pending map[int]time.Duration
	seen    map[int]*sched.Sample
	sent    map[int]sched.Allocation
	// want is the allocation the controller last asked for, per job; order the jobs it
	// asked for since the last Flush; degraded why Flush last changed a job's allocation.
	want     map[int]sched.Allocation
	order    []int
	degraded map[int]string
}

// NewJobs returns empty bookkeeping.
func NewJobs() *Jobs {
	return &Jobs{socket: map[int]int{}, pending: map[int]time.Duration{}, seen: map[int]*sched.Sample{},
		sent: map[int]sched.Allocation{}, want: map[int]sched.Allocation{}, degraded: map[int]string{}}
}

// Placed records that job id was placed on socket at now.
func (t *Jobs) Placed(id, socket int, now time.Duration) {
	t.socket[id] = socket
	t.pending[id] = now
}

// Known records a job the adapter tracks from its first observation (no pending start).
func (t *Jobs) Known(id, socket int) { t.socket[id] = socket }

// Moved records that job id now runs on socket.
func (t *Jobs) Moved(id, socket int) { t.socket[id] = socket }

// Socket is the socket of a tracked job.
func (t *Jobs) Socket(id int) (int, bool) {
	s, ok := t.socket[id]
	return s, ok
}

// Gone is a job to forget and the socket it was on.
type Gone struct{ ID, Socket int }

// Gone returns the tracked jobs obs reports finished (in its order), then, ascending, the
// tracked jobs obs does not show running that were not placed at obs.Now (their start
// failed), and forgets them: the adapter removes them from its controller.
func (t *Jobs) Gone(obs *sched.Observation) []Gone {
	var out []Gone
	for _, id := range obs.Finished {
		if s, ok := t.socket[id]; ok {
			out = append(out, Gone{id, s})
			t.Forget(id)
		}
	}
	running := map[int]bool{}
	for _, r := range obs.Running {
		running[r.ID] = true
		delete(t.pending, r.ID)
	}
	var stale []int
	for id := range t.socket {
		if !running[id] && t.pending[id] < obs.Now {
			stale = append(stale, id)
		}
	}
	sort.Ints(stale)
	for _, id := range stale {
		out = append(out, Gone{id, t.socket[id]})
		t.Forget(id)
	}
	return out
}

// Forget drops everything kept about job id.
func (t *Jobs) Forget(id int) {
	delete(t.socket, id)
	delete(t.pending, id)
	delete(t.seen, id)
	delete(t.sent, id)
	delete(t.want, id)
	delete(t.degraded, id)
}

// Fresh returns the latest sample of a running tracked job if it was not returned before,
// else nil: a controller is fed each collector sample once.
func (t *Jobs) Fresh(r sched.Running) *sched.Sample {
	if _, ok := t.socket[r.ID]; !ok || r.Last == nil || r.Last == t.seen[r.ID] {
		return nil
	}
	t.seen[r.ID] = r.Last
	return r.Last
}

// Send appends allocation a to d unless it repeats the last one sent for its job (mask
// and MBA): the run loop only hears of changes. A job never sent anything is taken to be
// in system/default (mask 0).
func (t *Jobs) Send(d *sched.Decisions, a sched.Allocation) {
	prev, ok := t.sent[a.Job]
	if (ok && prev.Mask == a.Mask && prev.MBA == a.MBA) || (!ok && a.Mask == 0) {
		return
	}
	t.sent[a.Job] = a
	d.Allocate = append(d.Allocate, a)
}

// Unsent makes the next allocation of job id be sent whatever it is (the job left its
// class of service: a move, a failed re-pin).
func (t *Jobs) Unsent(id int) { t.sent[id] = sched.Allocation{Job: id, Mask: ^uint64(0), MBA: -1} }

// Reset forgets the last allocation sent for job id: it is back in system/default.
func (t *Jobs) Reset(id int) { delete(t.sent, id) }

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
	return groupsOn(state, a.Socket) <= clos[a.Socket].Groups
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
// ids' order on a tie); if none keeps the budget, the first of them still in a group goes to
// system/default first (returned as ^id, a hop), which empties groups until its turn comes.
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
			for _, id := range left { // nothing fits: the first held job waits in system/default
				if a, ok := st[id]; ok && len(out) <= 4*len(ids) {
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
