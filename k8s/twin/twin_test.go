package twin

import (
	"fmt"
	"math"
	"testing"
)

// run places pods on one node (socket, app) and steps until every pod is done.
func run(t *testing.T, pods []Pod, sockets []int) map[string]*Running {
	t.Helper()
	c, err := NewCluster([]string{"n0"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pods {
		if _, err := c.Place(p, "n0", sockets[i]); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]*Running{}
	for c.Running() > 0 {
		for _, r := range c.Step() {
			out[r.Name] = r
		}
	}
	return out
}

// Alone on a node, a pod runs at its solo rate: its slowdown is 1 within the counters'
// 1 % noise and the first tick's cold cache.
func TestAloneRunsAtSoloRate(t *testing.T) {
	for _, app := range []string{"povray06", "lbm06", "mcf06", "phased-mcf06-povray06"} {
		r := run(t, []Pod{{Name: "a", App: app, Class: "batch", Work: 60}}, []int{0})["a"]
		if s := r.Slowdown(); math.Abs(s-1) > 0.03 {
			t.Errorf("%s alone: slowdown %.4f, want 1 ± 0.03", app, s)
		}
	}
}

// Interference is per socket: seven memory-bound neighbours slow a cache-sensitive pod on
// their socket, not on the other socket, and a compute-bound pod far less.
func TestInterferenceIsPerSocket(t *testing.T) {
	var pods []Pod
	var socks []int
	for i := range 7 {
		pods, socks = append(pods, Pod{Name: fmt.Sprintf("lbm%d", i), App: "lbm06", Work: 200}), append(socks, 0)
	}
	pods = append(pods, Pod{Name: "same", App: "mcf06", Work: 60}, Pod{Name: "other", App: "mcf06", Work: 60})
	socks = append(socks, 0, 1)
	out := run(t, pods, socks)
	same, other := out["same"].Slowdown(), out["other"].Slowdown()
	t.Logf("mcf06 slowdown next to 7 lbm06: %.3f; on the other socket %.3f", same, other)
	if !(same > 1.3) || math.Abs(other-1) > 0.05 {
		t.Fatalf("mcf06 next to 7 lbm06: slowdown %.3f (want > 1.3); on the other socket %.3f (want ≈ 1)", same, other)
	}
	pods[7] = Pod{Name: "cpu", App: "povray06", Work: 60} // in place of mcf06 on socket 0
	if s := run(t, pods, socks)["cpu"].Slowdown(); !(s < 1+(same-1)/3) {
		t.Fatalf("povray06 next to 7 lbm06: slowdown %.3f, want well below mcf06's %.3f", s, same)
	}
}

// The twin's Bubble-Up profiles order the apps as their per-way tables do: a streaming,
// cache-hungry app is more contentious than a compute-bound one, and a cache-sensitive app
// is more sensitive.
func TestLibraryOrdersApps(t *testing.T) {
	lib, err := Library()
	if err != nil {
		t.Fatal(err)
	}
	_, names, _ := Apps()
	if len(lib.Profiles) != len(names) || len(names) != 58 {
		t.Fatalf("%d profiles for %d apps, want 58", len(lib.Profiles), len(names))
	}
	last := len(lib.Dials) - 1
	for _, n := range []string{"povray06", "lbm06", "mcf06", "omnetpp06", "gamess06", "phased-mcf06-povray06"} {
		p := lib.Profiles[n]
		t.Logf("%-22s score %6.1f MB  slowdown at %v MB %.3f", n, p.ScoreMB, lib.Dials[last], p.Slowdown[last])
	}
	if !(lib.Profiles["lbm06"].ScoreMB > 2*lib.Profiles["povray06"].ScoreMB) {
		t.Errorf("lbm06 score %.1f not above povray06's %.1f", lib.Profiles["lbm06"].ScoreMB, lib.Profiles["povray06"].ScoreMB)
	}
	if !(lib.Profiles["mcf06"].Slowdown[last] > lib.Profiles["povray06"].Slowdown[last]+0.2) {
		t.Errorf("mcf06 not more sensitive than povray06: %v vs %v", lib.Profiles["mcf06"].Slowdown, lib.Profiles["povray06"].Slowdown)
	}
}
