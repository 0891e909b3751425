package main

import (
	"path/filepath"
	"testing"

	"colo/bench"
)

// Every scenario under examples/dcat, examples/vp and examples/lfoc parses and validates.
func TestControllerExamplesParse(t *testing.T) {
	var files []string
	for _, d := range []string{"dcat", "vp", "lfoc"} {
		m, err := filepath.Glob(filepath.Join("..", "..", "examples", d, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 6 {
		t.Fatalf("only %d example files", len(files))
	}
	for _, f := range files {
		if _, err := bench.Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
