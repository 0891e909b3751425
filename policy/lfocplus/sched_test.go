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
