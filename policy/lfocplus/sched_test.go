package lfocplus

import (
	"strings"
	"testing"

	"colo/machine"
	"colo/sched"
)

func TestSchedulerOptionsRejected(t *testing.T) {
	m, _ := machine.Get("skx-6138")
	for _, tc := range []struct {
		opts map[string]any
		frag string
	}{
		{map[string]any{"period_t": 0}, "period"},
		{map[string]any{"low_llcmpkc": 20}, "phase thresholds"},
		{map[string]any{"phase_window": 0.5}, "whole number"},
		{map[string]any{"partition": "ucp"}, "use lfoc+ or lfoc"},
		{map[string]any{"lfoc+.bogus": 1}, `unknown scheduler.options key "bogus"`},
	} {
		cfg := sched.DefaultConfig()
		cfg.Options = tc.opts
		_, err := sched.New("lfoc+", sched.Env{Machine: m, Config: cfg})
		if err == nil || !strings.Contains(err.Error(), tc.frag) {
			t.Errorf("options %v: %v, want an error mentioning %q", tc.opts, err, tc.frag)
		}
	}
}

// Two queued jobs pinned to the same cores: only the first is placed in a tick (the second
// waits until the cores are free), as every scheduler must not put two jobs on one core.
func TestSchedulerPinnedJobsDoNotShareCores(t *testing.T) {
	m, _ := machine.Get("skx-6138")
	s, err := sched.New("lfoc+", sched.Env{Machine: m, Config: sched.DefaultConfig()})
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
