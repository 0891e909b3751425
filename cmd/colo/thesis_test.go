package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/thesis.md holds the output of `colo thesis` between markers: the test fails when
// the twin (or the thesis figures, or the causes) drift from what the docs say.
func TestThesisTableInDocs(t *testing.T) {
	out := mustRunColo(t, "thesis", "--dir", "../../examples/thesis")
	doc, err := os.ReadFile("../../docs/thesis.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- colo thesis: begin -->\n", "<!-- colo thesis: end -->"
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatal("docs/thesis.md: markers missing")
	}
	if got := s[i+len(begin) : j]; got != out {
		t.Errorf("docs/thesis.md is not the output of `colo thesis`; regenerate it.\n--- docs\n%s\n--- colo thesis\n%s", got, out)
	}
	// The rows the issue asks for: every scenario, thesis and colo side by side.
	for _, want := range []string{"| Low Demand (10 %) | priority IPCE gain | +42.0 pp |", "| High Utilization (20 %) | global IPCE gain, core-weighted | +4.3 pp |", "| Exceeding Demand (50 %) | batch IPCE change | -0.9 pp |"} {
		if !strings.Contains(out, want) {
			t.Errorf("row %q missing", want)
		}
	}
}

// colo thesis --repeat gives the gains as intervals over seeds, the same bytes twice.
func TestThesisRepeat(t *testing.T) {
	dir := t.TempDir() // the three scenarios cut to 5 minutes
	for _, f := range []string{"low-demand.yaml", "high-utilization.yaml", "exceeding-demand.yaml", "pool.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../examples/thesis", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), []byte(strings.Replace(string(b), "max_t: 3600", "max_t: 300", 1)), 0o644)
	}
	a, err := runColo(t, "thesis", "--dir", dir, "--repeat", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Metric string   `json:"metric"`
		Thesis *float64 `json:"thesis"`
		Mean   float64  `json:"colo_mean"`
		N      int      `json:"n"`
	}
	if err := json.Unmarshal([]byte(a), &rows); err != nil {
		t.Fatalf("%v\n%s", err, a)
	}
	if len(rows) != 9 || rows[0].Metric != "priority IPCE gain" || rows[0].N != 2 || rows[2].Thesis != nil {
		t.Fatalf("%s", a)
	}
}
