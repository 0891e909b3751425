package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"colo/predict"
)

// colo predict profile --repeat N on the simulator: every dial measured N times with its
// own noise seed; the curve file keeps the mean as perf plus sd and the 95 % CI, and still
// loads (perf by name, said as the measurement column).
func TestPredictProfileRepeat(t *testing.T) {
	dir := t.TempDir()
	out, err := runColo(t, "predict", "profile", "--runtime", "sim", "--data", dir, "--dials", "0:32:8", "--app", "n6=neighbor:6M:1g", "--repeat", "4", "--no-score")
	if err != nil || !strings.Contains(out, "n6: sensitivity curve (5 dials × 4 repeats)") || !strings.Contains(out, "mean [95 % CI]") {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sensitivity", "n6_data.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "footprint_mb perf sd ci95_lo ci95_hi n" || len(lines) != 6 {
		t.Fatalf("%s", b)
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		v := make([]float64, 5)
		for i := range v {
			v[i], _ = strconv.ParseFloat(f[i+1], 64)
		}
		if f[5] != "4" || v[1] <= 0 || !(v[2] < v[0] && v[0] < v[3]) {
			t.Errorf("row %q: want n 4, sd > 0, lo < mean < hi", l)
		}
	}
	d, err := predict.LoadDir(os.DirFS(dir), ".", dir)
	if err != nil {
		t.Fatal(err)
	}
	if c := d.Curves["n6"]; len(c.Dials) != 5 || !strings.HasPrefix(d.Columns[filepath.Join(dir, "sensitivity", "n6_data.csv")], "perf (column 2") {
		t.Fatalf("curve %+v, columns %v", c, d.Columns)
	}
	// The same seeds give the same file.
	dir2 := t.TempDir()
	if _, err := runColo(t, "predict", "profile", "--runtime", "sim", "--data", dir2, "--dials", "0:32:8", "--app", "n6=neighbor:6M:1g", "--repeat", "4", "--no-score"); err != nil {
		t.Fatal(err)
	}
	if b2, _ := os.ReadFile(filepath.Join(dir2, "sensitivity", "n6_data.csv")); string(b2) != string(b) {
		t.Fatal("same seeds, different curve file")
	}
}
