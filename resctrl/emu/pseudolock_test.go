package emu

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// Issue #13: pseudo-locksetup is accepted where the kernel accepts it. The kernel's
// get_prefetch_disable_bits knows Broadwell-X (Xeon E5/E7 v4: the intel-bdw profile) and
// Atom Goldmont; elsewhere it is "Pseudo-locking not supported".
func TestPseudoLockPerProfile(t *testing.T) {
	write := func(e *Emulator, path, s string) (string, error) {
		err := e.WriteFile(path, []byte(s))
		st, _ := e.ReadFile("info/last_cmd_status")
		return strings.TrimSpace(string(st)), err
	}
	for _, c := range []struct{ profile, status string }{
		{"intel", "Pseudo-locking not supported"},
		{"intel-skx", "Pseudo-locking not supported"},
		{"intel-cdp", "CDP enabled"},
	} {
		e, _ := NewNamed(c.profile, Options{})
		e.Mkdir("p")
		if st, err := write(e, "p/mode", "pseudo-locksetup\n"); !errors.Is(err, syscall.EINVAL) || st != c.status {
			t.Errorf("%s: %v %q, want EINVAL %q", c.profile, err, st, c.status)
		}
	}

	e, err := NewNamed("intel-bdw", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Profile().PseudoLock {
		t.Fatal("the Broadwell-EP profile has no pseudo-locking")
	}
	e.Mkdir("busy")
	e.WriteFile("busy/tasks", []byte("42\n"))
	if st, err := write(e, "busy/mode", "pseudo-locksetup\n"); err == nil || st != "Tasks assigned to resource group" {
		t.Errorf("a group with tasks: %v %q", err, st)
	}
	if st, err := write(e, "mode", "pseudo-locksetup\n"); err == nil || st != "Cannot pseudo-lock default group" {
		t.Errorf("default group: %v %q", err, st)
	}
	// the region's bits must be free: shrink the default group and the busy group first
	if st, err := write(e, "schemata", "L3:0=ffffc\n"); err != nil {
		t.Fatalf("shrink default: %v %q", err, st)
	}
	if st, err := write(e, "busy/schemata", "L3:0=ffffc\n"); err != nil {
		t.Fatalf("shrink busy: %v %q", err, st)
	}
	e.Mkdir("p")
	if st, err := write(e, "p/mode", "pseudo-locksetup\n"); err != nil {
		t.Fatalf("pseudo-locksetup on Broadwell-EP: %v %q", err, st)
	}
	if s, _ := e.ReadFile("p/schemata"); !strings.Contains(string(s), "L3:uninitialized") {
		t.Errorf("schemata during setup %q", s)
	}
	if st, err := write(e, "p/tasks", "42\n"); err == nil || st != "Pseudo-locking in progress" {
		t.Errorf("tasks during setup: %v %q", err, st)
	}
	if st, err := write(e, "p/schemata", "MB:0=50\n"); err == nil || st != "Cannot pseudo-lock MBA resource" {
		t.Errorf("MB during setup: %v %q", err, st)
	}
	if st, err := write(e, "p/schemata", "L3:0=c\n"); err == nil || st != "Overlaps with other group" {
		t.Errorf("region over the default group's bits: %v %q", err, st)
	}
	if st, err := write(e, "p/schemata", "L3:0=3\n"); err != nil {
		t.Fatalf("lock 0x3: %v %q", err, st)
	}
	if m, _ := e.ReadFile("p/mode"); string(m) != "pseudo-locked\n" {
		t.Errorf("mode after the schemata write %q", m)
	}
	if s, _ := e.ReadFile("p/schemata"); string(s) != "L3:0=3\n" {
		t.Errorf("locked schemata %q", s)
	}
	if u, _ := e.ReadFile("info/L3/bit_usage"); !strings.HasSuffix(strings.TrimSpace(string(u)), "PP") {
		t.Errorf("bit_usage %q: want the region's bits as P", u)
	}
	if st, err := write(e, "busy/schemata", "L3:0=7\n"); err == nil || st != "CBM overlaps with pseudo-locked region" {
		t.Errorf("another group over the region: %v %q", err, st)
	}
	if st, err := write(e, "p/mode", "shareable\n"); err == nil || st != "Cannot change pseudo-locked group" {
		t.Errorf("mode change of a locked group: %v %q", err, st)
	}
	if st, err := write(e, "p/schemata", "L3:0=3\n"); err == nil || st != "Resource group is pseudo-locked" {
		t.Errorf("schemata of a locked group: %v %q", err, st)
	}
	// one region per cache instance
	e.Mkdir("q")
	write(e, "q/mode", "pseudo-locksetup\n")
	if st, err := write(e, "q/schemata", "L3:0=c0000\n"); err == nil || st != "Pseudo-locked region in hierarchy" {
		t.Errorf("a second region: %v %q", err, st)
	}
	// a new group does not start on the region's bits
	e.Mkdir("n")
	if s, _ := e.ReadFile("n/schemata"); strings.Contains(string(s), "L3:0=fffff") {
		t.Errorf("a new group starts over the locked region: %q", s)
	}
	// rmdir releases it
	if err := e.Rmdir("p"); err != nil {
		t.Fatal(err)
	}
	if st, err := write(e, "busy/schemata", "L3:0=7\n"); err != nil {
		t.Errorf("after rmdir of the locked group: %v %q", err, st)
	}
}
