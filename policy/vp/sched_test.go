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
		{map[string]any{"relax_after": 2.5}, "whole number"},
		{map[string]any{"relax_after": -1}, "relax_after"},
		{map[string]any{"saturation_exit": 0}, "saturation_exit"},
		{map[string]any{"vp.mf_rise": 1}, "mf_rise"},
	} {
		cfg := sched.DefaultConfig()
		cfg.Options = tc.opts
		_, err := sched.New("vp", sched.Env{Machine: m, Config: cfg})
		if err == nil || !strings.Contains(err.Error(), tc.frag) {
			t.Errorf("options %v: %v, want an error mentioning %q", tc.opts, err, tc.frag)
		}
	}
	cfg := sched.DefaultConfig()
	cfg.Options = map[string]any{"dcat.baseline": 3, "vp.window": 3, "vp.relax_after": 0, "saturation_exit": 0.5}
	if _, err := sched.New("vp", sched.Env{Machine: m, Config: cfg}); err != nil {
		t.Fatal(err)
	}
}
