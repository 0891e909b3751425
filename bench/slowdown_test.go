package bench

import (
	"math"
	"testing"
)

func init() {
	RegisterPlatform("test-fake", func(bm *Benchmark) (Platform, error) { return newFake(bm.Machine), nil })
}

const slowdownPair = `benchmark:
  name: pair
  max_t: 60
  scheduler:
    implementation: dynamic
containers:
  flat:
    workload: "flat:0.6"
    core: "0-1"
    length: 40
  tip:
    workload: "tip:4"
    priority: true
    ipce: 90
    core: "2-3"
    length: 40
`

// Under shared (no partitioning) the fake platform runs each job exactly as fast as alone:
// every slowdown is 1, so STP = n, ANTT = 1, unfairness = 1. Under dynamic the tip job gets
// its ways (faster than alone: S < 1) and the flat job loses 0.005 IPCE per way the other
// holds (S > 1); the row's metrics are the metric package's over those slowdowns.
func TestCompareSlowdowns(t *testing.T) {
	bm := mustParse(t, slowdownPair)
	bm.Platform = "test-fake"
	rows, err := Compare(bm, []string{Shared, "dynamic"})
	if err != nil {
		t.Fatal(err)
	}
	sh, dy := rows[0], rows[1]
	if len(sh.Jobs) != 2 || sh.STP != 2 || sh.ANTT != 1 || sh.Unfairness != 1 || sh.WorstSlowdown != 1 {
		t.Fatalf("shared: %+v, want both slowdowns exactly 1", sh)
	}
	if sh.Reconfigurations != 0 {
		t.Errorf("shared reconfigured %d times", sh.Reconfigurations)
	}
	s := map[string]float64{}
	for _, j := range dy.Jobs {
		s[j.Name] = j.Slowdown
		if math.Abs(j.Slowdown-j.IPCAlone/j.IPC) > 1e-12 {
			t.Errorf("%s: slowdown %v is not IPC alone / IPC = %v", j.Name, j.Slowdown, j.IPCAlone/j.IPC)
		}
	}
	if !(s["tip"] < 1 && s["flat"] > 1) {
		t.Fatalf("dynamic slowdowns %v: want tip < 1 (gets its ways) and flat > 1", s)
	}
	if want := 1/s["tip"] + 1/s["flat"]; math.Abs(dy.STP-want) > 1e-12 || dy.WorstSlowdown != s["flat"] || dy.Reconfigurations == 0 {
		t.Errorf("dynamic row %+v, want STP %v, worst %v, some reconfigurations", dy, want, s["flat"])
	}
}

// RunScheduler, like RunAll, builds the scheduler for the platform's machine (linux
// detects the host), not the YAML's: the 20-core job fits test-host's 20-core socket.
func TestRunSchedulerUsesThePlatformsMachine(t *testing.T) {
	bm := mustParse(t, wideJob)
	bm.Platform = "test-host"
	for _, name := range []string{Shared, "dynamic"} {
		res, err := RunScheduler(bm, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s := Summarize(res, 0); s.JobsCompleted != 1 || s.JobsRejected != 0 {
			t.Errorf("%s: completed %d rejected %d; the 20-core job fits the platform's socket", name, s.JobsCompleted, s.JobsRejected)
		}
	}
}
