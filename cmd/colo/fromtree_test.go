package main

import (
	"colo/internal/testenv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/machine"
	"colo/resctrl"
	"colo/resctrl/emu"
)

// captureProfile writes what `colo resctrl capture` writes for an emulated host: the
// resctrl tree and the CPU topology.
func captureProfile(t *testing.T, name string) string {
	t.Helper()
	e, err := emu.NewNamed(name, emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := resctrl.CaptureTree(e.FS(), filepath.Join(dir, "resctrl"), nil); err != nil {
		t.Fatal(err)
	}
	if err := emu.WriteCPUDir(e.Profile(), filepath.Join(dir, "cpu")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMachineDetectFromTree: colo machine detect --from-tree describes a captured host:
// its L3 domains, ways, CLOSIDs (the minimum over resources) and vendor.
func TestMachineDetectFromTree(t *testing.T) {
	for _, c := range []struct {
		profile          string
		vendor           string
		sockets, domains int
		ways, closids    int
	}{
		{"amd-genoa", "amd", 1, 8, 16, 16},
		{"amd-gap", "amd", 2, 16, 16, 16},
		{"intel-6252n", "intel", 2, 2, 11, 8},
	} {
		dir := captureProfile(t, c.profile)
		out, err := runColo(t, "machine", "detect", "--from-tree", dir, "--json")
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.profile, err, out)
		}
		var p struct {
			Vendor  string `json:"vendor"`
			Sockets int    `json:"sockets"`
			LLC     struct {
				Ways             int `json:"ways"`
				DomainsPerSocket int `json:"domains_per_socket"`
			} `json:"llc"`
			CAT struct {
				NumCLOSIDs int `json:"num_closids"`
			} `json:"cat"`
			MBA *struct {
				NumCLOSIDs int `json:"num_closids"`
			} `json:"mba"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%s: %v\n%s", c.profile, err, out)
		}
		closids := p.CAT.NumCLOSIDs
		if p.MBA != nil {
			closids = min(closids, p.MBA.NumCLOSIDs)
		}
		if !strings.EqualFold(p.Vendor, c.vendor) || p.Sockets != c.sockets || p.Sockets*p.LLC.DomainsPerSocket != c.domains || p.LLC.Ways != c.ways || closids != c.closids {
			t.Fatalf("%s: detected %+v, want %s %d sockets %d domains %d ways %d CLOSIDs\n%s", c.profile, p, c.vendor, c.sockets, c.domains, c.ways, c.closids, out)
		}
	}
	bad := t.TempDir()
	if _, err := runColo(t, "machine", "detect", "--from-tree", bad); err == nil || !strings.Contains(err.Error(), "no resctrl tree") {
		t.Fatalf("empty dir: %v", err)
	}
}

// TestCaptureCommandRoundTrip: `colo resctrl capture` of a FUSE-mounted emulator with a
// group, then the capture replayed: every file reads as on the captured mount; the
// capture also holds cpu/, cpuinfo, cmdline, version and mounts.
func TestCaptureCommandRoundTrip(t *testing.T) {
	testenv.Need(t, "FUSE (/dev/fuse and a mount as root; apt-get install fuse3)", emu.FUSEAvailable())
	e, err := emu.NewNamed("amd-gap", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Mkdir("colo.web"); err != nil {
		t.Fatal(err)
	}
	if err := e.WriteFile("colo.web/schemata", []byte("L3:17=f0\n")); err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	m, err := emu.Mount(e, mnt)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmount()
	cpu := t.TempDir()
	if err := emu.WriteCPUDir(e.Profile(), cpu); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COLO_CPU_DIR", cpu)
	dir := filepath.Join(t.TempDir(), "host")
	if out, err := runColo(t, "resctrl", "capture", dir, "--root", mnt); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, f := range []string{"cpu/online", "cpu/cpu127/cache/index3/id", "cpuinfo", "cmdline", "version", "mounts", "errors", "resctrl/colo.web/schemata"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("capture lacks %s: %v", f, err)
		}
	}
	r, err := emu.LoadTree(dir, emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(filepath.Join(dir, "resctrl"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(dir, "resctrl"), p)
		want, _ := e.ReadFile(rel)
		got, gerr := r.ReadFile(rel)
		if gerr != nil || string(got) != string(want) {
			t.Errorf("%s: captured host reads %q, replay %q (%v)", rel, want, got, gerr)
		}
		n++
		return nil
	})
	if err != nil || n < 100 {
		t.Fatalf("%d files compared (%v)", n, err)
	}
	if got, _ := r.ReadFile("colo.web/schemata"); !strings.Contains(string(got), "17=00f0") {
		t.Fatalf("replayed group %q", got)
	}
}

// TestDoctorFromTree: colo doctor --from-tree names the captured host's shapes.
func TestDoctorFromTree(t *testing.T) {
	for _, c := range []struct{ profile, want string }{
		{"amd-gap", "ids [0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23]"},
		{"intel-6252n", "8 CLOSIDs usable"},
		{"amd-abmc", "32 assignable MBM counters per domain"},
		{"intel-snc2", "2 nodes per L3"},
		{"amd-ioalloc", "io_alloc"},
	} {
		dir := captureProfile(t, c.profile)
		out, err := runColo(t, "doctor", "--from-tree", dir)
		if err != nil || !strings.Contains(out, c.want) {
			t.Fatalf("%s: %v\n%s\nwant %q", c.profile, err, out, c.want)
		}
	}
}

// TestSNCBytesPerWay: on a captured SNC2 host, machine detect --from-tree reports two
// nodes per L3 and a way is worth size/ways/2 (what lfoc+ converts occupancy with).
func TestSNCBytesPerWay(t *testing.T) {
	dir := captureProfile(t, "intel-snc2")
	root, _ := emu.TreeRoot(dir)
	p, err := machine.DetectDirs(filepath.Join(dir, "cpu"), root)
	if err != nil {
		t.Fatal(err)
	}
	if p.LLC.SNCNodes != 2 || p.BytesPerWay() != p.LLC.SizeBytes/15/2 || p.LLC.SizeBytes != 60<<20 {
		t.Fatalf("snc %d, size %d, bytes per way %d", p.LLC.SNCNodes, p.LLC.SizeBytes, p.BytesPerWay())
	}
	other := captureProfile(t, "intel-6252n")
	q, err := machine.DetectDirs(filepath.Join(other, "cpu"), mustRoot(t, other))
	if err != nil {
		t.Fatal(err)
	}
	if q.LLC.SNCNodes != 0 || q.BytesPerWay() != q.LLC.SizeBytes/11 {
		t.Fatalf("no SNC: %d nodes, %d bytes per way", q.LLC.SNCNodes, q.BytesPerWay())
	}
}

func mustRoot(t *testing.T, dir string) string {
	t.Helper()
	r, err := emu.TreeRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEmulateFromTree: `colo resctrl emulate --from-tree` serves a captured amd-genoa
// (with a group, tasks of another host, traffic) through FUSE: every file of the
// capture reads the same on the mount, and the mount takes a write at a gapped id; a
// broken tree exits 2 naming the file.
func TestEmulateFromTree(t *testing.T) {
	testenv.Need(t, "FUSE (/dev/fuse and a mount as root; apt-get install fuse3)", emu.FUSEAvailable())
	e, err := emu.NewNamed("amd-genoa", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Mkdir("batch"); err != nil {
		t.Fatal(err)
	}
	for _, w := range [][2]string{{"batch/schemata", "L3:14=3\n"}, {"batch/tasks", "4000000\n"}} {
		if err := e.WriteFile(w[0], []byte(w[1])); err != nil {
			t.Fatal(err)
		}
	}
	e.SetSource(emu.SourceFunc(func(pid, dom int) emu.Sample { return emu.Sample{Footprint: 1 << 20, TotalBytes: 5e6, CPU: -1} }))
	e.Tick()
	dir := t.TempDir()
	if err := resctrl.CaptureTree(e.FS(), filepath.Join(dir, "resctrl"), nil); err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	cmd, log := coloProcess(t, nil, "resctrl", "emulate", "--from-tree", dir, "--mount", mnt)
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(log.String(), "mounted at"); {
		if time.Now().After(deadline) {
			t.Fatalf("emulate never mounted:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	n := 0
	err = filepath.WalkDir(filepath.Join(dir, "resctrl"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(dir, "resctrl"), p)
		want, _ := os.ReadFile(p)
		got, gerr := os.ReadFile(filepath.Join(mnt, rel))
		if gerr != nil || string(got) != string(want) {
			t.Errorf("%s: captured %q, served %q (%v)", rel, want, got, gerr)
		}
		n++
		return nil
	})
	if err != nil || n < 60 {
		t.Fatalf("%d files compared (%v)", n, err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "batch/schemata"), []byte("L3:12=f0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(mnt, "batch/schemata")); !strings.Contains(string(b), "12=00f0;14=0003") {
		t.Fatalf("after a write %q", b)
	}
	os.WriteFile(filepath.Join(dir, "resctrl/info/L3/cbm_mask"), []byte("zz\n"), 0o644)
	_, err = runColo(t, "resctrl", "emulate", "--from-tree", dir, "--mount", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "info/L3/cbm_mask") {
		t.Fatalf("broken tree: %v", err)
	}
}
