package sim

import (
	"strings"
	"testing"
)

func TestParseWorkload(t *testing.T) {
	for _, tc := range []struct {
		spec, name string
		threads    int
	}{
		{"neighbor:6M:1g", "neighbor-random-6MB-1G", 1},
		{"neighbor:4MB:hugetlb-2m", "neighbor-random-4MB-2M", 1},
		{"neighbor:100M:none:stride", "neighbor-stride-100MB-4K", 1},
		{"7zip:2", "7zip-mx2-mmt2", 2},
		{"matrix-3d:96", "stress-ng-matrix-3d-96", 1},
		{"tsearch:131072", "stress-ng-tsearch-131072", 1},
		{"cpu", "cpu-loop", 1},
		{"lookbusy", "lookbusy", 1},
		{"mlr:8M", "MLR-8MB", 1},
		{"mload:60MB", "MLOAD-60MB", 1},
		{"table:lbm06", "lbm06", 1},
	} {
		w, err := ParseWorkload(tc.spec, tc.threads, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		if got := w.Phases[0].Model.Name(); got != tc.name || w.Threads != tc.threads {
			t.Errorf("%s: model %q threads %d, want %q %d", tc.spec, got, w.Threads, tc.name, tc.threads)
		}
	}
	for _, bad := range []string{"neighbor", "neighbor:6X", "neighbor:6M:3g", "7zip:10", "matrix-3d:x", "table:nosuch06", "foo", "cpu:1"} {
		_, err := ParseWorkload(bad, 1, nil)
		if err == nil {
			t.Errorf("%q accepted", bad)
		} else if !strings.Contains(err.Error(), strings.Split(bad, ":")[0]) && !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: error %q does not name the input", bad, err)
		}
	}
}
