package live

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
// It asserts orderings: random suffers clearly more from the SoI than compute (margin 0.1:
// unmeasurable fails as reversed does), and the reporter is not clearly faster next to
// random than next to compute. The second is weaker on purpose: with the reporter and its
// competitor time-sharing one vCPU, a competitor evicts the reporter's cache only at a
// context switch, a few percent of its time, and over 5 alternations the difference was
// 0–20 % and within the noise at times (816 vs 812 µs of CPU at load 5–14); a margin there
// failed 1 full-suite run in 5 with the SoI ordering at 0.22 vs 0.98. It is the median of
// the 5 alternations' ratios (random/compute), at least 0.95; every attempt logs it.
//
// The machine is shared (CI runs other test binaries and compilers on the same 2 CPUs; the
// flake hunt adds stress-ng --cpu 4), so the measurement is made robust to it instead of
// waiting for a quiet moment (it never skips for noise):
//   - every time is CPU time (the apps' cpu_rate, the reporter's thread CPU clock), so
//     time-sharing the CPU with other tasks does not count;
//   - the test runs at nice -20, in a session (autogroup) of its own at nice -20, so other
//     tasks get a few percent of its CPU and leave its cache alone (their cache traffic,
//     not their CPU time, is what disturbs a cache measurement);
//   - the app, the reporter, the SoI and the competitors all share CPU 0 (time-sharing it,
//     which CPU time factors out): vCPUs of a VM need not share a last-level cache, and on
//     the development VM they did not (SoI on CPU 1 at nice -20: random 0.995 vs compute
//     0.998, three attempts; on CPU 0: random 0.22 vs compute 0.98, reporter 1.2× slower
//     next to random than next to compute, at load 44), while one CPU's cache hierarchy
//     is always shared; CPU 1 stays free for the rest of the machine.
//
// An attempt that shows both orderings with their margins passes; after 12 attempts
// without, the test fails, whether an ordering was reversed or not measurable. On the VM of
// 2026-11-27 (its L3 shared by both vCPUs) the SoI's effect on random was bimodal from
// attempt to attempt: P 0.45–0.88 in some, 0.89–1.0 (1.26 once, quiet) in others, with
// compute at 0.97–1.0 throughout. The ordering showed clearly in 4 attempts of 7 on the
// quiet machine and 2 of 6 under stress-ng --cpu 4, and a full stressed suite run failed
// all of the 3 attempts it then had (random 0.93, 0.90, 0.95 against compute 0.98, 0.99,
// 0.97). At one in three, 12 attempts miss a working SoI in under 1 % of runs; an attempt
// takes 8–13 s, and the test usually passes within the first three. The likely cause of the
// bimodality: on that VM a random-access loop's rate alone alternates between two levels
// (about 25 and 42 M accesses/s over 8 MB) from second to second, with or without a
// neighbour (probe/dockerprobe's TestProbeOnDocker has the measurement).
func TestEndToEndOrdering(t *testing.T) {
	if testing.Short() {
		t.Skip("real measurement")
	}
	if raceEnabled {
		t.Skip("timings under the race detector mean nothing")
	}
	boostPriority(t)
	var misses []string
	const attempts = 12
	for attempt := 1; attempt <= attempts; attempt++ {
		ok, why := orderingAttempt(t)
		if ok {
			return
		}
		misses = append(misses, why)
		t.Logf("attempt %d: %s", attempt, why)
	}
	t.Errorf("no attempt of %d showed both Bubble-Up orderings: %q", attempts, misses)
}

// boostPriority runs every thread of the test process, and so every thread and child
// started later (they inherit their creator's nice value), at nice -20 until the test
// ends. Without CAP_SYS_NICE it logs and measures at the normal priority.
func boostPriority(t *testing.T) {
	set := func(nice int) error {
		seen := map[int]bool{}
		for { // a thread created meanwhile inherits from one not yet set: until none is new
			ents, err := os.ReadDir("/proc/self/task")
			if err != nil {
				return err
			}
			fresh := false
			for _, e := range ents {
				tid, err := strconv.Atoi(e.Name())
				if err != nil || seen[tid] {
					continue
				}
				seen[tid], fresh = true, true
				if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && err != syscall.ESRCH {
					return err
				}
			}
			if !fresh {
				return nil
			}
		}
	}
	// the nice value to return to (the raw getpriority value is 20 - nice)
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		t.Logf("measuring at normal priority: getpriority: %v", err)
		return
	}
	if err := set(-20); err != nil {
		t.Logf("measuring at normal priority: nice -20: %v", err)
		return
	}
	t.Cleanup(func() { _ = set(20 - prio) })
	// With autogroup scheduling (sched_autogroup_enabled) the kernel shares the CPUs
	// between sessions first, and nice works only inside one. A session of its own at
	// autogroup nice -20 outweighs the others too (sched(7) "The autogroup feature").
	if sid, _ := unix.Getsid(0); sid == os.Getpid() {
		// already a session leader (an earlier run of this test)
	} else if _, err := syscall.Setsid(); err != nil {
		t.Logf("no session of its own: %v", err)
		return
	}
	if err := os.WriteFile("/proc/self/autogroup", []byte("-20"), 0); err != nil {
		t.Logf("autogroup nice -20: %v", err)
		return
	}
	t.Cleanup(func() { _ = os.WriteFile("/proc/self/autogroup", []byte("0"), 0) })
}

// orderingAttempt measures once: ok when both orderings hold with their margins, else
// why says which ordering was missing.
func orderingAttempt(t *testing.T) (ok bool, why string) {
	// Paired: each run under the SoI right after an isolated one, 3 times, median ratio.
	r := &Runner{AppCPUs: []int{0}, OtherCPUs: []int{0}, StreamThreads: 1, RandomThreads: 1,
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
	// Alternate the two competitors 5 times and compare within each alternation (the
	// median of the 5 ratios), so that a burst of outside load or a slow drift of the
	// machine does not land on one of them only.
	var lcs, lrs, ratios []float64
	for i := 0; i < 5; i++ {
		lc, err := r.Contentiousness(ctx, computeBG)
		if err != nil {
			t.Fatal(err)
		}
		lr, err := r.Contentiousness(ctx, randomBG)
		if err != nil {
			t.Fatal(err)
		}
		lcs, lrs, ratios = append(lcs, lc.Avg), append(lrs, lr.Avg), append(ratios, lr.Avg/lc.Avg)
	}
	lc, lr := metric.Percentile(lcs, 50), metric.Percentile(lrs, 50)
	ratio := metric.Percentile(ratios, 50)
	l1, err := r.MeasureReporter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pc, _ := predict.Predict(cc, 96, predict.MethodNearest)
	pr, _ := predict.Predict(rc, 96, predict.MethodNearest)
	msg := fmt.Sprintf("P(96 MB): compute %.3f, random %.3f (random alone %.4g then %.4g); reporter alone %.0f / %.0f ns, next to compute %.0f, next to random %.0f (median ratio %.3f)",
		pc, pr, rc.Perf[0], ri, l0.Score, l1.Score, lc, lr, ratio)
	t.Log(msg)
	// The isolated runs before and after (random app, reporter) are logged, not compared:
	// both comparisons are paired against drift (each SoI run right after an isolated one;
	// the competitors alternated), and on this VM isolated runs drift by themselves (the
	// random app 6.56 then 4.85, quiet; the reporter 0.70 then 1.46 ms under stress-ng) in
	// attempts whose orderings held clearly. A 25 % drift test rejected 2 attempts in 8
	// on a quiet machine.
	// Margins keep a dead SoI or competitor (both ≈ 1, equal latencies) from passing by luck.
	switch {
	case pr >= pc-0.1:
		return false, fmt.Sprintf("random (%.3f) did not lose clearly more than compute (%.3f) to the SoI", pr, pc)
	case ratio < 0.95:
		return false, fmt.Sprintf("the reporter was clearly faster next to random than next to compute (median ratio %.3f of %v ns to %v ns): contentiousness reversed", ratio, lrs, lcs)
	}
	return true, ""
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
