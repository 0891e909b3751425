package ctlsched_test

import (
	"testing"

	"colo/machine"
	_ "colo/policy/dcat"
	_ "colo/policy/lfocplus"
	_ "colo/policy/vp"
	"colo/sched"
)

// Two queued jobs pinned to the same cores: each online controller's scheduler places only
// the first in a tick (the second waits until the cores are free); a job never shares a
// core with another.
func TestSchedulersPinnedJobsDoNotShareCores(t *testing.T) {
	m, err := machine.Get("icx-4314-2s")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"dcat", "static-cat", "vp", "lfoc+"} {
		s, err := sched.New(name, sched.Env{Machine: m, Config: sched.DefaultConfig()})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		free := make([][]int, m.Sockets)
		for c := 0; c < m.Cores(); c++ {
			free[m.SocketOfCore(c)] = append(free[m.SocketOfCore(c)], c)
		}
		d := s.Tick(&sched.Observation{FreeCPUs: free, Queue: []sched.Job{
			{ID: 1, Name: "a", CPUs: []int{2, 3}}, {ID: 2, Name: "b", CPUs: []int{2, 3}}, {ID: 3, Name: "c", Cores: 2}}})
		if len(d.Place) != 1 || d.Place[0].Job != 1 || d.Place[0].Socket != 0 {
			t.Errorf("%s: placements %+v, want job 1 on socket 0 only (FIFO: job 3 waits behind job 2)", name, d.Place)
		}
	}
}
