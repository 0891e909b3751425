// Package emutest mounts the resctrl emulator (colo/resctrl/emu) through FUSE for tests:
// a test that needs the mount fails in CI (CI=true, where scripts/setup.sh installs fuse3)
// and skips with the reason elsewhere (internal/testenv.Need). Every mount is in a fresh
// temporary directory and is unmounted when the test ends.
package emutest

import (
	"fmt"
	"os"
	"testing"

	"colo/internal/testenv"
	"colo/resctrl/emu"
)

// FUSE names the prerequisite and how to get it, for testenv.Need.
const FUSE = "FUSE (/dev/fuse and a mount as root; apt-get install fuse3; scripts/setup.sh installs it)"

// NeedFUSE stops the test (t.Fatalf in CI, t.Skipf elsewhere) when FUSE mounts are unusable.
func NeedFUSE(t testing.TB) {
	t.Helper()
	testenv.Need(t, FUSE, emu.FUSEAvailable())
}

// ProcExists reports whether pid is a live process of this host (/proc/PID exists): the
// emulator's Options.PIDExists for tests that move real processes into groups.
func ProcExists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// Mount mounts e on a fresh temporary directory and returns the directory. The mount is
// removed at the end of the test; a failed unmount fails the test.
func Mount(t testing.TB, e *emu.Emulator) string {
	t.Helper()
	NeedFUSE(t)
	dir := t.TempDir()
	m, err := emu.Mount(e, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// MountNamed mounts a new emulator of the named profile (emu.NewNamed) with opts.
func MountNamed(t testing.TB, profile string, opts emu.Options) (*emu.Emulator, string) {
	t.Helper()
	NeedFUSE(t)
	e, err := emu.NewNamed(profile, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e, Mount(t, e)
}
