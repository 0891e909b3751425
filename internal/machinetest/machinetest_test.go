package machinetest

import "testing"

// A catalogue name gives its profile; an unknown name fails the test (recorded here).
func TestGet(t *testing.T) {
	if m := Get(t, "icx-4314-2s"); m.Name != "icx-4314-2s" || m.Sockets != 2 {
		t.Fatalf("icx-4314-2s: %+v", m)
	}
	r := &recorder{TB: t}
	Get(r, "no-such-machine")
	if !r.failed {
		t.Fatal("an unknown machine did not fail the test")
	}
}

type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()      {}
func (r *recorder) Fatal(...any) { r.failed = true }
