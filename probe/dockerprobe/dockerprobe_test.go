package dockerprobe

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"colo/probe"
	rt "colo/runtime"
	"colo/runtime/docker"
	"colo/runtime/docker/dockertest"
)

func TestSameLLC(t *testing.T) {
	online, err := rt.OnlineCPUs()
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
// only the ordering is asserted: the pair is measured up to five times and the median
// of the differences decides.
func TestProbeOnDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker probe (about 30 s)")
	}
	r := dockertest.Require(t, docker.Options{})
	online, err := rt.OnlineCPUs()
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
	// Up to five pairs; the median decides, so the loop stops as soon as one sign has
	// three votes. On this VM's two vCPUs the neighbour reaches the target only through
	// memory (they do not share an LLC in practice), so the effect is small (0.06–0.16 on a
	// quiet machine) and a loaded machine's noise can reverse single pairs (−0.11 once).
	var diffs []float64
	notLess, less := 0, 0
	for pair := 0; pair < 5 && notLess < 3 && less < 3; pair++ {
		rnd := run("stress random --mb 8")
		cmp := run("stress compute")
		d := memSensitivity(rnd.Sensitivity) - memSensitivity(cmp.Sensitivity)
		diffs = append(diffs, d)
		if pair == 0 && d > 0.1 {
			break // clear on the first pair
		}
		if d >= 0 {
			notLess++
		} else {
			less++
		}
	}
	slices.Sort(diffs)
	if med := diffs[len(diffs)/2]; med < 0 {
		t.Fatalf("random-access target less memory sensitive than the compute loop: differences %v", diffs)
	}
}
