package journal

import (
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"colo/resctrl"
)

// A process killed with SIGKILL and not yet reaped is a zombie: kill(pid, 0) still
// succeeds (so a liveness check built on it counts the dead instance alive), but
// ProcessAlive says dead. A reused PID (another start time) is dead too.
func TestProcessAliveZombieAndReusedPID(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start := startTicks(pid)
	if !ProcessAlive(pid, start) {
		t.Fatal("a running process judged dead")
	}
	if ProcessAlive(pid, start+1) {
		t.Fatal("a reused PID (another start time) judged alive")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// wait for the zombie without reaping it (waitid WNOWAIT)
	var info [128]byte
	if _, _, e := syscall.Syscall6(syscall.SYS_WAITID, 1 /* P_PID */, uintptr(pid), uintptr(unsafe.Pointer(&info)), syscall.WEXITED|0x01000000 /* WNOWAIT */, 0, 0); e != 0 {
		t.Fatal(e)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("precondition: kill(pid, 0) on the zombie: %v", err)
	}
	if ProcessAlive(pid, start) {
		t.Fatal("a zombie judged alive")
	}
	r := Record{PID: pid, Start: start, PIDNS: PIDNamespace()}
	if r.Alive() {
		t.Fatal("the zombie's record judged alive")
	}
	cmd.Wait()
	if ProcessAlive(pid, start) {
		t.Fatal("a reaped process judged alive")
	}
}

// Two instances on one mount whose starts and stops interleave at random leave
// system/default as the administrator had it, every time: the second records the
// first one's record of it (never the squeezed value it sees) and only the last one out
// writes it back.
func TestSharedDefaultInterleaved(t *testing.T) {
	rng := rand.New(rand.NewSource(26))
	for trial := 0; trial < 10; trial++ {
		e, c := mount(t)
		state := t.TempDir()
		admin := spec(t, "L3:0=0ff;1=0ff")
		if err := c.SetSchemata("", admin); err != nil {
			t.Fatal(err)
		}
		want, _ := c.Schemata("")
		read := func() (string, error) { s, err := c.Schemata(""); return s.String(), err }
		restore := func(s string) error { return RestoreDefault(c, s) }
		squeeze := []string{"L3:0=001;1=001", "L3:0=080;1=080"}
		js := make([]*Journal, 2)
		// each instance: open, save + squeeze, release; the four steps interleave at random
		steps := []int{0, 0, 1, 1}
		rng.Shuffle(len(steps), func(i, k int) { steps[i], steps[k] = steps[k], steps[i] })
		var err error
		for _, i := range steps {
			if js[i] == nil {
				if js[i], err = Open(state, "emu", Record{Instance: string(rune('a' + i))}); err != nil {
					t.Fatal(err)
				}
				if err := js[i].SaveDefaultFrom(read); err != nil {
					t.Fatal(err)
				}
				if err := c.SetSchemata("", spec(t, squeeze[i])); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if _, err := js[i].ReleaseDefault(restore); err != nil {
				t.Fatal(err)
			}
			js[i].Close()
		}
		_ = e
		if got, _ := c.Schemata(""); got.String() != want.String() {
			t.Fatalf("trial %d (order %v): system/default %q, want %q", trial, steps, got, want)
		}
	}
}

// Cleanup beside a live instance: a dead instance's record is undone (its groups go) but
// system/default, which the live instance holds, is not written; when the mount is gone
// the dead record is dropped with a note and Reconcile succeeds.
func TestReconcileBesideLiveAndMountGone(t *testing.T) {
	e, c := mount(t)
	state := t.TempDir()
	read := func() (string, error) { s, err := c.Schemata(""); return s.String(), err }
	dead, _ := Open(state, "emu", Record{Instance: "dead", Prefix: "colo.d."})
	dead.SaveDefaultFrom(read)
	c.SetSchemata("", spec(t, "L3:0=001;1=001")) // the dead instance's squeeze
	live, _ := Open(state, "emu", Record{Instance: "live", Prefix: "colo.l."})
	if err := live.SaveDefaultFrom(read); err != nil {
		t.Fatal(err)
	}
	if live.Record().Default != dead.Record().Default {
		t.Fatalf("the live instance recorded %q, not the administrator's %q", live.Record().Default, dead.Record().Default)
	}
	c.SetSchemata("", spec(t, "L3:0=00f;1=00f")) // the live instance's partition
	partition, _ := c.Schemata("")
	kill(t, dead)
	done, err := Reconcile(e.FS(), state, "emu", nil)
	if err != nil || len(done) != 1 || done[0].Default != "" || done[0].DefaultLeft == "" {
		t.Fatalf("%+v %v", done, err)
	}
	if now, _ := c.Schemata(""); now.String() != partition.String() {
		t.Fatalf("the live instance's system/default was written: %q", now)
	}
	if rs, _ := List(state, "emu"); len(rs) != 1 || rs[0].Instance != "live" {
		t.Fatalf("records %+v", rs)
	}
	// the live instance, last out, writes the administrator's default back
	if wrote, err := live.ReleaseDefault(func(s string) error { return RestoreDefault(c, s) }); !wrote || err != nil {
		t.Fatal(wrote, err)
	}
	// a dead record of a mount that is gone
	root := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(root, 0o755)
	gone, _ := Open(state, root, Record{Instance: "gone", Prefix: "colo.g.", Run: "r1"})
	gone.SaveDefault("L3:0=fff\n")
	gone.AddGroup("colo.g.c0")
	kill(t, gone)
	for i := 0; i < 2; i++ { // converges: the second call has nothing left to do
		done, err := Reconcile(resctrl.OSFS{Root: root}, state, root, func(Record) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && (len(done) != 1 || done[0].Dropped == "") || i == 1 && len(done) != 0 {
			t.Fatalf("call %d: %+v", i, done)
		}
	}
	if rs, _ := List(state, root); len(rs) != 0 {
		t.Fatalf("records left: %+v", rs)
	}
}
