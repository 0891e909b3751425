package main

import (
	"math"
	"strings"
	"testing"
)

// An archive in another published shape (no headers, three value columns) validates end
// to end with the same keys, and the output says which column was the measurement.
func TestPredictValidateOtherArchiveShape(t *testing.T) {
	dir := "../../predict/testdata/shapes/noheader"
	out := mustRunColo(t, "predict", "validate", "--json", "--data", dir)
	v := jsonObject(t, out)
	for _, k := range []string{"n", "median", "p90", "p95", "p99", "mean_abs", "mean", "min", "max", "scores", "convention", "method", "with_diagonal_zeros", "thesis_expected", "methods", "measurement_columns"} {
		if _, ok := v[k]; !ok {
			t.Errorf("key %q missing", k)
		}
	}
	// predict/shapes_test.go works these by hand: ε = {0, +5} pp.
	near := func(got any, want float64) bool { f, ok := got.(float64); return ok && math.Abs(f-want) <= 1e-9 }
	if v["n"] != 2.0 || !near(v["median"], 2.5) || !near(v["p90"], 4.5) || !near(v["max"], 5) || !near(v["min"], 0) {
		t.Errorf("statistics: %s", out)
	}
	if mc := v["measurement_columns"].(map[string]any); len(mc) != 2 || !strings.HasPrefix(mc[dir+"/reporter_sensitivity.csv"].(string), "column 2 of 4") {
		t.Errorf("measurement_columns: %v", mc)
	}
	text, err := runColo(t, "predict", "validate", "--data", dir)
	if err != nil || !strings.Contains(text, "measurement: "+dir+"/contentiousness.csv: column 2 of 4") {
		t.Fatalf("%v\n%s", err, text)
	}
}
