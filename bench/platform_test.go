package bench

import (
	"strings"
	"testing"
	"time"

	"colo/machine"
	"colo/sched"
)

// hostFake is a platform whose machine is not the YAML's: like platform linux, which
// detects the host (here a one-socket skx-6138 with 20 cores instead of icx-4314-2s with
// 2×16).
var lastHostFake *fakePlatform

// noIPCEFake is a fake platform that says it cannot measure IPCE (software counters
// only, like a VM without a PMU).
type noIPCEFake struct{ *fakePlatform }

func (noIPCEFake) IPCEUnavailable() string { return "software counters only: no PMU" }

var lastNoIPCE *fakePlatform

// slowStart is the fake platform where starting a workload takes cost of platform time,
// as a container start does on linux (~0.5 s); the jobs already running keep running.
type slowStart struct {
	*fakePlatform
	cost time.Duration
}

func (s slowStart) Start(j JobSpec, cpus []int) error {
	if err := s.fakePlatform.Advance(s.now + s.cost); err != nil {
		return err
	}
	return s.fakePlatform.Start(j, cpus)
}

func init() {
	RegisterPlatform("test-host", func(bm *Benchmark) (Platform, error) {
		m, err := machine.Get("skx-6138")
		if err != nil {
			return nil, err
		}
		lastHostFake = newFake(m)
		return lastHostFake, nil
	})
	RegisterPlatform("test-no-ipce", func(bm *Benchmark) (Platform, error) {
		lastNoIPCE = newFake(bm.Machine)
		return noIPCEFake{lastNoIPCE}, nil
	})
}

const wideJob = `benchmark:
  name: wide
  max_t: 30
  scheduler:
    implementation: dynamic
containers:
  wide:
    workload: "flat:0.6"
    num_cores: 20
    length: 10
`

// TestRunAllUsesThePlatformsMachine: a 20-core job never fits a 16-core socket of the
// YAML's icx-4314-2s, but fits the platform's 20-core socket. The scheduler must be built
// for the platform's machine, and the report must name it.
func TestRunAllUsesThePlatformsMachine(t *testing.T) {
	bm := mustParse(t, wideJob)
	bm.Platform = "test-host"
	for _, name := range []string{"least-loaded", "dynamic"} {
		rep, err := RunAll(bm, []string{name}, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Machine != "skx-6138" {
			t.Errorf("%s: report machine %q, want the platform's skx-6138", name, rep.Machine)
		}
		s := rep.Schedulers[0]
		if s.JobsCompleted != 1 || s.JobsRejected != 0 {
			t.Errorf("%s: completed %d rejected %d; the 20-core job fits the platform's socket", name, s.JobsCompleted, s.JobsRejected)
		}
		var b strings.Builder
		if err := rep.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "on skx-6138 (test-host)") {
			t.Errorf("%s: header does not name the platform's machine:\n%s", name, b.String())
		}
	}
}

const slowStartYAML = `benchmark:
  name: slow
  max_t: 10
  scheduler:
    implementation: least-loaded
  data:
    frequency: 100
    perf: true
containers:
  a:
    workload: "flat:0.6"
    length: 5
  b:
    workload: "flat:0.6"
    length: 5
  short:
    workload: "flat:0.6"
    start_t: 3
    length: 0.3
`

// TestStartTakesPlatformTime: with starts that take 0.5 s of platform time, a job starts
// when its Start returned, its samples never cover time before that (the start of the
// job admitted before it, or its own), and a 0.3 s job sampled every 100 ms gets its
// samples before it ends.
func TestStartTakesPlatformTime(t *testing.T) {
	bm := mustParse(t, slowStartYAML)
	fp := slowStart{newFake(bm.Machine), 500 * time.Millisecond}
	s := mustSched(t, bm, "least-loaded")
	mem := &Memory{}
	res, err := Run(bm, fp, s, Options{Recorder: mem})
	if err != nil {
		t.Fatal(err)
	}
	start := map[int]time.Duration{}
	for id, j := range mem.Jobs {
		start[id] = j.Start
	}
	a, b, short := bm.Jobs[0].ID, bm.Jobs[1].ID, bm.Jobs[2].ID
	// short arrives at 3 s; the loop's turns fall a millisecond after the 1 s starts
	if start[a] != 500*time.Millisecond || start[b] != time.Second || start[short] < 3500*time.Millisecond || start[short] > 3510*time.Millisecond {
		t.Fatalf("starts %v, %v, %v; want 0.5 s, 1 s and 3.5 s, when each Start returned", start[a], start[b], start[short])
	}
	n := map[int]int{}
	for _, sm := range mem.Samples {
		n[sm.Job]++
		if from := sm.T - sm.Interval; from < start[sm.Job] {
			t.Errorf("job %d: sample (%v, %v] begins before the job started at %v", sm.Job, from, sm.T, start[sm.Job])
		}
	}
	if n[short] < 2 {
		t.Errorf("the 0.3 s job got %d samples at 100 ms", n[short])
	}
	for _, j := range res.Jobs {
		if j.ID == short && (j.Duration < 250*time.Millisecond || j.Duration > 350*time.Millisecond) {
			t.Errorf("the 0.3 s job was observed for %v", j.Duration)
		}
	}
}

const prioYAML = `benchmark:
  name: prio
  max_t: 60
  scheduler:
    implementation: dynamic
    rdt: true
containers:
  db:
    workload: "tip:3"
    priority: true
    ipce: 90
    length: 30
  db2:
    workload: "tip:3"
    priority: true
    ipce: 90
    start_t: 5
    length: 30
`

// TestDynamicDoesNotProbeWithoutIPCE: on a platform without IPCE the dynamic scheduler
// neither probes nor creates a buffer CLOS, and says why once, in the decision log and
// in the summary.
func TestDynamicDoesNotProbeWithoutIPCE(t *testing.T) {
	bm := mustParse(t, prioYAML)
	bm.Platform = "test-no-ipce"
	mem := &Memory{}
	rep, err := RunAll(bm, []string{"dynamic"}, RunOptions{Recorder: func(string) (Recorder, func(Summary) error, error) {
		return mem, func(Summary) error { return nil }, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Schedulers[0]
	if s.Probes != 0 || s.ProbesFailed != 0 || lastNoIPCE.allocs != 0 {
		t.Errorf("probes %d (failed %d), SetAllocation calls %d; want none without IPCE", s.Probes, s.ProbesFailed, lastNoIPCE.allocs)
	}
	for _, a := range mem.Allocations {
		if a.CLOS != "system/default" {
			t.Errorf("allocation recorded without IPCE: %+v", a)
		}
	}
	said := 0
	for _, e := range mem.Events {
		if e.Kind == "decision" && strings.Contains(e.Text, "IPCE is unavailable") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("the decision not to probe was logged %d times, want once", said)
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "no PMU") {
		t.Errorf("summary notes %q", s.Notes)
	}
	if s.JobsCompleted != 2 {
		t.Errorf("%d jobs completed, want both (running unallocated)", s.JobsCompleted)
	}
	// the same trace on a platform with IPCE probes both jobs
	bm2, _ := parse(t, prioYAML)
	s2 := mustSched(t, bm2, "dynamic")
	fp := newFake(bm2.Machine)
	res, err := Run(bm2, fp, s2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Probes != 2 || fp.allocs == 0 {
		t.Errorf("with IPCE: %d probes, %d allocations; want both probed", res.Probes, fp.allocs)
	}
}

func mustSched(t *testing.T, bm *Benchmark, name string) sched.Scheduler {
	t.Helper()
	cfg := bm.Sched
	cfg.Implementation = name
	s, err := sched.New(name, sched.Env{Machine: bm.Machine, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
