package emu

import (
	"errors"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"colo/cbm"
	"colo/internal/testenv"
)

// TestGoresctrlAgainstEmulator: intel/goresctrl's pkg/rdt (v0.14.0 from the Go module
// proxy, unmodified; testdata/goresctrl is a module of its own so colo's go.mod does not
// take its dependencies) configures two classes ("50%" and "25%" of L3) on amd-genoa
// through a FUSE mount: the groups appear with 8 and 4 contiguous ways on every domain
// id (0,2,…,14). goresctrl refuses a mount whose /proc/mounts type is not "resctrl"
// ("resctrl not found in /proc/mounts"), so the test runs it under `unshare -m` with a
// one-line mounts file bound over the process's /proc/PID/mounts.
func TestGoresctrlAgainstEmulator(t *testing.T) {
	fuseOrSkip(t)
	_, err := exec.LookPath("unshare")
	testenv.Need(t, "unshare (util-linux) for a private mount namespace", err)
	if os.Geteuid() != 0 {
		testenv.Need(t, "root (mount --bind in a private namespace)", errors.New("not root"))
	}
	bin := filepath.Join(t.TempDir(), "goresctrl")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = "testdata/goresctrl"
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the goresctrl client (needs the Go module proxy): %v\n%s", err, out)
	}
	e, err := NewNamed("amd-genoa", Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m, err := Mount(e, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmount()
	mounts := filepath.Join(t.TempDir(), "mounts")
	if err := os.WriteFile(mounts, []byte("resctrl "+dir+" resctrl rw,relatime 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "resctrl not found in /proc/mounts") {
		t.Fatalf("without the mounts file goresctrl should refuse the FUSE mount: %v\n%s", err, out)
	}
	out, err = exec.Command("unshare", "-m", "sh", "-c", `mount --bind "$0" /proc/$$/mounts && exec "$1"`, mounts, bin).CombinedOutput()
	if err != nil {
		t.Fatalf("goresctrl: %v\n%s", err, out)
	}
	for _, c := range []struct {
		group string
		ways  int
	}{{"goresctrl.gold", 8}, {"goresctrl.bronze", 4}} {
		g, ok := e.State().Group(c.group)
		if !ok {
			t.Fatalf("goresctrl made no %s; it said:\n%s", c.group, out)
		}
		for d, v := range g.Schemata["L3"] {
			if bits.OnesCount32(v) != c.ways || !cbm.Mask(v).Contiguous() {
				t.Fatalf("%s domain id %d: mask %#x, want %d ways", c.group, e.Profile().L3IDs()[d], v, c.ways)
			}
		}
	}
	b, _ := e.ReadFile("goresctrl.gold/schemata")
	if !strings.Contains(string(b), "L3:0=00ff;2=00ff;4=00ff;6=00ff;8=00ff;10=00ff;12=00ff;14=00ff") {
		t.Fatalf("gold schemata %q", b)
	}
}
