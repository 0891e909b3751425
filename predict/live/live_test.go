package live

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"colo/metric"
	"colo/predict"
	"colo/stress"
)

// The test binary doubles as the applications: with COLO_LIVE_APP=KIND:MB:SECONDS it runs
// that stress load and prints its final report as JSON, like `colo stress KIND --json`.
func TestMain(m *testing.M) {
	if spec := os.Getenv("COLO_LIVE_APP"); spec != "" {
		var kind string
		var mb, secs float64
		parts := strings.Split(spec, ":")
		kind = parts[0]
		fmt.Sscan(parts[1], &mb)
		fmt.Sscan(parts[2], &secs)
		l, err := stress.New(stress.Config{Kind: kind, MB: mb})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs*float64(time.Second)))
		defer cancel()
		json.NewEncoder(os.Stdout).Encode(stress.Run(ctx, l, 0, time.Now, nil))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func selfApp(name, spec string) predict.App {
	return predict.App{Name: name, Cmd: fmt.Sprintf("COLO_LIVE_APP=%s exec %s", spec, os.Args[0])}
}

func TestPinnedChildInheritsAffinity(t *testing.T) {
	var out strings.Builder
	c, err := start("grep Cpus_allowed_list /proc/self/status", []int{0}, &out, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if !strings.Contains(out.String(), "\t0\n") {
		t.Fatalf("child affinity: %q, want CPU 0 only", out.String())
	}
}

func TestMeasureBadApps(t *testing.T) {
	r := &Runner{Metric: MetricRate}
	if _, err := r.MeasureOnce(context.Background(), predict.App{Name: "quiet", Cmd: "true"}); err == nil || !strings.Contains(err.Error(), "rate") {
		t.Fatalf("an app without a rate line: %v", err)
	}
	if _, err := r.MeasureOnce(context.Background(), predict.App{Name: "fails", Cmd: "exit 3"}); err == nil {
		t.Fatal("a failing app was measured")
	}
	r.Metric = MetricWall
	if v, err := r.MeasureOnce(context.Background(), predict.App{Name: "sleep", Cmd: "sleep 0.05"}); err != nil || v < 0.05 {
		t.Fatalf("wall time of sleep 0.05: %v %v", v, err)
	}
	// A competitor that fails is reported, not silently measured as no interference.
	r.Settle = 200 * time.Millisecond
	if _, err := r.CoRun(context.Background(), predict.App{Name: "sleep", Cmd: "sleep 0.01"}, predict.App{Name: "bad", Cmd: "exit 7"}); err == nil || !strings.Contains(err.Error(), "background bad") {
		t.Fatalf("failing competitor: %v", err)
	}
	if _, err := ParseMetric("cycles"); err == nil {
		t.Fatal("unknown metric accepted")
	}
}

// TestEndToEndOrdering profiles a compute loop and a random-access loop for real against
// the SoI (coarse dial: 0 and 96 MB) and measures their contentiousness with the reporter.
// It asserts only orderings: random suffers more from the SoI than compute, and the
// reporter suffers more next to random than next to compute. The machine is shared (other
// builds time-share its 2 CPUs, and on a VM other tenants share the physical cache), so an
// attempt counts only if it was quiet: the isolated measurements taken before and after it
// agree within 25 %. A quiet attempt either shows both orderings with their margins (pass),
// shows an ordering reversed beyond its margin (fail: the pipeline measures the opposite of
// what the workloads do), or shows no measurable effect at all (inconclusive: on the 2-vCPU
// development VM the SoI sometimes does not move an 8 MB random loop, measured 0.98 vs 0.98).
// Up to 3 attempts; if none is conclusive the test is skipped with the numbers logged.
func TestEndToEndOrdering(t *testing.T) {
	if testing.Short() {
		t.Skip("real measurement")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	if raceEnabled {
		t.Skip("timings under the race detector mean nothing")
	}
	// A reversal fails the test only when every attempt shows it: on this 2-vCPU VM one
	// attempt in a few is reversed by outside load (seen in CI-like runs: the reporter
	// faster next to the 64 MB random loop than next to the compute loop once, the right
	// way round in the other attempts), while a real inversion of colo's ordering repeats.
	var reversals []string
	for attempt := 1; attempt <= 3; attempt++ {
		ok, reversed, msg := orderingAttempt(t)
		if ok {
			return
		}
		if reversed != "" {
			reversals = append(reversals, reversed)
		}
		t.Logf("attempt %d not conclusive: %s %s", attempt, reversed, msg)
	}
	if len(reversals) == 3 {
		t.Errorf("reversed ordering in all 3 attempts: %v", reversals)
		return
	}
	t.Skip("no conclusive real measurement in 3 attempts (noisy machine, or the SoI had no measurable effect here)")
}

func within(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(a, b) }

// loadAvg is the 1-minute load average (0 if unknown).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	fmt.Sscan(string(b), &l)
	return l
}

// orderingAttempt measures once: ok when both orderings hold with their margins, else
// reversed says which ordering was clearly the wrong way round ("" when there was just
// no measurable effect or too much noise).
func orderingAttempt(t *testing.T) (ok bool, reversed, why string) {
	// With more runnable tasks than twice the CPUs, other tenants' processes share both CPUs
	// and their cache traffic dominates: measured on the development VM at load 11, the
	// random loop ran faster under the SoI than "alone", because the SoI displaced heavier
	// tenants from CPU 1.
	if l := loadAvg(); l > 2*float64(runtime.NumCPU()) {
		return false, "", fmt.Sprintf("load average %.1f on %d CPUs", l, runtime.NumCPU())
	}
	// Paired: each run under the SoI right after an isolated one, 3 times, median ratio.
	r := &Runner{AppCPUs: []int{0}, OtherCPUs: []int{1}, StreamThreads: 1, RandomThreads: 1,
		Settle: 100 * time.Millisecond, Repeats: 3, Paired: true, Metric: MetricAuto,
		Reporter: stress.ReporterConfig{Type: stress.ReporterRandom, MB: 8, Reps: 15, Warmup: 1}}
	ctx := context.Background()
	compute, random := selfApp("compute", "compute:0:0.2"), selfApp("random", "random:8:0.2")
	// Competitors run for longer than the measurement (they are killed at its end), so that
	// no restart (allocation, page faults) falls inside it.
	computeBG, randomBG := selfApp("compute", "compute:0:10"), selfApp("random64", "random:64:10")
	dials := []float64{0, 96}
	cc, err := r.SensitivityCurve(ctx, compute, dials)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := r.SensitivityCurve(ctx, random, dials)
	if err != nil {
		t.Fatal(err)
	}
	ri, err := r.Measure(ctx, random) // isolated again, after the curves
	if err != nil {
		t.Fatal(err)
	}
	r.Paired = false // the reporter comparison below alternates the competitors itself
	l0, err := r.MeasureReporter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Alternate the two competitors 3 times and compare median latencies, so that a burst
	// of outside load does not land on one of them only.
	var lcs, lrs []float64
	for i := 0; i < 3; i++ {
		lc, err := r.Contentiousness(ctx, computeBG)
		if err != nil {
			t.Fatal(err)
		}
		lr, err := r.Contentiousness(ctx, randomBG)
		if err != nil {
			t.Fatal(err)
		}
		lcs, lrs = append(lcs, lc.Avg), append(lrs, lr.Avg)
	}
	lc, lr := predict.ReporterRow{Avg: metric.Percentile(lcs, 50)}, predict.ReporterRow{Avg: metric.Percentile(lrs, 50)}
	l1, err := r.MeasureReporter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pc, _ := predict.Predict(cc, 96, predict.MethodNearest)
	pr, _ := predict.Predict(rc, 96, predict.MethodNearest)
	msg := fmt.Sprintf("P(96 MB): compute %.3f, random %.3f (random alone %.4g then %.4g); reporter alone %.0f / %.0f ns, next to compute %.0f, next to random %.0f",
		pc, pr, rc.Perf[0], ri, l0.Score, l1.Score, lc.Avg, lr.Avg)
	if !within(rc.Perf[0], ri, 0.25) || !within(l0.Score, l1.Score, 0.25) {
		return false, "", msg
	}
	t.Log(msg)
	// Margins keep a dead SoI or competitor (both ≈ 1, equal latencies) from passing by luck.
	sensOK, contOK := pr < pc-0.1, lr.Avg > 1.05*lc.Avg
	if sensOK && contOK {
		return true, "", msg
	}
	if pr > pc+0.1 {
		return false, fmt.Sprintf("random (%.3f) lost clearly less than compute (%.3f) to the SoI", pr, pc), msg
	}
	if lr.Avg*1.05 < lc.Avg {
		return false, fmt.Sprintf("the reporter was clearly faster next to random (%.0f) than next to compute (%.0f)", lr.Avg, lc.Avg), msg
	}
	return false, "", msg + " (no measurable effect)"
}

// Paired mode runs end to end and keeps its shapes (values are not asserted: real noise).
func TestPairedMode(t *testing.T) {
	if testing.Short() {
		t.Skip("real measurement")
	}
	r := &Runner{AppCPUs: []int{0}, OtherCPUs: []int{1}, StreamThreads: 1, RandomThreads: 1,
		Repeats: 2, Paired: true, Metric: MetricAuto,
		Reporter: stress.ReporterConfig{Type: stress.ReporterAlternating, MB: 2, Reps: 3, Warmup: 1}}
	ctx := context.Background()
	c, err := r.SensitivityCurve(ctx, selfApp("compute", "compute:0:0.05"), []float64{0, 8})
	if err != nil || len(c.Perf) != 2 || c.Perf[0] <= 0 || c.Perf[1] <= 0 {
		t.Fatalf("%+v %v", c, err)
	}
	rows, err := r.ReporterCurve(ctx, []float64{0, 8})
	if err != nil || len(rows) != 2 || rows[0].Key != "0" || len(rows[1].Functions) != 2 {
		t.Fatalf("%+v %v", rows, err)
	}
	row, err := r.Contentiousness(ctx, selfApp("compute", "compute:0:10"))
	if err != nil || row.Key != "compute" || row.Avg <= 0 {
		t.Fatalf("%+v %v", row, err)
	}
}
