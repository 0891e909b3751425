package main

import (
	"encoding/json"
	"testing"
)

// Issue 7 must-show on sim through the command: neighbor 6 MB on 1 GB pages is LLC
// sensitive, the CPU loop is not; same seed, byte-identical output.
func TestProbeSensitivitySim(t *testing.T) {
	probeJSON := func(target string) (probeOutput, string) {
		out, err := runColo(t, "probe", "sensitivity", "--platform", "sim", "--target", target, "--json")
		if err != nil {
			t.Fatalf("%s: %v\n%s", target, err, out)
		}
		var o probeOutput
		if err := json.Unmarshal([]byte(out), &o); err != nil {
			t.Fatalf("%s: %v\n%s", target, err, out)
		}
		return o, out
	}
	nb, raw := probeJSON("neighbor:6M:1g")
	cpu, _ := probeJSON("cpu")
	t.Logf("neighbor:6M:1g ς %+v; cpu %+v", nb.Sensitivity, cpu.Sensitivity)
	if nb.Metric != "ipce" || len(nb.Stressed) != 5 || len(nb.Samples) != 6 || nb.Samples[0] != 40 {
		t.Fatalf("shape: %+v", nb)
	}
	if nb.Sensitivity.LLC < 0.3 || cpu.Sensitivity.LLC > 0.05 {
		t.Fatalf("LLC ς: neighbor %.3f (want ≥ 0.3), cpu %.3f (want ≈ 0)", nb.Sensitivity.LLC, cpu.Sensitivity.LLC)
	}
	if _, again := probeJSON("neighbor:6M:1g"); again != raw {
		t.Fatal("same seed, different output")
	}
}

func TestProbeSensitivityBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--platform", "moon"},
		{"--segment", "0s"},
		{"--segment", "20ms"}, // shorter than one 50 ms sample
		{"--target", "nosuch:1"},
		{"--isolated", "--ways", "0"},
		{"--platform", "linux", "--target", "sleep 10"},
		{"--platform", "linux", "--isolated"},
		{"--platform", "linux", "--neighbour-cpus", "x-y"},
	} {
		out, err := runColo(t, append([]string{"probe", "sensitivity"}, args...)...)
		if !isBadInput(err) {
			t.Errorf("%v: want bad input (exit 2), got %v\n%s", args, err, out)
		}
	}
}
