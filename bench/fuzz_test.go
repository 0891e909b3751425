package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParseBenchmark: a benchmark file never panics or hangs the parser, and whatever it
// accepts is bounded (issue #13): times within int64 ns, at most MaxJobs jobs, each with
// 1..machine cores and CPUs on the machine.
func FuzzParseBenchmark(f *testing.F) {
	for _, dir := range []string{"../examples/thesis", "../examples/linux", "../examples/dcat", "../examples/lfoc", "../examples/vp", "../examples/guard"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("benchmark: {max_t: 1e10}\ncontainers: {a: {workload: x, core: \"0-9999999999\"}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// includes (workloads.input) resolve against the fuzz temp dir: nothing to read
		bm, err := Parse(filepath.Join(t.TempDir(), "f.yaml"), b, func(string) (string, bool) { return "", false })
		if err != nil {
			return
		}
		if bm.MaxT < 0 || len(bm.Jobs) > MaxJobs {
			t.Fatalf("accepted max_t %v with %d jobs", bm.MaxT, len(bm.Jobs))
		}
		for _, j := range bm.Jobs {
			if j.Arrival < 0 || j.Length < 0 || j.Cores < 1 || j.Cores > bm.Machine.Cores() {
				t.Fatalf("accepted job %+v", j)
			}
			for _, c := range j.CPUs {
				if c < 0 || c >= bm.Machine.Cores() {
					t.Fatalf("accepted CPU %d on %s", c, bm.Machine.Name)
				}
			}
		}
		if bm.Sched.Tick < 0 || bm.Data.Frequency < time.Millisecond && bm.Data.Frequency != 0 {
			t.Fatalf("accepted tick %v, frequency %v", bm.Sched.Tick, bm.Data.Frequency)
		}
	})
}
