package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"colo/internal/emutest"
	"colo/internal/machinetest"
	"colo/resctrl/emu"
)

// colo partition --apply writes LFOC+'s decision for a workload into an emulated resctrl
// of the same machine: one control group per cluster with the cluster's mask and its
// applications' threads.
func TestPartitionApply(t *testing.T) {
	emutest.NeedFUSE(t)
	m := machinetest.Get(t, "skx-6138")
	p, err := emu.ProfileFromMachine(m, "")
	if err != nil {
		t.Fatal(err)
	}
	e, err := emu.New(p, emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := emutest.Mount(t, e)
	var pids []string
	for range 3 {
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { c.Process.Kill(); c.Wait() }()
		pids = append(pids, strconv.Itoa(c.Process.Pid))
	}
	wl := "sphinx306,lbm06,libquantum06"
	args := []string{"partition", "--machine", "skx-6138", "--workload", wl, "--policy", "lfoc+", "--apply", "--resctrl-root", dir,
		"--pid", "sphinx306=" + pids[0], "--pid", "lbm06=" + pids[1], "--pid", "libquantum06=" + pids[2], "--format", "json"}
	out, said, err := runSplit(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, said)
	}
	if err := oneJSONValue(out); err != nil {
		t.Errorf("--apply --format json: stdout is not one JSON value (%v): %.300s", err, out)
	}
	// It says how to undo it, and that command works (checked after the groups below).
	undo := regexp.MustCompile(`undo: colo (resctrl --root \S+ rm) '([^']+)'`).FindStringSubmatch(said)
	if undo == nil || undo[2] != "colo.part-lfocplus-c*" {
		t.Fatalf("no undo line (colo resctrl --root DIR rm 'colo.part-lfocplus-c*') in:\n%s", said)
	}
	// The decision (colo partition without --apply prints the same masks): sphinx 0x3f8
	// in cluster 2, lbm 0x400 in cluster 1, libquantum 0x7 in cluster 3.
	for _, g := range []struct{ group, mask, pid string }{
		{"colo.part-lfocplus-c1", "400", pids[1]}, {"colo.part-lfocplus-c2", "3f8", pids[0]}, {"colo.part-lfocplus-c3", "7", pids[2]},
	} {
		s, err := os.ReadFile(filepath.Join(dir, g.group, "schemata"))
		if err != nil {
			t.Fatalf("%s: %v\n%s", g.group, err, out)
		}
		got := regexp.MustCompile(`L3:0=([0-9a-f]+)`).FindStringSubmatch(string(s))
		want, _ := strconv.ParseUint(g.mask, 16, 64)
		if got == nil {
			t.Fatalf("%s schemata %q", g.group, s)
		}
		if v, _ := strconv.ParseUint(got[1], 16, 64); v != want {
			t.Errorf("%s schemata %q, want L3:0=%s", g.group, s, g.mask)
		}
		tasks, _ := os.ReadFile(filepath.Join(dir, g.group, "tasks"))
		if strings.TrimSpace(string(tasks)) != g.pid {
			t.Errorf("%s tasks %q, want %s", g.group, tasks, g.pid)
		}
	}
	undoArgs := append(strings.Fields(undo[1]), undo[2])
	if _, err := runColo(t, undoArgs...); err != nil {
		t.Fatalf("the undo %v: %v", undoArgs, err)
	}
	for _, g := range []string{"colo.part-lfocplus-c1", "colo.part-lfocplus-c2", "colo.part-lfocplus-c3"} {
		if _, err := os.Stat(filepath.Join(dir, g)); err == nil {
			t.Errorf("after the undo %s is still there", g)
		}
	}
	if _, err := runColo(t, args...); err != nil {
		t.Fatal(err)
	}
	// Bad input changes nothing: an application without tasks, a host of another geometry.
	os.Remove(filepath.Join(dir, "colo.part-lfocplus-c1"))
	if _, err := runColo(t, args[:len(args)-4]...); err == nil || !strings.Contains(err.Error(), "no tasks for libquantum06") {
		t.Errorf("missing --pid: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "colo.part-lfocplus-c1")); err == nil {
		t.Error("a refused --apply created a group")
	}
	if _, err := runColo(t, "partition", "--machine", "skx-6138", "--workload", wl, "--pid", "lbm06=1"); err == nil || !strings.Contains(err.Error(), "go with --apply") {
		t.Errorf("--pid without --apply: %v", err)
	}
	// The README's emulator (--profile intel: another machine) is refused with the profile
	// that emulates the decision's machine, and that profile fits.
	_, other := emutest.MountNamed(t, "intel", emu.Options{})
	wrong := append([]string(nil), args...)
	for i, a := range wrong {
		if a == dir {
			wrong[i] = other
		}
	}
	_, err = runColo(t, wrong...)
	hint := regexp.MustCompile(`colo resctrl emulate --profile (\S+)\)`).FindStringSubmatch(fmt.Sprint(err))
	if hint == nil {
		t.Fatalf("--apply on an emulator of another machine: %v, want the profile to use", err)
	}
	if q, err := emu.NamedProfile(hint[1]); err != nil || q.L3 == nil || q.L3.CBMLen != m.LLC.Ways {
		t.Errorf("the named profile %s: %v; want %d-bit cache masks", hint[1], err, m.LLC.Ways)
	}
}
