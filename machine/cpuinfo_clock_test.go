package machine

import (
	"path/filepath"
	"strings"
	"testing"
)

// A host without cpufreq (a VM) has its clock assumed (2.0 GHz); an Intel model name
// states the nominal clock ("@ 2.80GHz") and detect then takes it, saying where it came
// from. AMD names state none and cpufreq, when present, wins.
func TestClockFromModelName(t *testing.T) {
	root := fakeHost(t, "ven0000", 1, 4, 1, 4, "16384K", 16) // no cpufreq
	p, err := Detect(root, filepath.Join(root, "no-resctrl"))
	if err != nil {
		t.Fatal(err)
	}
	if p.ClockGHz != 2.0 || !strings.Contains(p.Description, "clock 2.0 GHz") {
		t.Fatalf("without cpufreq: clock %v, %q", p.ClockGHz, p.Description)
	}
	amd := *p
	amd.NameCPU("AMD EPYC 7B13 64-Core Processor")
	if amd.ClockGHz != 2.0 || amd.CPU != "AMD EPYC 7B13 64-Core Processor" {
		t.Errorf("an AMD name changed the clock: %v", amd.ClockGHz)
	}
	p.NameCPU("Intel(R) Xeon(R) CPU E5-2680 v2 @ 2.80GHz")
	if p.ClockGHz != 2.8 || !strings.Contains(p.Description, "clock 2.80 GHz from the CPU's name") || strings.Contains(p.Description, "clock 2.0 GHz") {
		t.Errorf("clock %v, description %q; want 2.8 GHz from the name", p.ClockGHz, p.Description)
	}
	for name, want := range map[string]float64{"Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz": 1.9, "X @ 800MHz": 0.8, "X @ fast": 0, "X": 0} {
		if got, _ := ModelClockGHz(name); got != want {
			t.Errorf("ModelClockGHz(%q) = %v, want %v", name, got, want)
		}
	}
	withFreq := fakeHost(t, "ven0000", 1, 4, 1, 4, "16384K", 16)
	write(t, filepath.Join(withFreq, "devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"), "3500000\n")
	q, err := Detect(withFreq, filepath.Join(withFreq, "no-resctrl"))
	if err != nil {
		t.Fatal(err)
	}
	q.NameCPU("Intel(R) Xeon(R) CPU E5-2680 v2 @ 2.80GHz")
	if q.ClockGHz != 3.5 {
		t.Errorf("cpufreq's 3.5 GHz lost to the name: %v", q.ClockGHz)
	}
}
