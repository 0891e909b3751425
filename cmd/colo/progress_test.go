package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/internal/progress"
	"colo/platform/linux"
	"colo/workload/docker"
	"colo/workload/docker/dockertest"

	"github.com/creack/pty"
)

// runTerminal runs a colo command line in process with stderr on a pseudo-terminal and
// returns stdout and everything the terminal received.
func runTerminal(t *testing.T, args ...string) (stdout, term string) {
	t.Helper()
	t.Setenv("TERM", "xterm")
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("pty.Open: %v", err)
	}
	defer ptmx.Close()
	var (
		buf  bytes.Buffer
		done = make(chan struct{})
	)
	go func() { defer close(done); _, _ = io.Copy(&buf, ptmx) }()
	var out bytes.Buffer
	err = execColo(&out, tty, args...)
	tty.Close() // the reader sees EOF once it drained the terminal
	<-done
	if err != nil {
		t.Fatalf("colo %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), buf.String())
	}
	return out.String(), buf.String()
}

// runPiped runs the same command line with stdout and stderr on pipes, as in a script.
func runPiped(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	pipe := func() (*os.File, func() string) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var (
			b    bytes.Buffer
			done = make(chan struct{})
		)
		go func() { defer close(done); _, _ = io.Copy(&b, r) }()
		return w, func() string { w.Close(); <-done; r.Close(); return b.String() }
	}
	ow, oread := pipe()
	ew, eread := pipe()
	err := execColo(ow, ew, args...)
	stdout, stderr = oread(), eread()
	if err != nil {
		t.Fatalf("colo %s (piped): %v\n%s%s", strings.Join(args, " "), err, stdout, stderr)
	}
	return stdout, stderr
}

// checkProgress is the must-show of issue 17 for one long command: on a terminal it draws
// a bar (label, percentage, count, time elapsed:left) and erases it; piped, neither stream
// holds a control character.
func checkProgress(t *testing.T, label string, args ...string) {
	t.Helper()
	old := progress.SetThrottle(0) // every update is drawn: the test sees each state without waiting
	defer progress.SetThrottle(old)
	_, term := runTerminal(t, args...)
	for _, want := range []string{label, "% |", "\r"} {
		if !strings.Contains(term, want) {
			t.Errorf("colo %s on a terminal: no %q in what it drew:\n%q", strings.Join(args, " "), want, term[:min(len(term), 600)])
		}
	}
	if !strings.Contains(term, "s:") || !strings.Contains(term, "s]") {
		t.Errorf("colo %s on a terminal: no [elapsed:left] time:\n%q", strings.Join(args, " "), term)
	}
	stdout, stderr := runPiped(t, args...)
	for name, s := range map[string]string{"stdout": stdout, "stderr": stderr} {
		if i := strings.IndexAny(s, "\r\x1b\b"); i >= 0 {
			t.Errorf("colo %s piped: control character in %s at %d: %q", strings.Join(args, " "), name, i, s[max(0, i-40):min(len(s), i+40)])
		}
	}
	if strings.Contains(stderr, "% |") {
		t.Errorf("colo %s piped: a progress bar on stderr: %q", strings.Join(args, " "), stderr)
	}
}

func TestProgressRunSim(t *testing.T) {
	checkProgress(t, "least-loaded", "run", "../../examples/thesis/low-demand.yaml", "--no-store", "--scheduler", "least-loaded")
}

func TestProgressCompare(t *testing.T) {
	checkProgress(t, "compare: dcat", "compare", "../../examples/dcat/fig15-mlr-mload.yaml", "--schedulers", "shared,dcat", "--no-store")
}

func TestProgressPredictProfile(t *testing.T) {
	checkProgress(t, "predict profile: cpu", "predict", "profile", "--runtime", "sim", "--data", t.TempDir(), "--dials", "0:64:16",
		"--app", "cpu=cpu", "--app", "mload=mload:60M")
}

// The interval lines are plain text, piped or not, one per interval and scheduler.
func TestRunInterval(t *testing.T) {
	stdout, stderr := runPiped(t, "run", "../../examples/thesis/low-demand.yaml", "--no-store", "--compare", "least-loaded,dynamic", "--interval", "5m", "--json")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	per := map[string]int{}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 1 && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "colo:") {
			per[f[1]]++
		}
	}
	// low-demand runs 3600 s of virtual time: 12 intervals of 5 min per scheduler.
	if per["least-loaded"] != 12 || per["dynamic"] != 12 || !strings.HasPrefix(lines[0], "#") {
		t.Errorf("--interval 5m: %v lines per scheduler, want 12 each after a header:\n%s", per, stderr)
	}
	if !strings.HasPrefix(strings.TrimSpace(stdout), "{") {
		t.Errorf("--json stdout is not the JSON report: %.200q", stdout)
	}
}

// The Linux commands drive real containers (Docker, the colo image, built once for both):
// a run without RDT and a sensitivity probe.
func TestProgressLinux(t *testing.T) {
	r := dockertest.Require(t, docker.Options{})
	image := dockertest.ColoImage(t, r)
	t.Run("run", func(t *testing.T) {
		old := linux.Defaults
		linux.Defaults.Image, linux.Defaults.StateDir, linux.Defaults.ResctrlRoot = image, t.TempDir(), "none"
		t.Cleanup(func() { linux.Defaults = old })
		yml := filepath.Join(t.TempDir(), "short.yaml")
		b, err := os.ReadFile("../../examples/linux/no-rdt.yaml")
		if err != nil {
			t.Fatal(err)
		}
		short := strings.NewReplacer("max_t: 25", "max_t: 4", "length: 20", "length: 3").Replace(string(b))
		if err := os.WriteFile(yml, []byte(short), 0o644); err != nil {
			t.Fatal(err)
		}
		checkProgress(t, "least-loaded", "run", yml, "--no-store")
	})
	t.Run("probe", func(t *testing.T) {
		checkProgress(t, "probe sensitivity", "probe", "sensitivity", "--platform", "linux", "--image", image,
			"--segment", "500ms", "--warmup", "300ms")
	})
}

func TestProgressPartitionOptimalSearch(t *testing.T) {
	checkProgress(t, "W1 optc-stp", "partition", "--workload", readmeWorkload, "--policy", "optc-stp", "--jobs", "1")
}

func TestProgressThesis(t *testing.T) {
	// the three scenarios cut to 5 minutes of virtual time: the bar is what is tested here
	dir := t.TempDir()
	for _, f := range []string{"low-demand.yaml", "high-utilization.yaml", "exceeding-demand.yaml", "pool.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../examples/thesis", f))
		if err != nil {
			t.Fatal(err)
		}
		short := strings.Replace(string(b), "max_t: 3600", "max_t: 300", 1)
		if err := os.WriteFile(filepath.Join(dir, f), []byte(short), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkProgress(t, "dynamic", "thesis", "--dir", dir)
}
