package ctlsched

import (
	"reflect"
	"testing"
	"time"

	"colo/sched"
)

// Jobs forgets finished jobs (in the observation's order) and jobs whose start failed
// (placed at an earlier tick, not running), feeds each sample once and sends only changed
// allocations.
func TestJobsBookkeeping(t *testing.T) {
	j := NewJobs()
	j.Placed(1, 0, time.Second)
	j.Placed(2, 0, 2*time.Second)
	j.Placed(3, 1, time.Second)
	j.Placed(4, 1, time.Second)
	j.Placed(5, 1, time.Second)
	smp := &sched.Sample{Instructions: 1}
	obs := &sched.Observation{Now: 2 * time.Second, Finished: []int{5, 9},
		Running: []sched.Running{{Job: sched.Job{ID: 3}, Last: smp}}}
	if g := j.Gone(obs); !reflect.DeepEqual(g, []Gone{{5, 1}, {1, 0}, {4, 1}}) {
		t.Fatalf("gone %v, want 5 (finished), then 1 and 4 (start failed)", g)
	}
	if _, ok := j.Socket(2); !ok {
		t.Fatal("a job placed this tick was forgotten")
	}
	if j.Fresh(obs.Running[0]) != smp || j.Fresh(obs.Running[0]) != nil {
		t.Fatal("a sample is not returned exactly once")
	}
	if j.Fresh(sched.Running{Job: sched.Job{ID: 7}, Last: smp}) != nil {
		t.Fatal("an untracked job's sample is fed")
	}
	// a job still running at a later tick is not stale any more
	if g := j.Gone(&sched.Observation{Now: 3 * time.Second, Running: obs.Running}); len(g) != 1 || g[0].ID != 2 {
		t.Fatalf("second tick gone %v, want job 2 only", g)
	}
	var d sched.Decisions
	j.Send(&d, sched.Allocation{Job: 3, Mask: 0})    // never sent, system/default: nothing
	j.Send(&d, sched.Allocation{Job: 3, Mask: 0xf0}) // sent
	j.Send(&d, sched.Allocation{Job: 3, Mask: 0xf0}) // same: nothing
	j.Send(&d, sched.Allocation{Job: 3, Mask: 0xf0, MBA: 50})
	j.Unsent(3)
	j.Send(&d, sched.Allocation{Job: 3, Mask: 0xf0, MBA: 50}) // after a failed re-pin: again
	j.Reset(3)
	j.Send(&d, sched.Allocation{Job: 3, Mask: 0}) // back in system/default after a move: nothing
	if len(d.Allocate) != 3 {
		t.Fatalf("sent %+v, want 3 allocations", d.Allocate)
	}
}
