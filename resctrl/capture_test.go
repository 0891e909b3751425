package resctrl

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"colo/resctrl/emu"
)

// busy gives an emulator groups in every state its profile allows: a CTRL_MON group
// with a narrowed mask on the last domain, CPUs and tasks, a MON group, an exclusive
// group, monitoring traffic, io_alloc on, a counter taken away.
func busy(t *testing.T, e *emu.Emulator) {
	t.Helper()
	p := e.Profile()
	w := func(path, data string) {
		t.Helper()
		if err := e.WriteFile(path, []byte(data)); err != nil {
			t.Fatalf("%s: write %q to %s: %v (%s)", p.Name, data, path, err, e.LastCmdStatus())
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v (%s)", p.Name, err, e.LastCmdStatus())
		}
	}
	must(e.Mkdir("a"))
	must(e.Mkdir("b"))
	root, err := New(e.FS(), Options{AllowDefault: true}).Schemata("")
	must(err)
	first := root[0]
	last := first.Values[len(first.Values)-1].Domain
	if !IsBandwidth(first.Resource) {
		w("a/schemata", fmt.Sprintf("%s:%d=3\n", first.Resource, last))
	} else {
		w("a/schemata", fmt.Sprintf("%s:%d=%d\n", first.Resource, last, first.Values[0].Value/2))
	}
	w("a/cpus_list", fmt.Sprintf("1,%d\n", p.CPUs-1))
	w("a/tasks", "101\n")
	w("b/tasks", "102\n")
	e.Declare(100)
	if p.Mon != nil {
		must(e.Mkdir("a/mon_groups/m"))
		w("a/mon_groups/m/tasks", "101\n")
		e.SetSource(emu.SourceFunc(func(pid, dom int) emu.Sample {
			return emu.Sample{Footprint: uint64(pid*1000 + dom), TotalBytes: uint64(pid * 7), LocalBytes: uint64(pid * 3), CPU: -1}
		}))
		e.Tick()
		e.Tick()
		if p.Mon.Counters > 0 {
			w("b/mbm_L3_assignments", "mbm_local_bytes:*=_\n")
		}
	}
	if p.L3 != nil && p.L3.IOAlloc {
		r := "L3"
		if p.CDP {
			r = "L3CODE"
		}
		w("info/"+r+"/io_alloc", "1\n")
		w("info/"+r+"/io_alloc_cbm", fmt.Sprintf("%d=3\n", p.L3IDs()[0]))
	}
}

// sameTree compares every directory listing and every readable file of two emulators.
func sameTree(t *testing.T, name string, want, got FS) int {
	t.Helper()
	n := 0
	var walk func(rel string)
	walk = func(rel string) {
		a, err1 := want.ReadDir(rel)
		b, err2 := got.ReadDir(rel)
		if err1 != nil || err2 != nil || !slices.Equal(a, b) {
			t.Fatalf("%s: %q lists\n%v (%v)\nreplayed\n%v (%v)", name, rel, a, err1, b, err2)
		}
		for _, f := range a {
			p := strings.TrimSuffix(join(rel, f), "/")
			if isDirName(f) {
				walk(p)
				continue
			}
			x, err1 := want.ReadFile(p)
			y, err2 := got.ReadFile(p)
			if string(x) != string(y) || (err1 == nil) != (err2 == nil) {
				t.Fatalf("%s: %s reads %q (%v), replayed %q (%v)", name, p, x, err1, y, err2)
			}
			n++
		}
	}
	walk("")
	return n
}

// TestRoundTripEveryProfile: capture → LoadTree on every built-in profile, busy: every
// file reads the same on the replaying emulator as in the capture.
func TestRoundTripEveryProfile(t *testing.T) {
	for _, name := range emu.ProfileNames() {
		t.Run(name, func(t *testing.T) {
			e, err := emu.NewNamed(name, emu.Options{})
			if err != nil {
				t.Fatal(err)
			}
			busy(t, e)
			dir := t.TempDir()
			var errs []string
			if err := CaptureTree(e.FS(), filepath.Join(dir, "resctrl"), &errs); err != nil {
				t.Fatal(err)
			}
			r, err := emu.LoadTree(dir, emu.Options{})
			if err != nil {
				t.Fatal(err)
			}
			n := sameTree(t, name, e.FS(), r.FS())
			// and the bare `cp -r` layout: the tree itself as DIR
			r2, err := emu.LoadTree(filepath.Join(dir, "resctrl"), emu.Options{})
			if err != nil {
				t.Fatal(err)
			}
			sameTree(t, name+" (cp -r layout)", e.FS(), r2.FS())
			t.Logf("%d files identical", n)
		})
	}
}

// TestBadTreeNamesTheFile: a tree colo cannot use is refused with the file named.
func TestBadTreeNamesTheFile(t *testing.T) {
	mk := func(t *testing.T) string {
		e, err := emu.NewNamed("amd-genoa", emu.Options{})
		if err != nil {
			t.Fatal(err)
		}
		busy(t, e)
		dir := t.TempDir()
		if err := CaptureTree(e.FS(), filepath.Join(dir, "resctrl"), nil); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, c := range []struct {
		file, content, want string
	}{
		{"resctrl/info/L3/cbm_mask", "fz\n", "info/L3/cbm_mask"},
		{"resctrl/info/L3/cbm_mask", "f0f\n", "info/L3/cbm_mask"},
		{"resctrl/info/L3/num_closids", "", "info/L3/num_closids"},
		{"resctrl/schemata", "    L3:0=ffff;1=ffff\n", "schemata"},
		{"resctrl/a/schemata", "    L3:3=1\n", "a/schemata"},
		{"resctrl/a/mode", "pseudo-locked\n", "a/mode"},
		{"resctrl/a/mon_data/mon_L3_00/mbm_total_bytes", "lots\n", "mon_L3_00/mbm_total_bytes"},
		{"resctrl/info/L3_MON/num_rmids", "x\n", "info/L3_MON/num_rmids"},
	} {
		dir := mk(t)
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := emu.LoadTree(dir, emu.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %q: error %v, want one naming %s", c.file, c.content, err, c.want)
		}
	}
	if _, err := emu.LoadTree(t.TempDir(), emu.Options{}); err == nil || !strings.Contains(err.Error(), "no resctrl tree") {
		t.Errorf("empty dir: %v", err)
	}
}

// TestHandWrittenTrees: trees written by hand in the `cp -r` layout (testdata/trees,
// each with its PROVENANCE) load, and every file in them reads the same on the
// emulator that replays them.
func TestHandWrittenTrees(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/trees/*")
	if len(dirs) < 2 {
		t.Fatalf("hand-written trees missing: %v", dirs)
	}
	for _, dir := range dirs {
		e, err := emu.LoadTree(dir, emu.Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() == "PROVENANCE" {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			want, _ := os.ReadFile(p)
			got, err := e.ReadFile(filepath.ToSlash(rel))
			if err != nil || string(got) != string(want) {
				t.Errorf("%s: %s reads %q (%v), the tree has %q", dir, rel, got, err, want)
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d files read as written", dir, n)
	}
}
