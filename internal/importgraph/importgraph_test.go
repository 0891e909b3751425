// Package importgraph holds the test of colo's import graph: the pure core (schedulers,
// policies, the probe and prediction models, metrics, the performance model, mask
// arithmetic, the group planner, the agent's decision core) never imports I/O — the
// simulator, stressors, workload runtimes, platforms, perf counters, the store, the
// resctrl client, network clients — so that the same decision code runs on the simulated
// twin and on a real host (pure core, thin shell: docs/architecture.md).
package importgraph

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// pure are the core packages. A pattern names one package; a trailing /... takes its
// subpackages too.
var pure = []string{"colo/sched", "colo/policy/...", "colo/probe", "colo/predict", "colo/metric", "colo/perfmodel", "colo/cbm",
	"colo/counter", "colo/resctrl/plan", "colo/resctrl/alloc", // the group planner and the allocator are pure although they live under resctrl
	"colo/perfmetric",
	"colo/agent/core", "colo/agent/profiling", // the agent's decision parts are pure although the agent is not
}

// io are the packages the core must not reach, directly or not (same patterns; a pure
// package under one of them is excepted).
var io = []string{"colo/sim/...", "colo/stress/...", "colo/workload/...", "colo/platform/...", "colo/perf/...",
	"colo/store/...", "colo/resctrl", "colo/resctrl/emu", "colo/resctrl/journal", "colo/bench/...", "colo/sink/...",
	"colo/report/...", "colo/cmd/...", "colo/agent/...", "colo/k8s/...",
	"os/exec", "github.com/docker/...", "github.com/containerd/...", "github.com/prometheus/client_golang/...",
	"github.com/hanwen/go-fuse/...", "modernc.org/sqlite/...", "k8s.io/...", "sigs.k8s.io/..."}

// match reports whether pkg is the package pattern names, or one under it when pattern
// ends in /... — whole path elements only: colo/resctrl matches neither colo/resctrl/plan
// nor colo/resctrlx.
func match(pkg, pattern string) bool {
	if root, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == root || strings.HasPrefix(pkg, root+"/")
	}
	return pkg == pattern
}

func matchAny(pkg string, patterns []string) bool {
	for _, p := range patterns {
		if match(pkg, p) {
			return true
		}
	}
	return false
}

// forbidden is the io pattern pkg falls under ("" none); pure packages never are.
func forbidden(pkg string) string {
	if matchAny(pkg, pure) {
		return ""
	}
	for _, bad := range io {
		if match(pkg, bad) {
			return bad
		}
	}
	return ""
}

// list runs go list in dir and returns each listed package with its dependencies; a
// failure reports go's own error output.
func list(t *testing.T, dir string, args ...string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}, args...)...)
	cmd.Dir = dir
	if dir != "" {
		cmd.Env = append(cmd.Environ(), "GOFLAGS=-mod=mod")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	got := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 {
			got[f[0]] = f[1:]
		}
	}
	return got
}

func TestMatchWholeElements(t *testing.T) {
	for _, c := range []struct {
		pkg, pattern string
		want         bool
	}{
		{"colo/resctrl", "colo/resctrl", true},
		{"colo/resctrl/plan", "colo/resctrl", false},
		{"colo/resctrlx", "colo/resctrl", false},
		{"colo/agent", "colo/agent/...", true},
		{"colo/agent/core", "colo/agent/...", true},
		{"colo/agentx", "colo/agent/...", false},
	} {
		if got := match(c.pkg, c.pattern); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pkg, c.pattern, got, c.want)
		}
	}
	if forbidden("colo/agent/core") != "" || forbidden("colo/resctrl/plan") != "" {
		t.Error("a pure package under an I/O tree is forbidden")
	}
	if forbidden("colo/agent/host") == "" || forbidden("colo/resctrl/emu") == "" || forbidden("os/exec") == "" {
		t.Error("an I/O package is allowed")
	}
}

func TestPureCoreImportsNoIO(t *testing.T) {
	got := list(t, "", pure...)
	for pkg, deps := range got {
		for _, d := range deps {
			if bad := forbidden(d); bad != "" {
				t.Errorf("%s imports %s (through its dependencies): the pure core must not reach %s", pkg, d, bad)
			}
			if pkg == "colo/cbm" && strings.HasPrefix(d, "colo/") {
				t.Errorf("colo/cbm is a leaf but imports %s", d)
			}
		}
	}
	for _, p := range pure {
		found := false
		for pkg := range got {
			found = found || match(pkg, p)
		}
		if !found {
			t.Errorf("go list listed no package for %s", p)
		}
	}
}

// The platform interface package (colo/platform) is what the run loop, the probes and
// both platforms share: it holds interfaces and plain types, so it reaches no adapter —
// only the machine, the scheduler's types and the pure group planner.
func TestPlatformInterfaceImportsNoAdapter(t *testing.T) {
	deps, ok := list(t, "", "colo/platform")["colo/platform"]
	if !ok {
		t.Fatal("go list did not list colo/platform")
	}
	for _, d := range deps {
		if bad := forbidden(d); bad != "" {
			t.Errorf("colo/platform reaches %s: the interface package must not import an adapter (%s)", d, bad)
		}
	}
}

// k8s/nodestate is the document a node publishes and the scheduler plugin reads: plain
// data and its checks, no client (it is tested without a cluster).
func TestNodeStateImportsNoIO(t *testing.T) {
	deps, ok := list(t, "../../k8s", "colo/k8s/nodestate")["colo/k8s/nodestate"]
	if !ok {
		t.Fatal("go list did not list colo/k8s/nodestate")
	}
	for _, d := range deps {
		if d == "colo/k8s/nodestate" {
			continue
		}
		if bad := forbidden(d); bad != "" {
			t.Errorf("colo/k8s/nodestate reaches %s (%s)", d, bad)
		}
	}
}
