package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, root, path, content string) {
	t.Helper()
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A bare-metal Ice Lake host: v2, schedutil, turbo on, SMT on, resctrl mounted.
func bareMetal(t *testing.T) string {
	root := t.TempDir()
	write(t, root, "proc/self/mountinfo", "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
	for _, c := range []string{"cpu0", "cpu1"} {
		write(t, root, "sys/devices/system/cpu/"+c+"/cpufreq/scaling_governor", "schedutil\n")
	}
	write(t, root, "sys/devices/system/cpu/intel_pstate/no_turbo", "0\n")
	write(t, root, "sys/devices/system/cpu/smt/control", "on\n")
	write(t, root, "sys/devices/system/cpu/smt/active", "1\n")
	write(t, root, "proc/meminfo", "MemTotal: 1 kB\nHugePages_Total:      16\nHugePages_Free:       16\nHugepagesize:       2048 kB\n")
	write(t, root, "sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n")
	return root
}

func find(cs []Check, name string) Check {
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return Check{}
}

func TestReadBareMetal(t *testing.T) {
	f := Read(bareMetal(t))
	if f.CgroupMode != "v2" || len(f.Governors) != 1 || f.Governors[0] != "schedutil" || f.Turbo != "on" ||
		f.SMT != "on" || !f.SMTActive || f.HugePagesTotal != 16 || f.HugePageSizeKB != 2048 || f.THP != "madvise" {
		t.Fatalf("%+v", f)
	}
	cs := Diagnose(f, DockerProbe{Reachable: true, Version: "20.10.24", APIVersion: "1.41", CgroupDriver: "systemd", CgroupVersion: "2"},
		PerfProbe{Mode: "hardware", Microarch: "icelake-sp"},
		ResctrlProbe{Root: "/sys/fs/resctrl", Mounted: true, CPUFlags: []string{"rdt_a", "cat_l3"}, Resources: []string{"L3", "MB"}, Monitoring: []string{"llc_occupancy"}, CLOSIDs: 16, RMIDs: 224})
	for name, want := range map[string]Status{"docker": OK, "cgroups": OK, "perf": OK, "perf stall events": OK, "resctrl": OK,
		"cpu governor": Warn, "turbo": Warn, "smt": Warn, "huge pages": OK} {
		if got := find(cs, name); got.Status != want {
			t.Errorf("%s: %s, want %s (%+v)", name, got.Status, want, got)
		}
	}
	// The turbo line carries the thesis numbers and the fix.
	if tc := find(cs, "turbo"); !strings.Contains(tc.Meaning, "12.05 %") || !strings.Contains(tc.Fix, "no_turbo") {
		t.Errorf("turbo check %+v", tc)
	}
	if gc := find(cs, "cpu governor"); !strings.Contains(gc.Meaning, "1.59 %") {
		t.Errorf("schedutil error missing: %+v", gc)
	}
}

// This VM: hybrid cgroups, no cpufreq, no PMU, no RDT, Docker down.
func TestDiagnoseVM(t *testing.T) {
	root := t.TempDir()
	write(t, root, "proc/self/mountinfo", "41 40 0:36 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n47 40 0:42 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n")
	write(t, root, "proc/meminfo", "HugePages_Total:       0\n")
	f := Read(root)
	cs := Diagnose(f, DockerProbe{Err: "connection refused"}, PerfProbe{Mode: "software", Reason: "no hardware PMU"},
		ResctrlProbe{Root: "/sys/fs/resctrl", Reason: "no RDT/PQoS: this is a virtual machine"})
	for name, want := range map[string]Status{"docker": Fail, "cgroups": OK, "perf": Warn, "resctrl": Warn,
		"cpu governor": Info, "turbo": Info, "smt": Info, "huge pages": Info} {
		if got := find(cs, name); got.Status != want {
			t.Errorf("%s: %s, want %s (%+v)", name, got.Status, want, got)
		}
	}
	for _, c := range cs {
		if c.Status != OK && c.Status != Info && c.Fix == "" {
			t.Errorf("%s says nothing about how to fix it", c.Name)
		}
	}
	if p := find(cs, "perf"); !strings.Contains(p.Meaning, "unavailable (never 0)") {
		t.Errorf("perf %+v", p)
	}
	if find(cs, "perf stall events").Name != "" {
		t.Error("stall-event line only applies with hardware counters")
	}
	if r := find(cs, "resctrl"); !strings.Contains(r.Meaning, "virtual machine") || !strings.Contains(r.Fix, "emulate") {
		t.Errorf("resctrl %+v", r)
	}
	// RDT in the CPU but not mounted: the fix is the mount command.
	cs = Diagnose(f, DockerProbe{}, PerfProbe{}, ResctrlProbe{Root: "/sys/fs/resctrl", CPUFlags: []string{"rdt_a"}, Reason: "resctrl is not mounted"})
	if r := find(cs, "resctrl"); r.Status != Warn || r.Fix != "mount -t resctrl resctrl /sys/fs/resctrl" {
		t.Errorf("resctrl %+v", r)
	}
	if find(cs, "cgroups").Value != "hybrid (v1 controllers + v2 at /sys/fs/cgroup/unified)" {
		t.Errorf("%+v", find(cs, "cgroups"))
	}
}
