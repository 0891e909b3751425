package main

import (
	"os"
	"strings"
	"testing"

	"colo/bench"
)

// The README's first command says what its first run costs on a fresh clone (module
// downloads and the compile, not "a few seconds") and explains the numbers its table
// prints in the words of the legend the table itself ends with (bench.TableLegend).
func TestReadmeFirstCommandExplainsItsNumbers(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ")
	if !strings.Contains(readme, "go run ./cmd/colo run examples/thesis/high-utilization.yaml --compare least-loaded,dynamic") {
		t.Fatal("the README's first command changed; update this test")
	}
	for _, want := range []string{"first `go run`", "compiles", "minutes"} {
		if !strings.Contains(readme, want) {
			t.Errorf("the README does not say what the first run costs (%q)", want)
		}
	}
	for _, term := range []string{"IPC efficiency", "share of cycles not stalled", "higher is better", "at or above", "killed at max_t"} {
		if !strings.Contains(readme, term) {
			t.Errorf("the README does not explain %q", term)
		}
		if !strings.Contains(bench.TableLegend, term) {
			t.Errorf("the table's legend does not say %q", term)
		}
	}
}
