package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/bits"
	"path/filepath"
	"strings"
	"testing"

	"colo/bench"
)

// Every scenario under examples/dcat, examples/vp, examples/lfoc and examples/guard parses
// and validates.
func TestControllerExamplesParse(t *testing.T) {
	var files []string
	for _, d := range []string{"dcat", "vp", "lfoc", "guard"} {
		m, err := filepath.Glob(filepath.Join("..", "..", "examples", d, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 6 {
		t.Fatalf("only %d example files", len(files))
	}
	for _, f := range files {
		if _, err := bench.Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func loadOn(t *testing.T, file, platform string) *bench.Benchmark {
	t.Helper()
	bm, err := bench.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	bm.Platform = platform
	return bm
}

// Fig. 15 through the run loop: under dcat, MLOAD-60MB ends Streaming at one way and MLR-8MB
// above its baseline; the masks the run loop applied never overlap.
func TestDcatThroughRunLoop(t *testing.T) {
	bm := loadOn(t, "../../examples/dcat/fig15-mlr-mload.yaml", "sim")
	rec := &bench.Memory{}
	if _, err := bench.RunScheduler(bm, "dcat", rec); err != nil {
		t.Fatal(err)
	}
	last := map[int]uint64{}
	for _, a := range rec.Allocations {
		if a.Source == "sched" && a.CLOS != "system/default" && len(a.Members) == 1 {
			last[a.Members[0]] = a.Mask
		}
	}
	byName := map[string]int{}
	for id, j := range rec.Jobs {
		byName[j.Name] = id
	}
	mload, mlr := bits.OnesCount64(last[byName["mload"]]), bits.OnesCount64(last[byName["mlr"]])
	t.Logf("final ways: mload %d, mlr %d", mload, mlr)
	if mload != 1 || mlr <= 3 {
		t.Fatalf("mload %d ways (want 1, Streaming), mlr %d ways (want > its baseline 3)", mload, mlr)
	}
	var union uint64
	for _, m := range last {
		if m&union != 0 {
			t.Fatalf("overlapping final masks %v", last)
		}
		union |= m
	}
}

// The comparison on dCat's Fig. 15 scenario: the paper's direction — dCat protects the MLR
// victim far better than static CAT, which beats the shared cache — for the worst slowdown
// and STP; VP takes no action because MLR and MLOAD start together, so no hurt relative to
// an earlier reference is ever observed (act only on observed hurt).
func TestCompareFig15(t *testing.T) {
	bm := loadOn(t, "../../examples/dcat/fig15-mlr-mload.yaml", "sim")
	cmp := bench.NewComparer()
	rows := map[string]bench.SchedulerOutcome{}
	for _, n := range []string{"shared", "static-cat", "dcat", "vp"} {
		r, err := cmp.Scheduler(bm, n)
		if err != nil {
			t.Fatal(err)
		}
		rows[n] = r
		t.Logf("%-10s STP %.3f ANTT %.3f unfairness %.3f worst %.3f reconfig %d moved %d", n, r.STP, r.ANTT, r.Unfairness, r.WorstSlowdown, r.Reconfigurations, r.MovedWays)
		for _, j := range r.Jobs {
			t.Logf("    %-6s IPC %.4f alone %.4f slowdown %.3f", j.Name, j.IPC, j.IPCAlone, j.Slowdown)
		}
	}
	sh, st, dc, vp := rows["shared"], rows["static-cat"], rows["dcat"], rows["vp"]
	if !(dc.WorstSlowdown < st.WorstSlowdown && st.WorstSlowdown < sh.WorstSlowdown) {
		t.Errorf("worst slowdown: dcat %.3f, static %.3f, shared %.3f: want dcat < static < shared", dc.WorstSlowdown, st.WorstSlowdown, sh.WorstSlowdown)
	}
	if !(dc.STP > st.STP && st.STP >= sh.STP) {
		t.Errorf("STP: dcat %.3f, static %.3f, shared %.3f: want dcat > static ≥ shared", dc.STP, st.STP, sh.STP)
	}
	if dc.Reconfigurations <= st.Reconfigurations || vp.Reconfigurations != 0 {
		t.Errorf("reconfigurations: dcat %d, static %d, vp %d", dc.Reconfigurations, st.Reconfigurations, vp.Reconfigurations)
	}
}

// The VP example through the run loop: the victim runs alone first, so the aggressor's
// arrival is observed hurt; vp acts and the victim ends less slowed than under shared.
func TestCompareVPExample(t *testing.T) {
	bm := loadOn(t, "../../examples/vp/victim-aggressor-hog.yaml", "sim")
	cmp := bench.NewComparer()
	rec := &bench.Memory{}
	if _, err := bench.RunScheduler(bm, "vp", rec); err != nil {
		t.Fatal(err)
	}
	for _, e := range rec.Events {
		if e.Kind == "decision" || e.Kind == "migrate" {
			t.Logf("%6.1fs %s %s", e.T.Seconds(), e.Kind, e.Text)
		}
	}
	var rows []bench.SchedulerOutcome
	for _, n := range []string{"shared", "vp"} {
		r, err := cmp.Scheduler(bm, n)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
		t.Logf("%-6s STP %.3f unfairness %.3f worst %.3f reconfig %d", n, r.STP, r.Unfairness, r.WorstSlowdown, r.Reconfigurations)
		for _, j := range r.Jobs {
			t.Logf("    %-9s slowdown %.3f", j.Name, j.Slowdown)
		}
	}
	if rows[1].Reconfigurations == 0 || !(rows[1].WorstSlowdown < rows[0].WorstSlowdown) {
		t.Fatalf("vp should act and lower the worst slowdown: shared %.3f, vp %.3f (%d actions)", rows[0].WorstSlowdown, rows[1].WorstSlowdown, rows[1].Reconfigurations)
	}
}

// LFOC+ online through the run loop on the data set's six workloads: every application is
// sampled (once per job), the partitioning follows; reports sampling activations per
// second and reconfigurations per minute (the paper: about 0.6 activations per second).
func TestLFOCPlusThroughRunLoop(t *testing.T) {
	files, _ := filepath.Glob("../../examples/lfoc/mix*.yaml")
	if len(files) != 6 {
		t.Fatalf("%d LFOC mixes", len(files))
	}
	cmp := bench.NewComparer()
	for _, f := range files {
		bm := loadOn(t, f, "testsim")
		rec := &bench.Memory{}
		res, err := bench.RunScheduler(bm, "lfoc+", rec)
		if err != nil {
			t.Fatal(err)
		}
		starts, ends := 0, 0
		for _, e := range rec.Events {
			if e.Kind == "decision" && strings.Contains(e.Text, "sample-start") {
				starts++
			}
			if e.Kind == "decision" && strings.Contains(e.Text, "sample-end") {
				ends++
			}
		}
		if starts < len(bm.Jobs)-1 || ends < len(bm.Jobs)-2 {
			t.Errorf("%s: %d sampling activations, %d completed, for %d jobs", f, starts, ends, len(bm.Jobs))
		}
		rows := map[string]bench.SchedulerOutcome{}
		for _, n := range []string{"shared", "lfoc+"} {
			r, err := cmp.Scheduler(bm, n)
			if err != nil {
				t.Fatal(err)
			}
			rows[n] = r
		}
		t.Logf("%s: %d activations in %.0f s (%.2f/s); lfoc+ reconfig %.0f/min; unfairness shared %.3f lfoc+ %.3f; STP shared %.3f lfoc+ %.3f",
			filepath.Base(f), starts, res.Virtual.Seconds(), float64(starts)/res.Virtual.Seconds(), rows["lfoc+"].ReconfigPerMin,
			rows["shared"].Unfairness, rows["lfoc+"].Unfairness, rows["shared"].STP, rows["lfoc+"].STP)
		if !(rows["lfoc+"].Unfairness < rows["shared"].Unfairness) {
			t.Errorf("%s: lfoc+ unfairness %.3f not below shared %.3f", f, rows["lfoc+"].Unfairness, rows["shared"].Unfairness)
		}
	}
}

func TestCompareBadInput(t *testing.T) {
	for _, tc := range []struct {
		file string
		f    compareFlags
		frag string
	}{
		{"../../examples/dcat/fig15-mlr-mload.yaml", compareFlags{schedulers: "dcat,fastest", format: "table"}, `scheduler "fastest" is not known`},
		{"../../examples/dcat/fig15-mlr-mload.yaml", compareFlags{schedulers: "dcat", format: "xml"}, `--format "xml"`},
		{"../../examples/dcat/fig15-mlr-mload.yaml", compareFlags{schedulers: " , ", format: "table"}, "at least one"},
		{"../../examples/dcat/nope.yaml", compareFlags{schedulers: "dcat", format: "table"}, "nope.yaml"},
	} {
		err := runCompare(io.Discard, tc.file, tc.f)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.frag) {
			t.Errorf("%+v: %v, want a bad-input error mentioning %q", tc.f, err, tc.frag)
		}
	}
}

// colo compare on a benchmark with SLOs runs the guard's comparison by default and gives
// every scheduler the SLO and best-effort keys (the Heracles must-show).
func TestCompareGuardDefaults(t *testing.T) {
	var out bytes.Buffer
	if err := runCompare(&out, "../../examples/guard/antagonists.yaml", compareFlags{schedulers: "ignored", noStore: true, json: true, format: "table"}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schedulers []map[string]any `json:"schedulers"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range doc.Schedulers {
		names = append(names, s["name"].(string))
		for _, k := range []string{"slo_violation_seconds", "slo_violation_seconds_after_first_window", "be_throughput", "utilization", "antagonist_precision", "throttles"} {
			if _, ok := s[k]; !ok {
				t.Errorf("%s: no %s", s["name"], k)
			}
		}
	}
	if strings.Join(names, ",") != bench.GuardSchedulers {
		t.Errorf("schedulers %v, want %s", names, bench.GuardSchedulers)
	}
}
