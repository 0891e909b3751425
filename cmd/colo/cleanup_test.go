package main

import (
	"strings"
	"testing"

	"colo/resctrl/journal"
)

// colo cleanup judges the journals: a live instance's record is left alone (nothing
// done), and --json prints [] then.
func TestCleanupLeavesLiveRuns(t *testing.T) {
	state := t.TempDir()
	j, err := journal.Open(state, "", journal.Record{Kind: "test", Run: "r1", Network: "colo-r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	out, err := runColo(t, "cleanup", "--state-dir", state)
	if err != nil || out != "nothing left by a dead colo run\n" {
		t.Fatalf("%q %v", out, err)
	}
	if out, err = runColo(t, "cleanup", "--state-dir", state, "--json"); err != nil || strings.TrimSpace(out) != "[]" {
		t.Fatalf("--json: %q %v", out, err)
	}
	if rs, _ := journal.List(state, ""); len(rs) != 1 {
		t.Fatalf("a live run's record was removed: %+v", rs)
	}
}
