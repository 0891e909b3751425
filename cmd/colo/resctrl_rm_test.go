package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"colo/internal/emutest"
	"colo/resctrl/emu"
	"colo/resctrl/journal"
)

// colo resctrl rm removes colo's groups by name or pattern (tasks back to the default
// group), refuses others' groups and a live instance's without --force, and never
// removes the default group.
func TestResctrlRm(t *testing.T) {
	e, dir := emutest.MountNamed(t, "intel", emu.Options{})
	state := t.TempDir()
	for _, g := range []string{"colo.part-ucp-c1", "colo.part-ucp-c2", "colo.keep"} {
		mustRunColo(t, "resctrl", "--root", dir, "set", g, "L3:0=f", "--create")
	}
	mustRunColo(t, "resctrl", "--root", dir, "assign", "colo.part-ucp-c1", "41", "42")
	mustRunColo(t, "resctrl", "--root", dir, "set", "other.tool", "L3:0=f0", "--create", "--foreign")
	// a live instance (this test process) holding colo.agent-x
	j, err := journal.Open(state, dir, journal.Record{Kind: "agent", Prefix: "colo.agent-"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	mustRunColo(t, "resctrl", "--root", dir, "set", "colo.agent-x", "L3:0=f00", "--create")

	out := mustRunColo(t, "resctrl", "--root", dir, "rm", "colo.part-ucp-c*", "--state-dir", state, "--json")
	var r rmResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Join(r.Removed, ",") != "colo.part-ucp-c1,colo.part-ucp-c2" || r.Tasks != 2 {
		t.Fatalf("removed %+v", r)
	}
	st := e.State()
	for _, g := range []string{"colo.part-ucp-c1", "colo.part-ucp-c2"} {
		if _, ok := st.Group(g); ok {
			t.Errorf("%s still exists", g)
		}
	}
	if _, ok := st.Group("colo.keep"); !ok {
		t.Error("the pattern removed colo.keep")
	}
	for _, args := range [][]string{
		{"rm", "other.tool"},   // not colo's
		{"rm", "colo.agent-x"}, // a live instance's
		{"rm", "default"},      // never
		{"rm", "/"},            // never
		{"rm", "colo.nothere"}, // no such group
		{"rm", "colo.[x"},      // bad pattern
	} {
		_, err := runColo(t, append(append([]string{"resctrl", "--root", dir}, args...), "--state-dir", state)...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a bad-input error (exit 2)", args, err)
		}
	}
	for _, g := range []string{"other.tool", "colo.agent-x"} {
		if _, ok := e.State().Group(g); !ok {
			t.Errorf("%s was removed without --force", g)
		}
		mustRunColo(t, "resctrl", "--root", dir, "rm", g, "--state-dir", state, "--force")
		if _, ok := e.State().Group(g); ok {
			t.Errorf("%s still exists after --force", g)
		}
	}
}
