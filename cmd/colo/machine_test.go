package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"colo/internal/machinetest"
	"colo/machine"
)

// `colo machine list` names every built-in profile; `show --json` gives back exactly the
// profile machine.Get returns; unknown names and a missing sysfs are bad input (exit 2).
func TestMachineCLI(t *testing.T) {
	out := mustRunColo(t, "machine", "list")
	for _, n := range machine.Names() {
		if !strings.Contains(out, n) {
			t.Errorf("machine list lacks %s:\n%s", n, out)
		}
	}
	out = mustRunColo(t, "machine", "show", "bdw-2697v4", "--json")
	var got machine.Profile
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("show --json is not JSON: %v\n%s", err, out)
	}
	want := machinetest.Get(t, "bdw-2697v4")
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("show --json round trip:\n got %+v\nwant %+v", got, *want)
	}
	out, err := runColo(t, "machine", "show", "bdw-2697v4")
	if err != nil || !strings.Contains(out, "20 ways (2.25 MiB/way)") {
		t.Errorf("show table: %v\n%s", err, out)
	}
	var ue usageError
	if _, err := runColo(t, "machine", "show", "no-such"); !errors.As(err, &ue) {
		t.Errorf("unknown machine: %v, want a bad-input error", err)
	}
	missing := filepath.Join(t.TempDir(), "nosys")
	if _, err := runColo(t, "machine", "detect", "--sysfs", missing); !errors.As(err, &ue) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing sysfs: %v, want a bad-input error naming %s", err, missing)
	}
}

// machine detect names the CPU from cpuinfo and says "no RDT" without resctrl, instead of
// "cpu unknown" and a one-class CAT.
func TestMachineDetectNamesCPUAndNoRDT(t *testing.T) {
	ci := filepath.Join(t.TempDir(), "cpuinfo")
	if err := os.WriteFile(ci, []byte("processor\t: 0\nmodel name\t: AMD EPYC 7B13 64-Core Processor\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runColo(t, "machine", "detect", "--cpuinfo", ci, "--resctrl", filepath.Join(t.TempDir(), "none"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "AMD EPYC 7B13 64-Core Processor") || !strings.Contains(out, "no RDT") || strings.Contains(out, "CLOSIDs") {
		t.Fatalf("machine detect:\n%s", out)
	}
}
