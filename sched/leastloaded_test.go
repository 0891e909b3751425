package sched

import (
	"strings"
	"testing"
)

// least-loaded has no options: a file that sets some is told which keys to remove.
func TestLeastLoadedRejectsOptions(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Options = map[string]any{"window": 3, "baseline": 2}
	_, err := New("least-loaded", Env{Machine: icx(t), Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "remove [baseline window]") {
		t.Fatalf("err %v, want the keys to remove", err)
	}
}
