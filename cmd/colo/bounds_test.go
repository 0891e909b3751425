package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/bench"
	"colo/data"
)

// exitOf runs colo in process and returns the exit code main would give and what it
// would print on stderr.
func exitOf(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, msg bytes.Buffer
	err := execColo(&out, &out, args...)
	code := exitStatus(err, nil, &msg)
	return code, msg.String()
}

// writeBench writes a benchmark file and returns its path.
func writeBench(t *testing.T, y string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "b.yaml")
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const boundedStatic = `benchmark:
  name: bounds
  max_t: %MAXT%
  scheduler:
    implementation: least-loaded
containers:
  a:
    workload: "neighbor:6M"
    %FIELD%
    length: 10
`

func static(maxT, field string) string {
	return strings.NewReplacer("%MAXT%", maxT, "%FIELD%", field).Replace(boundedStatic)
}

const boundedPool = `benchmark:
  name: bounds-pool
  max_t: %MAXT%
  scheduler:
    implementation: least-loaded
arrival:
  seed: 1
  mean: %MEAN%
  sigma: 0
  length: {mean: 10, sigma: 0, min: 1}
workloads:
  jobs:
    - name: n
      workload: "neighbor:6M"
      num_cores: "%CORES%"
`

func pool(maxT, mean, cores string) string {
	return strings.NewReplacer("%MAXT%", maxT, "%MEAN%", mean, "%CORES%", cores).Replace(boundedPool)
}

// Issue #13: every unbounded input of the report is exit 2 with a message naming the
// field (and the file:line where there is a file), and returns (a hang or an
// out-of-memory here fails the test by its timeout).
func TestBoundedInputs(t *testing.T) {
	// a Bubble-Up data set whose reporter curve has absurd dials
	bad := t.TempDir()
	if err := os.CopyFS(bad, mustSub(t, data.BubbleUp)); err != nil {
		t.Fatal(err)
	}
	os.Chmod(bad, 0o755)
	if err := os.WriteFile(filepath.Join(bad, "reporter_sensitivity.csv"), []byte("dial avg\n0 100\n2e-30 101\n3e-300 102\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// a read-only data directory (root writes into it unless colo checks)
	ro := t.TempDir()
	if err := os.CopyFS(ro, mustSub(t, data.BubbleUp)); err != nil {
		t.Fatal(err)
	}
	os.Chmod(ro, 0o555)
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	existing := filepath.Join(t.TempDir(), "mine.html")
	os.WriteFile(existing, []byte("my notes"), 0o644)
	ok := writeBench(t, static("20", ""))

	for _, c := range []struct {
		name  string
		args  []string
		field string // the message must name it
		line  bool   // and carry FILE:LINE
	}{
		{"core range", []string{"run", "--no-store", writeBench(t, static("20", `core: "0-9999999999"`))}, "core", true},
		{"num_cores range", []string{"run", "--no-store", writeBench(t, pool("20", "1", "1-9223372036854775807"))}, "num_cores", true},
		{"max_t overflow", []string{"run", "--no-store", writeBench(t, static("1e10", ""))}, "max_t", true},
		{"arrival mean", []string{"run", "--no-store", writeBench(t, pool("3600", "0.000001", "1"))}, "mean", true},
		{"reporter dials", []string{"predict", "validate", "--data", bad}, "dial", true},
		{"neighbour size", []string{"probe", "sensitivity", "--target", "neighbor:8589934592G"}, "size", false},
		{"static-cat baseline", []string{"run", "--no-store", writeBench(t, strings.Replace(static("20", ""),
			"implementation: least-loaded", "implementation: static-cat\n    options:\n      baselines:\n        a: 40", 1))}, "baselines.a", false},
		{"empty --compare name", []string{"run", "--no-store", ok, "--compare", "least-loaded,,,"}, "--compare", false},
		{"--write into a read-only dir", []string{"predict", "predict", "--data", ro, "--write"}, "read-only", false},
		{"report -o existing file", []string{"report", filepath.Dir(existing), "-o", existing}, "exists", false},
		{"--out with --no-store", []string{"run", ok, "--out", t.TempDir(), "--no-store"}, "--no-store", false},
		{"run without a file", []string{"run"}, "arg", false},
		{"unknown command", []string{"no-such-command"}, "unknown command", false},
		{"unknown flag", []string{"run", ok, "--no-such-flag"}, "no-such-flag", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, msg := exitOf(t, c.args...)
			t.Log(strings.TrimSpace(msg))
			if code != 2 {
				t.Fatalf("exit %d, want 2; message %q", code, msg)
			}
			if !strings.Contains(msg, c.field) {
				t.Errorf("message %q does not name %q", msg, c.field)
			}
			if c.line && !strings.Contains(msg, ":") {
				t.Errorf("message %q has no file:line", msg)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "my notes" {
		t.Error("report -o overwrote an existing file")
	}
	if _, err := os.Stat(filepath.Join(ro, "predictions.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("--write wrote into the read-only directory")
	}
}

func mustSub(t *testing.T, dir string) fs.FS {
	t.Helper()
	f, err := fs.Sub(data.FS, dir)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// failStart is a platform whose containers never start (a missing image, a bad command).
type failStart struct{ *testsim }

func (failStart) Start(bench.JobSpec, []int) error {
	return errors.New("container exited at once (exit code 127)")
}

func init() {
	bench.RegisterPlatform("test-failstart", func(bm *bench.Benchmark) (bench.Platform, error) {
		p, err := bench.NewPlatform(&bench.Benchmark{Platform: "testsim", Machine: bm.Machine, Seed: bm.Seed})
		if err != nil {
			return nil, err
		}
		return failStart{p.(*testsim)}, nil
	})
}

// A run whose jobs cannot start is a runtime failure (exit 1), and its summary says "-"
// rather than NaN.
func TestFailedStartExitsOne(t *testing.T) {
	var out bytes.Buffer
	err := execColo(&out, &out, "run", "--no-store", "--platform", "test-failstart", writeBench(t, static("20", "")))
	var msg bytes.Buffer
	if code := exitStatus(err, nil, &msg); code != 1 {
		t.Fatalf("exit %d, want 1: %s\n%s", code, msg.String(), out.String())
	}
	if !strings.Contains(msg.String(), "could not be started") || strings.Contains(out.String(), "NaN") {
		t.Fatalf("message %q, output:\n%s", msg.String(), out.String())
	}
}
