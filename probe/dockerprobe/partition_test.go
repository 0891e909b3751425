package dockerprobe

import (
	"os"
	"slices"
	"strings"
	"testing"

	"colo/internal/emutest"
	"colo/resctrl"
	"colo/resctrl/emu"
	"colo/workload"
)

// The isolated partition on the resctrl emulator's FUSE mount: one CLOS with the lowest
// ways and the MBA percent on every L3 domain, the cgroup's threads in it, removed after.
func TestPartitionOnEmulator(t *testing.T) {
	_, dir := emutest.MountNamed(t, "intel", emu.Options{PIDExists: emutest.ProcExists})
	if _, err := newPartition(dir, "colo-probe-x", 99, 50); err == nil {
		t.Fatal("99 ways accepted")
	}
	p, err := newPartition(dir, "colo-probe-x", 4, 30)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.domains) == 0 {
		t.Fatal("no L3 domains found")
	}
	for _, d := range p.domains {
		mask, mba, err := p.a.ReadSchemata(p.path, d)
		if err != nil {
			t.Fatal(err)
		}
		if mask != 0xf || mba != 30 {
			t.Fatalf("domain %d: mask %#x MB %d, want 0xf and 30", d, mask, mba)
		}
	}
	cg, err := workload.CgroupOfPID(os.Getpid())
	if err != nil {
		t.Skipf("no cgroup for this process: %v", err)
	}
	if err := p.add(cg); err != nil {
		t.Fatal(err)
	}
	in, err := p.members()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(in, os.Getpid()) {
		t.Fatalf("this process (%d) is not in the partition's tasks %v", os.Getpid(), in)
	}
	if d := p.describe(); !strings.Contains(d, "4 lowest ways") || !strings.Contains(d, "MBA 30 %") {
		t.Fatalf("describe: %s", d)
	}
	if err := p.remove(); err != nil {
		t.Fatal(err)
	}
	c := resctrl.Open(dir, resctrl.Options{})
	if c.Exists(p.path) {
		t.Fatalf("partition %s still exists", p.path)
	}
}
