package bench_test

import (
	"path/filepath"
	"testing"

	"colo/bench"
	_ "colo/platform/sim"
)

// Issue #13 item 7: the static-trace examples complete every job that ends by max_t (a
// job ending exactly at max_t is completed, not killed).
func TestExamplesCompleteTheirJobs(t *testing.T) {
	var files []string
	for _, dir := range []string{"dcat", "lfoc", "vp"} {
		m, _ := filepath.Glob(filepath.Join("../examples", dir, "*.yaml"))
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d examples", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			bm, err := bench.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := bench.RunAll(bm, nil, bench.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, res := range rep.Results {
				for _, j := range res.Jobs {
					spec := bm.Jobs[j.ID]
					end := spec.StopAt
					if spec.Length > 0 {
						end = spec.Arrival + spec.Length
					}
					if end > 0 && (bm.MaxT == 0 || end <= bm.MaxT) && j.State != bench.StateCompleted {
						t.Errorf("job %s (ends at %v, max_t %v): %s %s", j.Name, end, bm.MaxT, j.State, j.Reason)
					}
				}
			}
		})
	}
}
