package ctlsched

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"colo/internal/machinetest"
	"colo/sched"
)

// Two jobs pinned to the same cores cannot both be placed in one tick; a job of n cores
// takes n cores; sockets come most-free first.
func TestPlacement(t *testing.T) {
	free := sched.CopyFree([][]int{{0, 1, 2, 3}, {4, 5, 6, 7, 8}})
	if s := Sockets(sched.Job{Cores: 2}, free); !reflect.DeepEqual(s, []int{1, 0}) {
		t.Fatalf("order %v, want [1 0]", s)
	}
	pinned := sched.Job{CPUs: []int{2, 3}}
	if s := Sockets(pinned, free); !reflect.DeepEqual(s, []int{0}) {
		t.Fatalf("pinned order %v, want [0]", s)
	}
	sched.Take(pinned, 0, free)
	if !reflect.DeepEqual(free[0], []int{0, 1}) {
		t.Fatalf("after the pinned job socket 0 has %v free, want [0 1]", free[0])
	}
	if s := Sockets(pinned, free); len(s) != 0 {
		t.Fatalf("the same pinned cores fit again on %v", s)
	}
	sched.Take(sched.Job{Cores: 3}, 1, free)
	if !reflect.DeepEqual(free[1], []int{7, 8}) || Cores(pinned) != 2 {
		t.Fatalf("socket 1 free %v", free[1])
	}
}

// Place rejects what can never run (and what reject refuses), tries the next socket when
// admit refuses one, and stops the queue at the first job that goes nowhere (FIFO), even
// when a later job would fit.
func TestPlaceFIFO(t *testing.T) {
	m := machinetest.Get(t, "icx-4314-2s")
	obs := &sched.Observation{FreeCPUs: [][]int{{0, 1}, {16, 17, 18}}, Queue: []sched.Job{
		{ID: 1, Cores: 1000},          // more cores than a socket: NeverFits
		{ID: 2, Name: "no", Cores: 1}, // refused by reject
		{ID: 3, Cores: 2},             // socket 1 has more free cores, but admit refuses it
		{ID: 4, Cores: 2},             // fits on socket 1 (3 free)
		{ID: 5, Cores: 2},             // fits nowhere now: waits
		{ID: 6, Cores: 1},             // would fit on socket 1, but FIFO
	}}
	var d sched.Decisions
	var tried []int
	reject := func(j sched.Job) string {
		if j.Name == "no" {
			return "refused"
		}
		return ""
	}
	admit := func(j sched.Job, s int) error {
		tried = append(tried, j.ID*10+s)
		if j.ID == 3 && s == 1 {
			return errors.New("socket 1 full")
		}
		return nil
	}
	w, why := Place(obs, m, &d, reject, admit)
	if w == nil || w.ID != 5 || why != nil {
		t.Fatalf("waiting %+v (%v), want job 5 with no admission error", w, why)
	}
	if len(d.Reject) != 2 || d.Reject[0].Job != 1 || d.Reject[1].Job != 2 || d.Reject[1].Reason != "refused" {
		t.Fatalf("rejections %+v", d.Reject)
	}
	want := []sched.Placement{{Job: 3, Socket: 0}, {Job: 4, Socket: 1}}
	if !reflect.DeepEqual(d.Place, want) {
		t.Fatalf("placements %+v, want %+v", d.Place, want)
	}
	if !reflect.DeepEqual(tried, []int{31, 30, 41}) {
		t.Fatalf("admit calls %v, want [31 30 41] (job*10+socket)", tried)
	}
	if !reflect.DeepEqual(obs.FreeCPUs, [][]int{{0, 1}, {16, 17, 18}}) {
		t.Fatalf("Place changed the observation's free cores: %v", obs.FreeCPUs)
	}
}

// A placed job that neither runs nor was placed this tick is stale; one placed this tick is
// not yet; a running one leaves pending. A sample is fresh once.
func TestValidCounters(t *testing.T) {
	if !ValidCounters(0, 1e9) || ValidCounters(1, -1) || ValidCounters(math.NaN()) {
		t.Fatal("ValidCounters")
	}
}
