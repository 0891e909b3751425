package ctlsched

import (
	"sort"
	"time"

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
