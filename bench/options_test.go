package bench

import (
	"strings"
	"testing"

	"colo/internal/machinetest"
	_ "colo/policy/vp" // registers vp
)

// A controller option's error points at its own line of a policy file.
func TestPolicyFileOptionLine(t *testing.T) {
	m := machinetest.Get(t, "icx-4314-2s")
	text := "scheduler:\n  implementation: vp\n  options:\n    window: 2\n    vp.relax_after: 2.5\n"
	_, err := ParseScheduler("pol.yaml", []byte(text), m, "")
	if err == nil || !strings.Contains(err.Error(), "pol.yaml:5: vp: scheduler.options.relax_after = 2.5 must be a whole number") {
		t.Fatalf("got %v", err)
	}
}
