package linux

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"colo/bench"
)

func readCgroupInt(t *testing.T, dir, file string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// cpuRate is the job's CPU time per wall second over d (cores busy).
func cpuRate(t *testing.T, pf *Platform, id int, d time.Duration) float64 {
	t.Helper()
	c0, err := pf.Read(id)
	if err != nil {
		t.Fatal(err)
	}
	w0 := time.Now()
	time.Sleep(d)
	c1, err := pf.Read(id)
	if err != nil {
		t.Fatal(err)
	}
	return (c1.CPUTime - c0.CPUTime).Seconds() / time.Since(w0).Seconds()
}

// TestCPUQuotaOnContainer limits a busy container (stress compute, one core) to 20 % of
// its core through bench.QuotaSetter: the CFS quota must be visible in the container's
// cgroup (20 ms per 100 ms), the kernel must throttle it, and its CPU time per second
// must fall to about the quota (direction asserted, with slack for a shared host).
func TestCPUQuotaOnContainer(t *testing.T) {
	e := newEnv(t)
	bm := parseBench(t, smokeYAML)
	pf, err := New(bm, e.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if why := bench.CPUQuotaUnavailable(pf); why != "" {
		t.Fatalf("linux platform reports no quota actuator: %s", why)
	}
	js := bm.Jobs[1] // compute: a busy loop
	if err := pf.Start(js, []int{0}); err != nil {
		t.Fatal(err)
	}
	j, _ := pf.get(js.ID)
	dir := j.cg.Dir("cpu")
	if j.cg.Version == 2 {
		t.Skip("cgroup v2 host: cpu.max is covered by the process runtime test")
	}
	if q := readCgroupInt(t, dir, "cpu.cfs_quota_us"); q != -1 {
		t.Fatalf("a fresh container has quota %d, want -1", q)
	}
	free := cpuRate(t, pf, js.ID, 1500*time.Millisecond)
	if err := pf.SetQuota(js.ID, 0.2); err != nil {
		t.Fatal(err)
	}
	if q, p := readCgroupInt(t, dir, "cpu.cfs_quota_us"), readCgroupInt(t, dir, "cpu.cfs_period_us"); q != 20000 || p != 100000 {
		t.Fatalf("cgroup quota %d per %d µs, want 20000 per 100000", q, p)
	}
	limited := cpuRate(t, pf, js.ID, 1500*time.Millisecond)
	b, _ := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	t.Logf("busy container: %.3f cores free, %.3f cores at quota 0.2; cpu.stat %q", free, limited, b)
	if limited > 0.35 || limited >= free {
		t.Errorf("CPU rate %.3f cores under a 0.2 quota (free: %.3f): the limit did not bite", limited, free)
	}
	if !strings.Contains(string(b), "nr_throttled") || strings.Contains(string(b), "nr_throttled 0\n") {
		t.Errorf("the kernel never throttled the container: %q", b)
	}
	if err := pf.SetQuota(js.ID, 1); err != nil {
		t.Fatal(err)
	}
	if q := readCgroupInt(t, dir, "cpu.cfs_quota_us"); q != -1 {
		t.Errorf("quota 1 left cfs_quota_us %d, want -1 (no limit)", q)
	}
	for _, bad := range []float64{0, -0.5, 1.5} {
		if err := pf.SetQuota(js.ID, bad); err == nil {
			t.Errorf("quota %v accepted", bad)
		}
	}
}
