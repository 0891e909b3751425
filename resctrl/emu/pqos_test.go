package emu

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"colo/internal/testenv"
)

// TestPqosAgainstEmulator: Debian's unmodified pqos (intel-cmt-cat 4.5.0, OS interface -I)
// drives the emulator. pqos looks for "resctrl" in /proc/filesystems and for the tree at
// /sys/fs/resctrl, so it runs under `unshare -m` with a tmpfs on /sys/fs, the FUSE mount
// bound at /sys/fs/resctrl and a /proc/filesystems copy that lists resctrl. pqos takes the
// L3 topology from CPUID, not from the tree, and refuses a schemata with an L3 id its
// topology lacks ("Failed to retrieve socket 0 L3 classes!"; on its first run, which makes
// COS1..COSn-1, that shows as "Could not open schemata file"), so the profile is
// intel-nomba: one L3 with id 0, as on a one-L3 host. The first run here is clean.
func TestPqosAgainstEmulator(t *testing.T) {
	fuseOrSkip(t)
	_, err := exec.LookPath("pqos")
	testenv.Need(t, "pqos (apt-get install intel-cmt-cat; scripts/setup.sh installs it)", err)
	_, err = exec.LookPath("unshare")
	testenv.Need(t, "unshare (util-linux) for a private mount namespace", err)
	if os.Geteuid() != 0 {
		testenv.Need(t, "root (mounts in a private namespace)", errors.New("not root"))
	}
	ids, _ := filepath.Glob("/sys/devices/system/cpu/cpu*/cache/index3/id")
	for _, f := range ids {
		if b, _ := os.ReadFile(f); strings.TrimSpace(string(b)) != "0" {
			testenv.Need(t, "a host with one L3 (id 0): pqos reads the topology by CPUID", fmt.Errorf("%s is %q", f, b))
		}
	}
	e, err := NewNamed("intel-nomba", Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := e.Profile()
	if got := p.L3IDs(); len(got) != 1 || got[0] != 0 {
		t.Fatalf("profile L3 ids %v, want [0]", got)
	}
	dir := t.TempDir()
	m, err := Mount(e, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmount()
	filesystems, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		t.Fatal(err)
	}
	fs := filepath.Join(t.TempDir(), "filesystems")
	if err := os.WriteFile(fs, append(filesystems, "nodev\tresctrl\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	inNS := `mount -t tmpfs colo-pqos /sys/fs && mkdir /sys/fs/resctrl && mount --bind "$0" /sys/fs/resctrl && mount --bind "$1" /proc/filesystems && exec pqos`
	pqos := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("unshare", append([]string{"-m", "sh", "-c", inNS + ` "$@"`, dir, fs}, args...)...)
		out, err := cmd.CombinedOutput()
		// -R looks every host PID up in the groups' tasks files; the emulator's default
		// group lists its own tasks, not the host's, so those look-ups fail (and PIDs that
		// exit meanwhile "do not exist"); any other ERROR fails the test.
		rest := regexp.MustCompile(`ERROR: (Failed to (get|retrieve) (association for )?task \d+( association)?!?|Task \d+ does not exist!)\n`).ReplaceAllString(string(out), "")
		if err != nil || strings.Contains(rest, "ERROR") {
			t.Fatalf("pqos %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	n := p.L3.NumCLOSIDs
	full := uint64(1)<<p.L3.CBMLen - 1
	out := pqos("-I", "-d")
	if !regexp.MustCompile(`L3 CAT\s+CDP: unsupported\s+Num COS: ` + fmt.Sprint(n) + `\n`).MatchString(out) {
		t.Fatalf("pqos -d does not describe %d L3 CLOSIDs without CDP:\n%s", n, out)
	}
	for i := 1; i < n; i++ {
		if _, ok := e.State().Group(fmt.Sprintf("COS%d", i)); !ok {
			t.Fatalf("pqos made no COS%d:\n%s", i, out)
		}
	}
	out = pqos("-I", "-s")
	for i := 0; i < n; i++ {
		if want := fmt.Sprintf("L3CA COS%d => MASK %#x\n", i, full); !strings.Contains(out, want) {
			t.Fatalf("pqos -s lacks %q:\n%s", want, out)
		}
	}
	pqos("-I", "-e", "llc:1=0x00f")
	pqos("-I", "-a", "llc:1=0-1")
	if g, _ := e.State().Group("COS1"); g.Schemata["L3"][0] != 0x00f {
		t.Fatalf("COS1 L3 mask %#x after -e llc:1=0x00f", g.Schemata["L3"][0])
	}
	if b, _ := e.ReadFile("COS1/cpus_list"); string(b) != "0-1\n" {
		t.Fatalf("COS1/cpus_list after -a llc:1=0-1: %q", b)
	}
	out = pqos("-I", "-s")
	if !strings.Contains(out, "L3CA COS1 => MASK 0xf\n") {
		t.Fatalf("pqos -s does not read back COS1's mask:\n%s", out)
	}
	pqos("-I", "-R")
	g, _ := e.State().Group("COS1")
	if g.Schemata["L3"][0] != uint32(full) {
		t.Fatalf("COS1 L3 mask %#x after pqos -R, want %#x", g.Schemata["L3"][0], full)
	}
	if b, _ := e.ReadFile("COS1/cpus_list"); string(b) != "\n" {
		t.Fatalf("COS1/cpus_list after pqos -R: %q", b)
	}
}
