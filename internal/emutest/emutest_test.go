package emutest

import (
	"os"
	"path/filepath"
	"testing"

	"colo/resctrl/emu"
)

// A group made on the mount is a group of the emulator (the mount is the emulator's tree),
// and a live process is told from a dead one.
func TestMountNamed(t *testing.T) {
	e, dir := MountNamed(t, "intel", emu.Options{PIDExists: ProcExists})
	if _, ok := e.State().Group("colotest.emutest"); ok {
		t.Fatal("group exists before mkdir")
	}
	if err := os.Mkdir(filepath.Join(dir, "colotest.emutest"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.State().Group("colotest.emutest"); !ok {
		t.Fatal("mkdir on the mount made no emulator group")
	}
	if !ProcExists(os.Getpid()) || ProcExists(1<<30) {
		t.Fatal("ProcExists: this process not found, or pid 2^30 found")
	}
}
