package dcat

import (
	"strings"
	"testing"

	"colo/internal/machinetest"
	"colo/sched"
)

// A baseline wider than the cache is an option error (bad input, issue #13), not a job
// rejected at run time; jobs whose baselines would over-commit the cache wait (admission
// error logged), never squeezed.
func TestSchedulerAdmission(t *testing.T) {
	m := machinetest.Get(t, "bdw-2697v4")
	cfg := sched.DefaultConfig()
	cfg.ReserveWays = 0
	cfg.Options = map[string]any{"baseline": 8, "baselines": map[string]any{"huge": 25}}
	if _, err := sched.New("dcat", sched.Env{Machine: m, Config: cfg}); err == nil || !strings.Contains(err.Error(), "baselines.huge = 25") {
		t.Fatalf("a 25-way baseline on a 20-way cache: %v", err)
	}
	cfg.Options = map[string]any{"baseline": 8}
	s, err := sched.New("dcat", sched.Env{Machine: m, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	free := [][]int{{0, 1, 2, 3, 4, 5, 6, 7}}
	obs := &sched.Observation{FreeCPUs: free, Queue: []sched.Job{
		{ID: 2, Name: "a", Cores: 1}, {ID: 3, Name: "b", Cores: 1}, {ID: 4, Name: "c", Cores: 1},
	}}
	d := s.Tick(obs)
	if len(d.Reject) != 0 {
		t.Fatalf("rejections %+v", d.Reject)
	}
	if len(d.Place) != 2 {
		t.Fatalf("placed %+v: two 8-way baselines fit 20 ways, the third must wait", d.Place)
	}
	waits := false
	for _, l := range d.Log {
		waits = waits || strings.Contains(l, "over-commit")
	}
	if !waits {
		t.Fatalf("the waiting job's admission error is not logged: %v", d.Log)
	}
	var sum int
	for _, a := range d.Allocate {
		sum += popcount(a.Mask)
	}
	if sum != 16 {
		t.Fatalf("allocated %d ways, want 2 × 8", sum)
	}
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}
