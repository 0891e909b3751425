package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"colo/workload"
)

// TestProcessCPUQuota limits a spinning process to 25 ms per 100 ms through its cgroup
// (v1 cpu.cfs_quota_us/cfs_period_us, v2 cpu.max): the files hold the limit, the
// kernel throttles the spinner and its CPU use stays under the quota, and quota 0
// removes the limit again.
func TestProcessCPUQuota(t *testing.T) {
	r, _ := newRuntime(t, t.TempDir())
	ctx := context.Background()
	s := spec("quota-spinner", "spin")
	s.Cpuset = "0"
	id := start(t, r, s)
	info, _ := r.Inspect(ctx, id)
	q, err := workload.CFSQuota(0.25, 1, workload.CFSPeriod)
	if err != nil || q != 25*time.Millisecond {
		t.Fatalf("CFSQuota(0.25, 1 CPU, 100 ms) = %v %v, want 25ms", q, err)
	}
	if err := r.SetCPUQuota(ctx, id, q, workload.CFSPeriod); err != nil {
		t.Fatal(err)
	}
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(info.Cgroup.Dir("cpu"), f))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	v2 := info.Cgroup.Version == 2
	if v2 {
		if got := read("cpu.max"); got != "25000 100000" {
			t.Errorf("cpu.max %q", got)
		}
	} else if qq, pp := read("cpu.cfs_quota_us"), read("cpu.cfs_period_us"); qq != "25000" || pp != "100000" {
		t.Errorf("cfs quota %s per %s", qq, pp)
	}
	// The kernel throttles the spinner once it overruns its quota in a period. On a loaded
	// host a spinner may never get 25 ms of one CPU in 100 ms (at load 50 it gets ~3 ms),
	// so the enforcement event is observed under the kernel's smallest quota, 1 ms, which
	// any scheduling slice overruns; then the 25 ms quota comes back for the accounting.
	minQ, err := workload.CFSQuota(0.01, 1, workload.CFSPeriod)
	if err != nil || minQ != time.Millisecond {
		t.Fatalf("CFSQuota(0.01, 1 CPU, 100 ms) = %v %v, want 1ms", minQ, err)
	}
	if err := r.SetCPUQuota(ctx, id, minQ, workload.CFSPeriod); err != nil {
		t.Fatal(err)
	}
	s0, _ := r.Stats(ctx, id)
	deadline := time.Now().Add(60 * time.Second)
	st := read("cpu.stat")
	for !strings.Contains(st, "nr_throttled") || strings.Contains(st, "nr_throttled 0\n") {
		if time.Now().After(deadline) {
			t.Fatalf("never throttled in 60 s under a 1 ms quota: %q", st)
		}
		time.Sleep(50 * time.Millisecond)
		st = read("cpu.stat")
	}
	if err := r.SetCPUQuota(ctx, id, q, workload.CFSPeriod); err != nil {
		t.Fatal(err)
	}
	// then the kernel's own accounting over the next 10 enforcement periods: the CPU time
	// used in them is at most one quota per period (plus a period of slack at each end for
	// the runtime the kernel hands out in slices), whatever the host's load. No wall-clock
	// rate: a loaded host only makes the spinner use less.
	periods := func(st string) int {
		for _, l := range strings.Split(st, "\n") {
			if n, ok := strings.CutPrefix(l, "nr_periods "); ok {
				v, err := strconv.Atoi(strings.TrimSpace(n))
				if err != nil {
					t.Fatalf("cpu.stat %q: %v", st, err)
				}
				return v
			}
		}
		t.Fatalf("cpu.stat without nr_periods: %q", st)
		return 0
	}
	s1, _ := r.Stats(ctx, id)
	p1 := periods(read("cpu.stat"))
	p2 := p1
	for p2 < p1+10 {
		if time.Now().After(deadline) {
			t.Fatalf("cpu.stat nr_periods stayed at %d (from %d) until the deadline", p2, p1)
		}
		time.Sleep(50 * time.Millisecond)
		p2 = periods(read("cpu.stat"))
	}
	s2, _ := r.Stats(ctx, id)
	used := time.Duration(s2.CPUTotalNs - s1.CPUTotalNs)
	allowed := time.Duration(p2-p1+2) * q
	t.Logf("spinner at quota 0.25: %v of CPU in %d enforcement periods (at most %v); %.3f cores; cpu.stat %q",
		used, p2-p1, allowed, workload.CPUCores(s0, s2), st)
	if used > allowed {
		t.Errorf("spinner used %v of CPU in %d periods of a 25 ms quota (at most %v)", used, p2-p1, allowed)
	}
	if err := r.SetCPUQuota(ctx, id, 0, workload.CFSPeriod); err != nil {
		t.Fatal(err)
	}
	if v2 {
		if got := read("cpu.max"); got != "max 100000" {
			t.Errorf("cpu.max after removing the limit %q", got)
		}
	} else if qq := read("cpu.cfs_quota_us"); qq != "-1" {
		t.Errorf("cfs_quota_us after removing the limit %s", qq)
	}
	if err := r.SetCPUQuota(ctx, id, 500*time.Microsecond, workload.CFSPeriod); err == nil {
		t.Error("a 0.5 ms quota (under the kernel's 1 ms) accepted")
	}
	for _, c := range []struct {
		f    float64
		n    int
		want time.Duration
	}{{1, 4, 0}, {0.5, 4, 200 * time.Millisecond}, {0.001, 1, time.Millisecond}} {
		if got, err := workload.CFSQuota(c.f, c.n, workload.CFSPeriod); err != nil || got != c.want {
			t.Errorf("CFSQuota(%v, %d) = %v %v, want %v", c.f, c.n, got, err, c.want)
		}
	}
	if _, err := workload.CFSQuota(0, 1, workload.CFSPeriod); err == nil {
		t.Error("quota 0 accepted")
	}
}
