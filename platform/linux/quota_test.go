package linux

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"colo/platform"
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

// throttledCount reads nr_throttled from a cgroup v1 cpu.stat.
func throttledCount(t *testing.T, dir string) (int64, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "nr_throttled "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n, string(b)
		}
	}
	return 0, string(b)
}

// TestCPUQuotaOnContainer limits a busy container (stress compute, one core) to 20 % of
// its core through platform.QuotaSetter: the CFS quota must be visible in the container's
// cgroup (20 ms per 100 ms) and the kernel must throttle it (nr_throttled grows: waited
// on, not timed). How much CPU time it then gets depends on the host's load and is not
// asserted.
func TestCPUQuotaOnContainer(t *testing.T) {
	e := newEnv(t)
	bm := parseBench(t, smokeYAML)
	pf := newPlatform(t, bm, e.options(nil))
	defer pf.Close()
	if why := platform.CPUQuotaUnavailable(pf); why != "" {
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
	if err := pf.SetQuota(js.ID, 0.2); err != nil {
		t.Fatal(err)
	}
	if q, p := readCgroupInt(t, dir, "cpu.cfs_quota_us"), readCgroupInt(t, dir, "cpu.cfs_period_us"); q != 20000 || p != 100000 {
		t.Fatalf("cgroup quota %d per %d µs, want 20000 per 100000", q, p)
	}
	// Throttling: at 1 ms per 100 ms (the kernel's smallest quota) a busy loop is throttled
	// as soon as it gets 1 % of a CPU, however loaded the host (at 20 % it may never get
	// its quota's worth on a busy 2-CPU machine): wait for that event.
	if err := pf.SetQuota(js.ID, 0.01); err != nil {
		t.Fatal(err)
	}
	if q := readCgroupInt(t, dir, "cpu.cfs_quota_us"); q != 1000 {
		t.Fatalf("cgroup quota %d µs, want 1000", q)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, stat := throttledCount(t, dir)
		if n > 0 {
			t.Logf("throttled: cpu.stat %q", stat)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kernel never throttled the container in 60 s: %q", stat)
		}
		time.Sleep(50 * time.Millisecond)
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
