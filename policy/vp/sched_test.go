package vp

import (
	"strings"
	"testing"

	"colo/machine"
	"colo/sched"
)

func TestSchedulerOptionsRejected(t *testing.T) {
	m, _ := machine.Get("icx-4314-2s")
	for _, tc := range []struct {
		opts map[string]any
		frag string
	}{
		{map[string]any{"window": 0}, "window"},
		{map[string]any{"window": 1.5}, "whole number"},
		{map[string]any{"hurt_threshold": -1}, "hurt_threshold"},
		{map[string]any{"confine_ways": 12}, "confine_ways"},
		{map[string]any{"priority_weight": 0}, "priority_weight"},
		{map[string]any{"baseline": 2}, `unknown scheduler.options key "baseline"`},
		{map[string]any{"vp.saturation": "high"}, "not a number"},
	} {
		cfg := sched.DefaultConfig()
		cfg.Options = tc.opts
		_, err := sched.New("vp", sched.Env{Machine: m, Config: cfg})
		if err == nil || !strings.Contains(err.Error(), tc.frag) {
			t.Errorf("options %v: %v, want an error mentioning %q", tc.opts, err, tc.frag)
		}
	}
	cfg := sched.DefaultConfig()
	cfg.Options = map[string]any{"dcat.baseline": 3, "vp.window": 3}
	if _, err := sched.New("vp", sched.Env{Machine: m, Config: cfg}); err != nil {
		t.Fatal(err)
	}
}

// Two queued jobs pinned to the same cores: only the first is placed in a tick (the second
// waits until the cores are free), as every scheduler must not put two jobs on one core.
func TestSchedulerPinnedJobsDoNotShareCores(t *testing.T) {
	m, _ := machine.Get("icx-4314-2s")
	s, err := sched.New("vp", sched.Env{Machine: m, Config: sched.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	free := make([][]int, m.Sockets)
	for c := 0; c < m.Cores(); c++ {
		free[m.SocketOfCore(c)] = append(free[m.SocketOfCore(c)], c)
	}
	d := s.Tick(&sched.Observation{FreeCPUs: free, Queue: []sched.Job{
		{ID: 1, Name: "a", CPUs: []int{2, 3}}, {ID: 2, Name: "b", CPUs: []int{2, 3}}}})
	if len(d.Place) != 1 || d.Place[0].Job != 1 {
		t.Fatalf("placements %+v, want job 1 only", d.Place)
	}
}
