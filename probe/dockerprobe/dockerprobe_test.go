package dockerprobe

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"colo/probe"
	"colo/workload"
	"colo/workload/docker"
	"colo/workload/docker/dockertest"
)

func TestSameLLC(t *testing.T) {
	online, err := workload.OnlineCPUs()
	if err != nil {
		t.Skip(err)
	}
	got, err := SameLLC(online[0])
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got, online[0]) {
		t.Fatalf("SameLLC(%d) = %v includes the core itself", online[0], got)
	}
	for _, c := range got {
		if !slices.Contains(online, c) {
			t.Fatalf("SameLLC(%d) = %v: %d is not online (%v)", online[0], got, c, online)
		}
	}
}

// memSensitivity is the target's memory/LLC sensitivity: the mean ς of the LLC, memory
// read and prefetch stressors.
func memSensitivity(v probe.Vector) float64 { return (v.LLC + v.MemRead + v.Prefetch) / 3 }

// Issue 7 must-show on linux: the probe runs end to end with Docker (baseline + five
// stressor segments, every container removed, ς ∈ [0,1]^5), and a random-access target
// over 8 MB is more memory/LLC sensitive than a compute loop. On 2 shared, noisy cores
// only the ordering is asserted, pair by pair (random, then compute, back to back): the
// first pair whose memory sensitivities differ by at least pairMargin decides, random
// ahead passes and compute ahead fails; after maxPairs pairs within the margin the test
// fails, as the ordering was not measurable.
func TestProbeOnDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker probe (about 30 s)")
	}
	r := dockertest.Require(t, docker.Options{})
	online, err := workload.OnlineCPUs()
	if err != nil || len(online) < 2 {
		t.Skipf("needs 2 online cores (have %v, %v)", online, err)
	}
	image := dockertest.ColoImage(t, r)
	cfg := probe.DefaultSensitivityConfig()
	cfg.Isolated = false
	cfg.DefaultT = 6 * time.Second // 1 s segments
	run := func(target string) Result {
		t.Helper()
		name := dockertest.Name(t, "probe")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := Run(ctx, r, Config{Image: image, Target: strings.Fields(target), TargetCPU: online[0],
			NeighbourCPUs: []int{online[1]}, Probe: cfg, Warmup: 300 * time.Millisecond, Name: name})
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		// Every container is gone.
		left, err := r.List(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range left {
			if strings.HasPrefix(c.Name, name) {
				t.Fatalf("container %s left behind", c.Name)
			}
		}
		if res.Metric == probe.MetricCPURate && res.Unit == "" {
			t.Fatalf("%s: cpu_rate without a unit", target)
		}
		if len(res.Samples) != 6 || len(res.Stressed) != 5 {
			t.Fatalf("%s: segments %v, stressed %v: want baseline + 5", target, res.Samples, res.Stressed)
		}
		for i, n := range res.Samples {
			if n < 5 {
				t.Fatalf("%s: segment %d has %d samples (1 s at 50 ms: ≈ 19)", target, i, n)
			}
		}
		for i, v := range res.Sensitivity.Slice() {
			if math.IsNaN(v) || v < 0 || v > 1 {
				t.Fatalf("%s: ς[%s] = %v outside [0,1]", target, probe.Stressors[i], v)
			}
		}
		if !(res.Base > 0) || !strings.HasPrefix(res.Isolation, "none") {
			t.Fatalf("%s: base %v, isolation %q", target, res.Base, res.Isolation)
		}
		if res.Metric == probe.MetricCPURate {
			if len(res.CPUShare) != 6 {
				t.Fatalf("%s: CPU share %v, want one per segment", target, res.CPUShare)
			}
			for i, v := range res.CPUShare {
				if !(v > 0 && v < 1.2) {
					t.Fatalf("%s: CPU share of segment %d is %v: want a fraction of one core", target, i, v)
				}
			}
		}
		t.Logf("%-22s %s base %.4g: ς %+v, cpu share %.2f", target, res.Metric, res.Base, res.Sensitivity, res.CPUShare)
		return res
	}
	// On the VM of 2026-11-27 (its 32 MiB L3 shared by both vCPUs) the random target's
	// rate alone alternates between two levels, about 25 and 42 M accesses/s, from second
	// to second, with or without a neighbour: the host's doing. A probe whose 1 s baseline
	// falls on the fast level gets ς 0.2–0.5 on every stressor, SysCall included; one on
	// the slow level gets ς ≈ 0 on most. Compute is immune (memory ς ≤ 0.05 throughout).
	// So most pairs differ by the host's timing, not by the stressors, and a median over a
	// few pairs sat on the near-zero ones: differences [−0.010 −0.008 −0.007 0.002 0.17]
	// failed a stressed suite run. Ten pairs measured under stress-ng --cpu 4 differed by
	// 0.043 −0.003 0.211 0.037 0.054 −0.003 0.055 0.499 0.335 0.000: 5 of 10 clear at the
	// margin 0.05, none reversed. With 6 clear of these 15 pairs, 10 pairs miss a working
	// probe in under 1 % of runs (0.6¹⁰). A pair took 27–35 s under stress; the whole
	// test, quiet and passing at its first pair, 23 s.
	const maxPairs, pairMargin = 10, 0.05
	var diffs []float64
	for pair := 0; pair < maxPairs; pair++ {
		rnd := run("stress random --mb 8")
		cmp := run("stress compute")
		d := memSensitivity(rnd.Sensitivity) - memSensitivity(cmp.Sensitivity)
		diffs = append(diffs, d)
		t.Logf("pair %d: random − compute memory sensitivity %+.3f", pair+1, d)
		if d >= pairMargin {
			return
		}
		if d <= -pairMargin {
			t.Fatalf("compute loop more memory sensitive than the random-access target by %.3f (differences %.3f)", -d, diffs)
		}
	}
	t.Fatalf("no pair of %d showed the random-access target more memory sensitive than the compute loop by %v: differences %.3f", maxPairs, pairMargin, diffs)
}
