package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad controller option is bad input at its file line (exit 2), found before the run
// directory is created: nothing is half-written.
func TestBadSchedulerOptionIsFileLine(t *testing.T) {
	b, err := os.ReadFile("../../examples/vp/victim-aggressor-hog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct{ edit, want string }{
		{"      vp.window: 1.5\n", "bad.yaml:22: scheduler vp: vp: scheduler.options.window = 1.5 must be a whole number"},
		{"      vp.windw: 2\n", `bad.yaml:22: scheduler vp: vp: unknown scheduler.options key "windw"`},
	} {
		text := strings.Replace(string(b), "      vp.quota_floor: 0.9\n", "      vp.quota_floor: 0.9\n"+c.edit, 1)
		file := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "run")
		_, err := runColo(t, "run", file, "--out", out)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want bad input %q", c.edit, err, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%q: the run directory was created", c.edit)
		}
	}
}
