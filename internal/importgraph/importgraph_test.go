// Package importgraph holds the test of colo's import graph: the pure core (schedulers,
// policies, the probe and prediction models, metrics, the performance model, mask
// arithmetic) never imports I/O — the simulator, stressors, container runtimes,
// platforms, perf counters, the store or the resctrl client — so that the same decision
// code runs on the simulated twin and on a real host (DESIGN.md: pure core, thin shell).
package importgraph

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// pure are the core packages (a trailing /... takes the subpackages too).
var pure = []string{"colo/sched", "colo/policy/...", "colo/probe", "colo/predict", "colo/metric", "colo/perfmodel", "colo/cbm",
	"colo/resctrl/plan", "colo/perfmetric", "colo/agent/profiling"} // the group planner is pure although it lives under resctrl

// io are the packages the core must not reach, directly or not (with subpackages).
var io = []string{"colo/sim", "colo/stress", "colo/workload", "colo/platform", "colo/perf", "colo/store", "colo/resctrl",
	"colo/bench", "colo/sink", "colo/report", "colo/cmd"}

func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

func TestPureCoreImportsNoIO(t *testing.T) {
	args := append([]string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}, pure...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg, deps := f[0], f[1:]
		seen++
		for _, d := range deps {
			for _, bad := range io {
				if under(d, bad) {
					t.Errorf("%s imports %s (through its dependencies): the pure core must not reach %s", pkg, d, bad)
				}
			}
			if pkg == "colo/cbm" && strings.HasPrefix(d, "colo/") {
				t.Errorf("colo/cbm is a leaf but imports %s", d)
			}
		}
	}
	if seen < len(pure) {
		t.Fatalf("go list listed %d packages for %v", seen, pure)
	}
}

// The platform interface package (colo/platform) is what the run loop, the probes and
// both platforms share: it holds interfaces and plain types, so it reaches no adapter —
// only the machine, the scheduler's types and the pure group planner.
func TestPlatformInterfaceImportsNoAdapter(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "colo/platform").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != "colo/platform" {
		t.Fatalf("go list -deps colo/platform gave %v", deps)
	}
	for _, d := range deps {
		for _, bad := range io {
			if under(d, bad) && d != "colo/resctrl/plan" && d != "colo/platform" {
				t.Errorf("colo/platform reaches %s: the interface package must not import an adapter", d)
			}
		}
	}
}
