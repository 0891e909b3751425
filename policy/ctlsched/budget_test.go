package ctlsched

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"colo/cbm"
	"colo/sched"
)

// Fit trims masks off foreign ways (the longest run left, or system/default when fewer
// than min_cbm_bits ways are left) and, with fewer groups than distinct allocations, keeps
// the pairs holding a priority job, then the oldest jobs' pairs; identical allocations
// count once.
func TestFit(t *testing.T) {
	rules := cbm.Rules{Width: 11, MinBits: 2}
	want := []sched.Allocation{
		{Job: 5, Mask: 0x00f, MBA: 100}, // overlaps 0x3: 0xc is left
		{Job: 3, Mask: 0x070, MBA: 100},
		{Job: 4, Mask: 0x070, MBA: 100}, // shares job 3's group
		{Job: 1, Mask: 0x380, MBA: 100},
		{Job: 2, Mask: 0x006, MBA: 100}, // overlaps 0x3: one way left, too few
		{Job: 7, Mask: 0x400, MBA: 50},
		{Job: 8},
	}
	prio := func(id int) bool { return id == 7 }
	got, why := Fit(want, sched.GroupBudget(3, 0x3), rules, prio)
	wantMask := map[int]uint64{5: 0, 3: 0x70, 4: 0x70, 1: 0x380, 2: 0, 7: 0x400, 8: 0}
	for i, a := range got {
		if a.Job != want[i].Job {
			t.Fatalf("order changed: %+v", got)
		}
		if a.Mask != wantMask[a.Job] {
			t.Errorf("job %d: mask %#x, want %#x (%s)", a.Job, a.Mask, wantMask[a.Job], why[a.Job])
		}
		if a.Mask == 0 && a.MBA != 0 {
			t.Errorf("job %d in system/default with MBA %d", a.Job, a.MBA)
		}
	}
	// job 5 (0xc after trimming, the youngest pair with no priority job) lost its group;
	// job 2 lost its ways to the other agent
	if !strings.Contains(why[5], "control groups") || !strings.Contains(why[2], "another agent") || why[3] != "" || why[7] != "" {
		t.Fatalf("reasons %v", why)
	}
	// sparse masks: the ways left stay as they are
	got, _ = Fit([]sched.Allocation{{Job: 1, Mask: 0x1e}}, sched.GroupBudget(1, 0x6), cbm.Rules{Width: 11, MinBits: 1, Sparse: true}, nil)
	if got[0].Mask != 0x18 {
		t.Fatalf("sparse trim %#x, want 0x18", got[0].Mask)
	}
	got, _ = Fit([]sched.Allocation{{Job: 1, Mask: 0x1e}}, sched.GroupBudget(1, 0x4), rules, nil)
	if got[0].Mask != 0x18 {
		t.Fatalf("contiguous trim %#x, want the longest run 0x18", got[0].Mask)
	}
}

// Flush sends what Send would when the budget does not bind, and when it binds never lets
// the run loop hold more groups than allowed at any step: five jobs sharing one group and
// one alone move to two other groups through system/default hops where needed.
func TestFlushKeepsBudgetAtEveryStep(t *testing.T) {
	j := NewJobs()
	for id := 0; id < 6; id++ {
		j.Known(id, 0)
	}
	obs := &sched.Observation{Now: time.Second, CLOS: []sched.CLOSBudget{sched.GroupBudget(2, 0)}}
	var d sched.Decisions
	j.Want(sched.Allocation{Job: 0, Mask: 0x600, MBA: 100})
	for id := 1; id < 6; id++ {
		j.Want(sched.Allocation{Job: id, Mask: 0x3fc, MBA: 100})
	}
	j.Flush(&d, obs, cbm.Rules{Width: 11, MinBits: 1}, "test")
	if len(d.Allocate) != 6 || len(d.Log) != 0 {
		t.Fatalf("first flush %+v %q", d.Allocate, d.Log)
	}
	// new wishes: job 0 to 0x400, the others to 0x1fc; sent in the asked order that is 3
	// groups after job 1's move
	d = sched.Decisions{}
	j.Want(sched.Allocation{Job: 1, Mask: 0x1fc, MBA: 100})
	j.Want(sched.Allocation{Job: 0, Mask: 0x400, MBA: 100})
	for id := 2; id < 6; id++ {
		j.Want(sched.Allocation{Job: id, Mask: 0x1fc, MBA: 100})
	}
	j.Flush(&d, obs, cbm.Rules{Width: 11, MinBits: 1}, "test")
	state := map[int]sched.Allocation{0: {Job: 0, Mask: 0x600, MBA: 100}}
	for id := 1; id < 6; id++ {
		state[id] = sched.Allocation{Job: id, Mask: 0x3fc, MBA: 100}
	}
	for i, a := range d.Allocate {
		if a.Mask == 0 {
			delete(state, a.Job)
		} else {
			state[a.Job] = a
		}
		if n := groupsOn(state, 0); n > 2 {
			t.Fatalf("step %d (%+v): %d groups held", i, a, n)
		}
	}
	for id := 0; id < 6; id++ {
		if want := map[bool]uint64{true: 0x400, false: 0x1fc}[id == 0]; state[id].Mask != want {
			t.Fatalf("job %d ends with %#x, want %#x (%+v)", id, state[id].Mask, want, d.Allocate)
		}
	}
}

// The accountant (least-loaded, dynamic) and the controllers (Fit) read one budget the
// same way: the zero value is unknown and limits nothing, a known budget of 0 groups (other
// agents hold every CLOSID) allows none.
func TestBudgetSemanticsAgree(t *testing.T) {
	for _, b := range []sched.CLOSBudget{{}, sched.GroupBudget(0, 0), sched.GroupBudget(1, 0), sched.GroupBudget(3, 0), sched.GroupBudget(-2, 0)} {
		a, err := sched.NewAccountant(1, 12, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		a.Limit(0, b)
		held := 0
		for i := range 4 {
			if _, err := a.Allocate(fmt.Sprint("g", i), 0, 1, 0); err == nil {
				held++
			}
		}
		var want []sched.Allocation
		for i := range 4 {
			want = append(want, sched.Allocation{Job: i + 1, Mask: 1 << i, MBA: 100})
		}
		got, _ := Fit(want, b, cbm.Rules{Width: 12, MinBits: 1}, nil)
		kept := 0
		for _, g := range got {
			if g.Mask != 0 {
				kept++
			}
		}
		wantN := 4
		if b.Limited {
			wantN = max(b.Groups, 0)
		}
		if held != wantN || kept != wantN {
			t.Errorf("budget %v: the accountant holds %d groups, Fit keeps %d, want %d", b, held, kept, wantN)
		}
	}
}
