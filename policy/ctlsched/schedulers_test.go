package ctlsched_test

import (
	"strings"
	"testing"

	"colo/internal/machinetest"
	_ "colo/policy/dcat"
	_ "colo/policy/lfocplus"
	_ "colo/policy/vp"
	"colo/sched"
)

// Two queued jobs pinned to the same cores: each online controller's scheduler places only
// the first in a tick (the second waits until the cores are free); a job never shares a
// core with another.
func TestSchedulersPinnedJobsDoNotShareCores(t *testing.T) {
	m := machinetest.Get(t, "icx-4314-2s")
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

type opts = map[string]any

// badOption is an option set a scheduler must reject with an error mentioning frag.
type badOption struct {
	opts opts
	frag string
}

// Each controller's scheduler rejects a bad option naming it (bad input at construction,
// never a failure at run time) and accepts its own prefixed keys and other schedulers'.
func TestSchedulersRejectBadOptions(t *testing.T) {
	for _, c := range []struct {
		name, machine string
		bad           []badOption
		good          []opts
	}{
		{"dcat", "bdw-2697v4", []badOption{
			{opts{"baseline": 21}, "baseline = 21"},
			{opts{"baseline": 2.5}, "whole number"},
			{opts{"miss_rate_threshold": -0.1}, "miss_rate_threshold"},
			{opts{"period_t": 0}, "period"},
			{opts{"policy": "greedy"}, "unknown policy"},
			{opts{"bogus": 1}, `unknown scheduler.options key "bogus"`},
			{opts{"dcat.streaming_factor": 0.5}, "streaming_factor"},
		}, []opts{{"dcat.baseline": 3, "vp.window": 2}}},
		{"static-cat", "bdw-2697v4", nil, []opts{{"dcat.baseline": 3, "vp.window": 2}}},
		{"lfoc+", "skx-6138", []badOption{
			{opts{"period_t": 0}, "period"},
			{opts{"low_llcmpkc": 20}, "phase thresholds"},
			{opts{"phase_window": 0.5}, "whole number"},
			{opts{"partition": "ucp"}, "use lfoc+ or lfoc"},
			{opts{"lfoc+.bogus": 1}, `unknown scheduler.options key "bogus"`},
		}, nil},
		{"vp", "icx-4314-2s", []badOption{
			{opts{"window": 0}, "window"},
			{opts{"window": 1.5}, "whole number"},
			{opts{"hurt_threshold": -1}, "hurt_threshold"},
			{opts{"confine_ways": 12}, "confine_ways"},
			{opts{"priority_weight": 0}, "priority_weight"},
			{opts{"baseline": 2}, `unknown scheduler.options key "baseline"`},
			{opts{"vp.saturation": "high"}, "not a number"},
			{opts{"relax_after": 2.5}, "whole number"},
			{opts{"relax_after": -1}, "relax_after"},
			{opts{"saturation_exit": 0}, "saturation_exit"},
			{opts{"vp.mf_rise": 1}, "mf_rise"},
		}, []opts{{"dcat.baseline": 3, "vp.window": 3, "vp.relax_after": 0, "saturation_exit": 0.5}}},
	} {
		m := machinetest.Get(t, c.machine)
		newSched := func(o opts) error {
			cfg := sched.DefaultConfig()
			cfg.Options = o
			_, err := sched.New(c.name, sched.Env{Machine: m, Config: cfg})
			return err
		}
		for _, b := range c.bad {
			if err := newSched(b.opts); err == nil || !strings.Contains(err.Error(), b.frag) {
				t.Errorf("%s: options %v: %v, want an error mentioning %q", c.name, b.opts, err, b.frag)
			}
		}
		for _, g := range c.good {
			if err := newSched(g); err != nil {
				t.Errorf("%s: options %v: %v", c.name, g, err)
			}
		}
	}
}
