package main

import (
	"os"
	"strings"
	"testing"
)

// docs/thesis.md holds the output of `colo thesis` between markers: the test fails when
// the twin (or the thesis figures, or the causes) drift from what the docs say.
func TestThesisTableInDocs(t *testing.T) {
	out, err := runColo(t, "thesis", "--dir", "../../examples/thesis")
	if err != nil {
		t.Fatal(err)
	}
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
