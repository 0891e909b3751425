package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/resctrl/journal"
	"colo/workload/docker"
	"colo/workload/docker/dockertest"
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

// A dead instance whose resctrl mount is gone (unmounted, or an emulator's directory
// removed): colo cleanup drops its record with a note and exits 0, and a second call has
// nothing left to do (before, it exited 1 on every call and kept every record). A dead
// run's network that no longer exists is not reported as removed.
func TestCleanupAfterMountGone(t *testing.T) {
	dockertest.Require(t, docker.Options{})
	state := t.TempDir()
	root := filepath.Join(t.TempDir(), "emu-mount")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	run := dockertest.Name(t, "gone")
	for _, r := range []journal.Record{{Instance: "agent-x", Kind: "agent", Prefix: "colo-agent.x."},
		{Instance: run, Kind: "colo run", Prefix: "colo." + run + ".", Run: run, Network: "colo-" + run}} {
		j, err := journal.Open(state, root, r)
		if err != nil {
			t.Fatal(err)
		}
		j.SaveDefault("L3:0=fff\n")
		j.AddGroup(r.Prefix + "c0")
		dead := j.Record()
		dead.Start++ // the PID now names another process: the instance is dead
		if err := dead.Save(); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runColo(t, "cleanup", "--state-dir", state)
	if err != nil {
		t.Fatalf("first cleanup: %v\n%s", err, out)
	}
	if strings.Count(out, "record dropped: resctrl is no longer mounted") != 2 || strings.Contains(out, "removed network") {
		t.Fatalf("first cleanup said:\n%s", out)
	}
	if rs, _ := journal.List(state, root); len(rs) != 0 {
		t.Fatalf("records left: %+v", rs)
	}
	if out, err = runColo(t, "cleanup", "--state-dir", state); err != nil || out != "nothing left by a dead colo run\n" {
		t.Fatalf("second cleanup: %q %v", out, err)
	}
}
