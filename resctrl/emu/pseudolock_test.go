package emu

import (
	"errors"
	"fmt"
	"strconv"
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

// The kernel frees a group's RMID when it enters pseudo-locksetup
// (rdtgroup_locksetup_enter: "This is not needed anymore when this group would be used
// for pseudo-locking"), takes one again when it leaves setup (rdtgroup_locksetup_exit,
// "Out of RMIDs" if none is left), and frees its CLOSID once the region is locked
// (rdtgroup_pseudo_lock_create: closid_free), so the next mkdir may take it while the
// region's bits stay reserved; rmdir of a locked group frees nothing twice, rmdir of a
// locksetup group frees its CLOSID (rdtgroup_pseudo_lock_remove). fs/resctrl/pseudo_lock.c.
func TestPseudoLockReleasesIDs(t *testing.T) {
	fresh := func(t *testing.T) (*env, func(string) GroupState) {
		e, err := NewNamed("intel-bdw", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if e.Profile().Mon == nil {
			t.Fatal("the Broadwell-EP profile has no monitoring")
		}
		h := &env{t: t, p: e.Profile(), fs: e.FS(), e: e}
		h.ok("schemata", "L3:0=ffffc\n") // leave bits 0-1 of domain 0 for the region
		h.mkdir("p")
		return h, func(path string) GroupState {
			g, ok := e.State().Group(path)
			if !ok {
				t.Fatalf("no group %q", path)
			}
			return g
		}
	}
	// fill makes groups prefix0, prefix1, ... until mkdir fails with ENOSPC; it returns
	// how many it made.
	fill := func(h *env, prefix string) int {
		for n := 0; ; n++ {
			if err := h.fs.Mkdir(fmt.Sprintf("%s%d", prefix, n)); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					h.t.Fatalf("mkdir %s%d: %v", prefix, n, err)
				}
				return n
			}
		}
	}
	// freeRMIDs counts the MON groups mkdir can still create, and removes them again
	freeRMIDs := func(h *env) int {
		n := fill(h, "mon_groups/r")
		for i := 0; i < n; i++ {
			h.rmdir(fmt.Sprintf("mon_groups/r%d", i))
		}
		return n
	}

	t.Run("rmid", func(t *testing.T) {
		h, group := fresh(t)
		closid, rmids := group("p").CLOSID, freeRMIDs(h)
		h.ok("p/mode", "pseudo-locksetup\n")
		if g := group("p"); g.RMID != -1 || g.CLOSID != closid {
			t.Errorf("in pseudo-locksetup: CLOSID %d RMID %d, want CLOSID %d kept and no RMID", g.CLOSID, g.RMID, closid)
		}
		if got := freeRMIDs(h); got != rmids+1 {
			t.Errorf("free RMIDs in pseudo-locksetup %d, want %d (the group's own freed)", got, rmids+1)
		}
		h.ok("p/mode", "shareable\n")
		if got := freeRMIDs(h); got != rmids || group("p").RMID < 0 {
			t.Errorf("after leaving pseudo-locksetup: %d free RMIDs and RMID %d, want %d and one held", got, group("p").RMID, rmids)
		}
		// leaving setup with every RMID taken fails and leaves the group in setup
		h.ok("p/mode", "pseudo-locksetup\n")
		fill(h, "mon_groups/f")
		h.fail("p/mode", "shareable\n", syscall.ENOSPC, "=Out of RMIDs")
		if m := h.read("p/mode"); m != "pseudo-locksetup\n" {
			t.Errorf("mode after a failed exit %q", m)
		}
		h.rmdir("mon_groups/f0")
		h.ok("p/mode", "shareable\n")
		checkInvariants(t, h.e.State(), nil)
	})

	t.Run("closid", func(t *testing.T) {
		h, group := fresh(t)
		closid := group("p").CLOSID
		h.ok("p/mode", "pseudo-locksetup\n")
		n := fill(h, "c") // every other CLOSID
		h.wantStatus("=Out of CLOSIDs")
		for i := 0; i < n; i++ { // a new group starts with the unused bits: off the region
			h.ok(fmt.Sprintf("c%d/schemata", i), "L3:0=ffffc\n")
		}
		h.ok("p/schemata", "L3:0=3\n")
		if g := group("p"); g.Mode != "pseudo-locked" || g.CLOSID != -1 || g.RMID != -1 {
			t.Errorf("locked group: mode %s CLOSID %d RMID %d, want pseudo-locked holding neither", g.Mode, g.CLOSID, g.RMID)
		}
		want := h.p.L3.SizeBytes / uint64(h.p.L3.CBMLen) * 2
		if got := strings.TrimSpace(h.read("p/size")); got != fmt.Sprintf("L3:0=%d", want) {
			t.Errorf("locked group's size %q, want the region's %d bytes", got, want)
		}
		h.mkdir("extra") // takes the freed CLOSID
		if g := group("extra"); g.CLOSID != closid {
			t.Errorf("the new group got CLOSID %d, want the locked group's freed %d", g.CLOSID, closid)
		}
		if v, _ := strconv.ParseUint(h.value("extra", "L3", 0), 16, 32); v&3 != 0 {
			t.Errorf("the new group's initial L3:0 %#x covers the locked region 0x3", v)
		}
		h.fail("extra/schemata", "L3:0=1\n", syscall.EINVAL, "=CBM overlaps with pseudo-locked region")
		// rmdir of the locked group must not free the CLOSID extra now holds
		h.rmdir("p")
		h.mkdirFail("again", syscall.ENOSPC, "=Out of CLOSIDs")
		// rmdir of a group in pseudo-locksetup frees its CLOSID
		h.rmdir("extra")
		h.mkdir("q")
		h.ok("q/mode", "pseudo-locksetup\n")
		h.rmdir("q")
		h.mkdir("again")
		checkInvariants(t, h.e.State(), nil)
	})
}
