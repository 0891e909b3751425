package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"colo/bench"
	"colo/store"
)

// reportBench is the thesis's exceeding-demand scenario (header and prober of
// examples/thesis/exceeding-demand.yaml) over an inline pool of simulated workloads,
// 5 virtual minutes, 50 % priority jobs.
const reportBench = `benchmark:
  name: report-e2e
  max_t: 300
  machine: icx-4314-2s
  scheduler:
    implementation: dynamic
    rdt: true
    reserve_ways: 1
    reserve_mem: 10
    rebalance: true
    prober: {implementation: default, min_l3: 2, max_l3: 4, step_l3: 1, min_mem: 10, max_mem: 20, mem_step: 10,
             probing_t: 12, order: asc, cooldown_t: 1, warmup_t: 3, probing_frequency: 50, drop_outliers: 5,
             break_condition: 0.9, allocate: true}
  data: {frequency: 2000}
arrival:
  seed: 1
  mean: 5
  sigma: 2
  length: {mean: 140, sigma: 30, min: 30}
  split: {single-thread: 50, multi-thread: 50}
  priority: 50
workloads:
  jobs:
    - {name: neighbor-6mb, workload: "neighbor:6M:1g", num_cores: 1, kind: single-thread, priority: true, ipce: 90}
    - {name: 7zip-mx2, workload: "7zip:2", num_cores: 1, kind: single-thread}
    - {name: 7zip-mx2-mt, workload: "7zip:2", num_cores: 2, kind: multi-thread}
    - {name: matrix-3d-256, workload: "matrix-3d:256", num_cores: 2, kind: multi-thread}
`

// A real orchestrator run on the test simulator, least-loaded and dynamic, written through
// the store, then colo report and colo export on its directory.
func TestReportOfSimulatedRun(t *testing.T) {
	yml := filepath.Join(t.TempDir(), "bench.yaml")
	if err := os.WriteFile(yml, []byte(reportBench), 0o644); err != nil {
		t.Fatal(err)
	}
	bm := loadOn(t, yml, "testsim")
	dir := filepath.Join(t.TempDir(), "run")
	names := []string{"least-loaded", "dynamic"}
	rec, _, closer, err := openRunStore(bm, dir, names, []string{"colo", "run"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bench.RunAll(bm, names, bench.RunOptions{Recorder: rec, Wall: time.Now}); err != nil {
		t.Fatal(err)
	}
	if err := closer(true); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report.html")
	msg, err := runColo(t, "report", dir, "-o", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "2 scheduler runs") {
		t.Errorf("report output %q", msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if keep := os.Getenv("COLO_TEST_OUT"); keep != "" {
		os.WriteFile(filepath.Join(keep, "simulated-run.html"), b, 0o644)
	}
	for _, want := range []string{`data-chart="series-ipce"`, `data-chart="bitmask"`, `data-chart="cdf"`, "least-loaded", "dynamic", `class="ok">complete`} {
		if !strings.Contains(html, want) {
			t.Errorf("report of the simulated run lacks %s", want)
		}
	}
	if strings.Contains(html, "Incomplete run directory") {
		t.Error("a finished run is reported incomplete")
	}
	// The dynamic run allocated exclusive ways: the bitmask panel shows more than system/default.
	if !strings.Contains(html, `data-clos="`) || strings.Count(html, `class="cbm"`) == 0 {
		t.Error("no exclusive class in the bitmask panel of the dynamic run")
	}

	csv := filepath.Join(t.TempDir(), "csv")
	if _, err := runColo(t, "export", dir, "--format", "csv", "-o", csv); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, _ := st.Runs()
	var n int64
	for _, r := range runs {
		c, _ := st.SampleCount(r.ID)
		n += c
	}
	b, _ = os.ReadFile(filepath.Join(csv, "samples.csv"))
	if lines := int64(strings.Count(string(b), "\n")); lines != n+1 || n == 0 {
		t.Errorf("samples.csv has %d lines for %d samples", lines, n)
	}
}

func TestReportExportBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"report", filepath.Join(t.TempDir(), "absent")},
		{"report", t.TempDir()}, // a directory that holds no run
		{"export", filepath.Join(t.TempDir(), "absent")},
		{"export", t.TempDir(), "--format", "xlsx"},
	} {
		if _, err := runColo(t, args...); !isBadInput(err) {
			t.Errorf("colo %v: %v, want a bad-input error (exit 2)", args, err)
		}
	}
}
