package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"colo/sched"
	"colo/store"
)

func noEnv(string) (string, bool) { return "", false }

func parse(t *testing.T, y string) (*Benchmark, error) {
	t.Helper()
	return Parse("t.yaml", []byte(y), noEnv)
}

// mustParse parses y, failing the test on an error.
func mustParse(t *testing.T, y string) *Benchmark {
	t.Helper()
	bm, err := parse(t, y)
	if err != nil {
		t.Fatal(err)
	}
	return bm
}

func wantErrAt(t *testing.T, y string, line int, frag string) {
	t.Helper()
	_, err := parse(t, y)
	if err == nil {
		t.Fatalf("no error for:\n%s", y)
	}
	want := fmt.Sprintf("t.yaml:%d: ", line)
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), frag) {
		t.Fatalf("error %q; want it at %q mentioning %q", err, want, frag)
	}
}

const staticOK = `benchmark:
  name: two
  max_t: 60
  scheduler:
    implementation: dynamic
containers:
  db:
    workload: "tip:3"
    priority: true
    ipce: 90
    length: 30
  batch:
    workload: "flat:0.6"
    num_cores: 2
    start_t: 1
`

func TestParseStatic(t *testing.T) {
	bm := mustParse(t, staticOK)
	if bm.Platform != "sim" || bm.Machine.Name != "icx-4314-2s" || len(bm.Jobs) != 2 {
		t.Fatalf("%+v", bm)
	}
	if j := bm.Jobs[0]; j.Name != "db" || !j.Priority || j.IPCETarget != 0.9 || j.Cores != 1 || j.Source != "t.yaml:7" {
		t.Fatalf("job 0 %+v", j)
	}
	if bm.Sched.Implementation != "dynamic" || !bm.Sched.RDT || bm.Sched.Probe.MaxL3 != 4 {
		t.Fatalf("sched %+v", bm.Sched)
	}
}

func TestYAMLErrorsPointAtTheLine(t *testing.T) {
	wantErrAt(t, strings.Replace(staticOK, "    priority: true", "    priorty: true", 1), 9, `unknown key "priorty"`)
	wantErrAt(t, strings.Replace(staticOK, "  max_t: 60", "  max_t: soon", 1), 3, "cannot unmarshal")
	wantErrAt(t, strings.Replace(staticOK, "    ipce: 90", "    ipce: 120", 1), 10, "(0, 100]")
	wantErrAt(t, strings.Replace(staticOK, "    ipce: 90", "    ipce: 0", 1), 10, "(0, 100]")
	wantErrAt(t, strings.Replace(staticOK, "    num_cores: 2", "    num_cores: 33", 1), 14, "33 cores")
	wantErrAt(t, strings.Replace(staticOK, "    num_cores: 2", "    core: [40]", 1), 14, "core 40 does not exist")
	wantErrAt(t, strings.Replace(staticOK, "dynamic", "fastest", 1), 5, `scheduler "fastest" is not known`)
	wantErrAt(t, strings.Replace(staticOK, "  name: two", "  name: two\n  machine: cray-1", 1), 3, `machine "cray-1"`)
	wantErrAt(t, strings.Replace(staticOK, "  max_t: 60\n", "", 1), 11, "run forever")
	wantErrAt(t, strings.Replace(staticOK, "  name: two", "  name: ${NOPE}", 1), 2, "NOPE is not set")
	wantErrAt(t, strings.Replace(staticOK, "    implementation: dynamic", "    implementation: dynamic\n    prober:\n      max_l3: 12", 1), 6, "max_l3")
}

func TestEnvInterpolation(t *testing.T) {
	y := strings.Replace(staticOK, "  name: two", "  name: ${RUN_NAME} # ${NOT_NEEDED}", 1)
	bm, err := Parse("t.yaml", []byte(y), func(k string) (string, bool) {
		if k == "RUN_NAME" {
			return "from-env", true
		}
		return "", false
	})
	if err != nil || bm.Name != "from-env" {
		t.Fatalf("%v %v", bm, err)
	}
}

const genOK = `benchmark:
  name: gen
  max_t: 600
arrival:
  seed: 7
  mean: 5
  sigma: 2
  length: {mean: 140, sigma: 30, min: 30}
  split: {single-thread: 50, multi-thread: 50}
  sensitivities: {low: 75, high: 25}
  priority: 20
workloads:
  jobs:
    - {name: nb, workload: "tip:3", priority: true, ipce: 90, num_cores: 1}
    - {name: a, workload: "flat:0.6", kind: single-thread, sensitivity: low, num_cores: 1}
    - {name: b, workload: "flat:0.5", kind: single-thread, sensitivity: high, num_cores: 1}
    - {name: c, workload: "flat:0.7", kind: multi-thread, sensitivity: low, num_cores: "2-4"}
    - {name: d, workload: "flat:0.4", kind: multi-thread, sensitivity: high, num_cores: "2, 8"}
`

func TestGeneratedTraceDeterministic(t *testing.T) {
	a, err := parse(t, genOK)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := parse(t, genOK)
	if !reflect.DeepEqual(a.Jobs, b.Jobs) {
		t.Fatal("same seed, different traces")
	}
	c, _ := parse(t, strings.Replace(genOK, "seed: 7", "seed: 8", 1))
	if reflect.DeepEqual(a.Jobs, c.Jobs) {
		t.Fatal("different seeds, same trace")
	}
	// shape: ~600/5 arrivals, ~20 % priority, lengths ≥ 30 s, cores from the pool's sets
	n, prio := len(a.Jobs), 0
	for _, j := range a.Jobs {
		if j.Priority {
			prio++
		}
		if j.Length.Seconds() < 30 {
			t.Fatalf("length %v below min", j.Length)
		}
		ok := map[string][]int{"nb": {1}, "a": {1}, "b": {1}, "c": {2, 3, 4}, "d": {2, 8}}[j.Name]
		if !contains(ok, j.Cores) {
			t.Fatalf("job %s got %d cores", j.Name, j.Cores)
		}
	}
	if n < 100 || n > 140 || prio < n/10 || prio > n*3/10 {
		t.Fatalf("%d jobs, %d priority", n, prio)
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestGeneratedErrors(t *testing.T) {
	wantErrAt(t, strings.Replace(genOK, "  seed: 7\n", "", 1), 4, "seed is required")
	wantErrAt(t, strings.Replace(genOK, "multi-thread: 50}", "gpu: 50}", 1), 9, `"gpu"`)
	wantErrAt(t, strings.Replace(genOK, `num_cores: "2, 8"`, `num_cores: "2, 64"`, 1), 18, "num_cores 64 impossible")
	wantErrAt(t, strings.Replace(genOK, "ipce: 90", "ipce: 101", 1), 14, "(0, 100]")
	wantErrAt(t, strings.Replace(genOK, "num_cores: \"2-4\"", "num_cores: \"four\"", 1), 17, "num_cores")
}

func runWith(t *testing.T, bm *Benchmark, name string, fp *fakePlatform) (*Result, *Memory) {
	t.Helper()
	cfg := bm.Sched
	cfg.Implementation = name
	s, err := sched.New(name, sched.Env{Machine: bm.Machine, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	mem := &Memory{}
	res, err := Run(bm, fp, s, Options{Recorder: mem})
	if err != nil {
		t.Fatal(err)
	}
	return res, mem
}

func TestRunDynamicBeatsLeastLoadedOnTippingJobs(t *testing.T) {
	bm := mustParse(t, genOK)
	ll, _ := runWith(t, bm, "least-loaded", newFake(bm.Machine))
	dy, mem := runWith(t, bm, "dynamic", newFake(bm.Machine))
	a, b := Summarize(ll, 0), Summarize(dy, 0)
	if b.Probes == 0 || b.PriorityIPCE <= a.PriorityIPCE+20 {
		t.Fatalf("dynamic %+v\nleast-loaded %+v", b, a)
	}
	if b.BatchIPCE >= a.BatchIPCE || b.BatchIPCE < a.BatchIPCE-5 {
		t.Fatalf("batch: dynamic %.2f vs least-loaded %.2f", b.BatchIPCE, a.BatchIPCE)
	}
	if a.Probes != 0 || a.TimeOverTarget > 0.01 || b.TimeOverTarget < 0.5 {
		t.Fatalf("time over target %v vs %v", a.TimeOverTarget, b.TimeOverTarget)
	}
	if b.AllocMismatches != 0 || b.AllocationErrors != 0 {
		t.Fatalf("allocation trouble %+v", b)
	}
	if b.VirtualSeconds != 600 {
		t.Fatalf("virtual %v", b.VirtualSeconds)
	}
	// the ascending sweep stops at 3 ways, the tipping point of "tip:3"
	for _, p := range mem.Probes {
		if p.Result == "break" && p.Ways != 3 {
			t.Fatalf("probe broke at %d ways: %+v", p.Ways, p)
		}
	}
	// deterministic: the same run again records the same bytes
	_, mem2 := runWith(t, bm, "dynamic", newFake(bm.Machine))
	if fmt.Sprint(mem) != fmt.Sprint(mem2) {
		t.Fatal("two identical runs recorded different data")
	}
}

func TestFailedProbeKeepsJobRunningUnallocated(t *testing.T) {
	bm := mustParse(t, staticOK)
	fp := newFake(bm.Machine)
	fp.failAlloc[0] = true // the priority job "db" can never get a group
	res, mem := runWith(t, bm, "dynamic", fp)
	s := Summarize(res, 0)
	if s.Probes != 1 || s.ProbesFailed != 1 {
		t.Fatalf("probes %d failed %d", s.Probes, s.ProbesFailed)
	}
	db := res.Jobs[0]
	if db.Name != "db" || db.State != StateCompleted || db.Samples < 25 {
		t.Fatalf("db %+v: should run its 30 s to completion", db)
	}
	if mem.Jobs[0].State != StateCompleted {
		t.Fatalf("recorded %+v", mem.Jobs[0])
	}
	for _, a := range mem.Allocations {
		if len(a.Members) == 1 && a.Members[0] == 0 && a.Mask != 0 {
			t.Fatalf("db got an allocation %+v", a)
		}
	}
}

func TestJobThatNeverFitsIsRejected(t *testing.T) {
	y := strings.Replace(staticOK, "    num_cores: 2", "    num_cores: 20", 1)
	bm, err := parse(t, y)
	if err != nil {
		t.Fatal(err) // 20 ≤ 32 cores: valid input, but no socket has 20 cores
	}
	var warned []string
	s, _ := sched.New("least-loaded", sched.Env{Machine: bm.Machine, Config: bm.Sched})
	res, err := Run(bm, newFake(bm.Machine), s, Options{Warn: func(w string) { warned = append(warned, w) }})
	if err != nil {
		t.Fatal(err)
	}
	sum := Summarize(res, 0)
	if sum.JobsRejected != 1 || sum.JobsCompleted != 1 || len(warned) != 1 || !strings.Contains(warned[0], "t.yaml:12") {
		t.Fatalf("summary %+v warnings %q", sum, warned)
	}
}

func TestPlatformCheckRunsFirst(t *testing.T) {
	bm, _ := parse(t, strings.Replace(staticOK, `"flat:0.6"`, `"warp:9"`, 1))
	s, _ := sched.New("least-loaded", sched.Env{Machine: bm.Machine, Config: bm.Sched})
	fp := newFake(bm.Machine)
	_, err := Run(bm, fp, s, Options{})
	if err == nil || !strings.Contains(err.Error(), "t.yaml:12") || len(fp.jobs) != 0 || fp.now != 0 {
		t.Fatalf("err %v; nothing may start", err)
	}
}

// With every float finite, the NaN-as-null encoder writes exactly what encoding/json
// writes (embedded store.Summary flattened, omitempty honoured), with IPCE as a fraction
// (the fields hold percent; docs/json.md: every ratio in JSON is a fraction).
func TestSummaryJSONMatchesEncodingJSON(t *testing.T) {
	type plain Summary // no MarshalJSON method
	s := Summary{Summary: store.Summary{Name: "x", PriorityIPCE: 71.5, BatchIPCE: 40, GlobalIPCE: 50, TimeOverTargetP90: 0.25, JobsCompleted: 3, Notes: []string{"n"}},
		JobsTotal: 4, Probes: 2, GlobalIPCECoreWeighted: 60}
	for _, v := range []Summary{s, {Summary: store.Summary{Name: "y"}}} {
		got, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		f := v
		f.PriorityIPCE, f.BatchIPCE, f.GlobalIPCE, f.GlobalIPCECoreWeighted = v.PriorityIPCE/100, v.BatchIPCE/100, v.GlobalIPCE/100, v.GlobalIPCECoreWeighted/100
		want, _ := json.Marshal(plain(f))
		if string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
	s.QueueDelayMean = math.NaN()
	if b, _ := json.Marshal(s); !strings.Contains(string(b), `"queue_delay_mean_s":null`) {
		t.Errorf("NaN not null: %s", b)
	}
}

// TestJSONKeys pins the stable keys of `colo run --json` (issue #5 item 6).
func TestJSONKeys(t *testing.T) {
	bm := mustParse(t, genOK)
	res, _ := runWith(t, bm, "least-loaded", newFake(bm.Machine))
	rep := &Report{Benchmark: bm.Name, Schedulers: []Summary{Summarize(res, 0)}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Schedulers []map[string]any `json:"schedulers"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "priority_ipce", "batch_ipce", "global_ipce", "time_over_target",
		"time_over_target_p90", "jobs_completed", "jobs_rejected", "virtual_seconds", "wall_seconds",
		"jobs_total", "probes", "samples"} {
		if _, ok := m.Schedulers[0][k]; !ok {
			t.Errorf("key %s missing from %s", k, b)
		}
	}
	for _, k := range []string{"Summary", "extra"} {
		if _, ok := m.Schedulers[0][k]; ok {
			t.Errorf("key %s in %s: the embedded store.Summary must be flattened", k, b)
		}
	}
	// least-loaded never meets a 0.95 target: 0, not null; no NaN may break the encoding
	if m.Schedulers[0]["time_over_target"] != 0.0 {
		t.Errorf("time_over_target %v", m.Schedulers[0]["time_over_target"])
	}
}
