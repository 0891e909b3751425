package resctrl_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"colo/internal/emutest"
	"colo/resctrl"
	"colo/resctrl/emu"
)

func fakeProc(t *testing.T, flags string, fs string, mounts string) string {
	d := t.TempDir()
	cpuinfo := "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: " + flags + "\n\nprocessor\t: 1\nflags\t\t: " + flags + "\n"
	for n, c := range map[string]string{"cpuinfo": cpuinfo, "filesystems": fs, "mounts": mounts} {
		if err := os.WriteFile(filepath.Join(d, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func TestCheckReasons(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "resctrl")
	cases := []struct {
		name, flags, fs, want string
		hyper                 bool
		cpuFlags              []string
	}{
		{"vm", "fpu sse2 hypervisor", "nodev\tproc\n", "virtual machine", true, nil},
		{"no-rdt", "fpu sse2 avx2", "nodev\tproc\n", "none of rdt_a", false, nil},
		{"old-kernel", "fpu rdt_a cat_l3 cqm_llc mba", "nodev\tproc\n", "CONFIG_X86_CPU_RESCTRL", false, []string{"rdt_a", "cat_l3", "mba", "cqm_llc"}},
		{"unmounted", "fpu rdt_a cat_l3 cdp_l3 mba cqm cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local", "nodev\tresctrl\n", "mount -t resctrl resctrl " + missing, false,
			[]string{"rdt_a", "cat_l3", "cdp_l3", "mba", "cqm", "cqm_llc", "cqm_occup_llc", "cqm_mbm_total", "cqm_mbm_local"}},
	}
	for _, c := range cases {
		st := resctrl.CheckWith(missing, fakeProc(t, c.flags, c.fs, ""))
		if st.Mounted || !strings.Contains(st.Reason, c.want) || st.Hypervisor != c.hyper || !reflect.DeepEqual(st.CPUFlags, c.cpuFlags) {
			t.Fatalf("%s: %+v", c.name, st)
		}
	}
}

func TestCheckEmulatedMount(t *testing.T) {
	_, dir := emutest.MountNamed(t, "intel-cdp", emu.Options{})
	st := resctrl.CheckWith(dir, "/proc")
	if !st.Mounted || !st.Emulated || st.CLOSIDs != 8 || !st.CDP || st.RMIDs != 144 || st.Reason != "" ||
		!reflect.DeepEqual(st.Resources, []string{"L3CODE", "L3DATA", "MB"}) || !strings.HasPrefix(st.FSType, "fuse") {
		t.Fatalf("%+v", st)
	}
}
