package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/internal/emutest"
	"colo/platform/linux"
	"colo/resctrl"
	"colo/resctrl/emu"
	"colo/resctrl/journal"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The linux platform reaches resctrl through resctrl.Adapter:
// linux.Defaults.OpenRDT = func(root string) (linux.RDT, error) { return resctrl.OpenAdapter(root) }
// (wrapped to avoid a typed nil) where the binary imports colo/platform/linux.
var _ linux.RDT = (*resctrl.Adapter)(nil)

// runColo runs the colo command line in process and returns stdout and the error.
func runColo(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := execColo(&out, &out, args...)
	return out.String(), err
}

// runSplit runs a colo command with stdout and stderr kept apart (JSON stays parseable).
func runSplit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = execColo(&out, &errb, args...)
	return out.String(), errb.String(), err
}

// execColo runs the colo binary's root command in process as main does (flag errors are
// bad input), every flag back at its default first: flags keep their values between
// Execute calls in one process.
func execColo(stdout, stderr io.Writer, args ...string) error {
	var reset func(c *cobra.Command)
	reset = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if sv, ok := f.Value.(pflag.SliceValue); ok {
					_ = sv.Replace(nil) // Set would append the default's text "[]"
				} else {
					_ = f.Value.Set(f.DefValue)
				}
				f.Changed = false
			})
		}
		for _, sub := range c.Commands() {
			reset(sub)
		}
	}
	reset(rootCmd)
	rootCmd.SetOut(stdout)
	rootCmd.SetErr(stderr)
	rootCmd.SetArgs(args)
	rootCmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(err) })
	prepareTree()
	return rootCmd.Execute()
}

func TestResctrlCLI(t *testing.T) {
	e, dir := emutest.MountNamed(t, "intel", emu.Options{}) // the CLI tests run against a FUSE mount
	if _, err := runColo(t, "resctrl", "--root", dir, "set", "colo.web", "L3:0=ff0;1=ff0;MB:0=50", "--create"); err != nil {
		t.Fatal(err)
	}
	if _, err := runColo(t, "resctrl", "--root", dir, "assign", "colo.web", "77", "78"); err != nil {
		t.Fatal(err)
	}
	out := mustRunColo(t, "resctrl", "--root", dir, "show", "colo.web", "--json")
	var v struct {
		Path, Schemata string
		Tasks          []int
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if v.Path != "colo.web" || v.Schemata != "L3:0=ff0;1=ff0 MB:0=50;1=100" || len(v.Tasks) != 2 {
		t.Fatalf("%+v", v)
	}
	st := e.State()
	if g, _ := st.Group("colo.web"); g.Schemata["MB"][0] != 50 || g.Schemata["L3"][1] != 0xff0 {
		t.Fatalf("emulator state %+v", g)
	}
	// bad input: exit code 2 with the kernel's message
	for _, args := range [][]string{
		{"set", "colo.web", "L3:0=f0f"}, // non-contiguous on Intel
		{"set", "colo.web", "L3:zz"},    // unparsable
		{"set", "web", "L3:0=f"},        // not colo's
		{"assign", "colo.web", "x"},     // bad PID
		{"show", "colo.nothere"},        // no such group
	} {
		_, err := runColo(t, append([]string{"resctrl", "--root", dir}, args...)...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Fatalf("%v: %v, want a bad-input error", args, err)
		}
	}
	_, err := runColo(t, "resctrl", "--root", dir, "set", "colo.web", "L3:0=f0f")
	if !strings.Contains(err.Error(), "non-consecutive 1-bits") {
		t.Fatalf("error lacks the kernel message: %v", err)
	}
	out, err = runColo(t, "resctrl", "--root", dir, "ls")
	if err != nil || !strings.Contains(out, "colo.web") || !strings.Contains(out, "/ (default)") {
		t.Fatalf("ls: %q %v", out, err)
	}
	if out, err = runColo(t, "resctrl", "--root", dir, "info"); err != nil || !strings.Contains(out, "groups allowed (CLOSIDs): 8") {
		t.Fatalf("info: %q %v", out, err)
	}
	if out, err = runColo(t, "resctrl", "--root", dir, "mon", "colo.web"); err != nil || !strings.Contains(out, "OCCUPANCY") {
		t.Fatalf("mon: %q %v", out, err)
	}
	if err := e.Mkdir("theirs"); err != nil {
		t.Fatal(err)
	}
	// A dead instance's journal names its group and system/default as it found it; the
	// instance squeezed system/default, then died (its PID now has another start time).
	state := t.TempDir()
	before, _ := runColo(t, "resctrl", "--root", dir, "show", "/")
	j, err := journal.Open(state, dir, journal.Record{Kind: "test", Prefix: "colo.dead."})
	if err != nil {
		t.Fatal(err)
	}
	st0, _ := os.ReadFile(filepath.Join(dir, "schemata"))
	if err := j.SaveDefault(string(st0)); err != nil {
		t.Fatal(err)
	}
	if err := j.AddGroup("colo.dead.c0"); err != nil {
		t.Fatal(err)
	}
	if _, err := runColo(t, "resctrl", "--root", dir, "set", "colo.dead.c0", "L3:0=3", "--create"); err != nil {
		t.Fatal(err)
	}
	if _, err := runColo(t, "resctrl", "--root", dir, "set", "/", "L3:0=800;1=800", "--foreign"); err != nil {
		t.Fatal(err)
	}
	if out, err = runColo(t, "resctrl", "--root", dir, "reconcile", "--state-dir", state); err != nil || out != "no dead colo instance recorded for "+dir+"\n" {
		t.Fatalf("reconcile while the instance lives: %q %v", out, err)
	}
	r := j.Record()
	r.Start++ // the PID reused by another process: the instance is dead
	if err := r.Save(); err != nil {
		t.Fatal(err)
	}
	if out, err = runColo(t, "resctrl", "--root", dir, "reconcile", "--state-dir", state); err != nil || !strings.Contains(out, "removed colo.dead.c0; restored system/default") {
		t.Fatalf("reconcile: %q %v", out, err)
	}
	if g := e.State().Groups; len(g) != 3 || g[1].Path != "colo.web" || g[2].Path != "theirs" {
		t.Fatalf("after reconcile: %+v", g)
	}
	if after, _ := runColo(t, "resctrl", "--root", dir, "show", "/"); after != before {
		t.Fatalf("system/default not restored exactly:\n%s\nwas\n%s", after, before)
	}
	if rs, _ := journal.List(state, dir); len(rs) != 0 {
		t.Fatalf("records left: %+v", rs)
	}
}

func TestPrepareMount(t *testing.T) {
	dir := t.TempDir() + "/new/rdt"
	var msg bytes.Buffer
	if err := prepareMount(dir, &msg); err != nil || !strings.Contains(msg.String(), "created "+dir) {
		t.Fatalf("missing directory: %v, %q", err, msg.String())
	}
	if err := prepareMount(dir, &msg); err != nil {
		t.Fatalf("existing directory: %v", err)
	}
	f := dir + "/file"
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := prepareMount(f, &msg); !isBadInput(err) || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("a file: %v", err)
	}
}

// `resctrl set` prints what the kernel holds: MBA rounds 55 % to its 10 % step.
func TestResctrlSetPrintsWhatTheKernelHolds(t *testing.T) {
	_, dir := emutest.MountNamed(t, "intel", emu.Options{})
	out, err := runColo(t, "resctrl", "--resctrl-root", dir, "set", "colo.mb", "MB:0=55", "--create")
	if err != nil || !strings.Contains(out, "wrote MB:0=55; the kernel holds MB:0=60") {
		t.Fatalf("set MB:0=55: %v\n%s", err, out)
	}
	out, err = runColo(t, "resctrl", "--root", dir, "set", "colo.mb", "L3:0=ff0", "--json")
	var v map[string]string
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v["wrote"] != "L3:0=ff0" || v["holds"] != "L3:0=ff0" {
		t.Fatalf("set --json: %v %q", err, out)
	}
}
