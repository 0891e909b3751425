package agent_test

import (
	"fmt"
	"math/bits"
	"os"
	"testing"

	"colo/agent/api"
	"colo/internal/emutest"
	"colo/resctrl/emu"
)

// TestProfileMatrixAgent is the agent column of issue #32's profile matrix (cmd/colo's
// TestProfileMatrix holds the colo run and cleanup columns): on every built-in emulator
// profile, `colo agent --policy static-cat` on real Docker gives a priority container
// and a container labelled colo.io/llc-ways=3 groups of their own, the static one
// holding 3 ways at the mount's domain id, disjoint from the priority group; SIGTERM
// leaves the emulator as found. Four profiles at a time.
func TestProfileMatrixAgent(t *testing.T) {
	bin, image := colo(t)
	sem := make(chan struct{}, 4)
	for _, name := range emu.ProfileNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			e, root := emutest.MountNamed(t, name, emu.Options{PIDExists: emutest.ProcExists})
			before := comparable(e)
			// each profile's agent manages only its own two containers: the four agents
			// share one dockerd, and an agent taking the others' containers as well runs
			// out of the small profiles' CLOSIDs and RMIDs before its own arrive
			only := "colo.test.matrix=" + name
			a := startAgentArgs(t, bin, "--runtime", "docker", "--policy", "static-cat", "--resctrl-root", root,
				"--state-dir", t.TempDir(), "--select", only)
			a.until("first interval", func(st api.Status) bool { return st.Ticks > 0 && st.RuntimeConnected })
			pre := fmt.Sprintf("colotest-matrix-%d-%s", os.Getpid(), name)
			_, ppid := runContainer(t, image, pre+"-prio", "colo.io/class=priority", only)
			_, spid := runContainer(t, image, pre+"-fixed", "colo.io/llc-ways=3", only)
			st := a.until("both allocated", func(st api.Status) bool {
				p, s := byName(st, pre+"-prio"), byName(st, pre+"-fixed")
				return p != nil && s != nil && p.CtrlGroup != "" && s.CtrlGroup != "" && s.Threads > 0
			})
			p, s := byName(st, pre+"-prio"), byName(st, pre+"-fixed")
			es := e.State()
			g, ok := es.Group(s.CtrlGroup)
			if !ok {
				t.Fatalf("static group %q not in the emulator", s.CtrlGroup)
			}
			res := "L3"
			if _, cdp := g.Schemata["L3CODE"]; cdp {
				res = "L3CODE"
			}
			mask := uint64(g.Schemata[res][s.Socket])
			if bits.OnesCount64(mask) != 3 || fmt.Sprintf("%#x", mask) != s.Mask {
				t.Errorf("static group %s %#x (domain id %d): want 3 ways, as the agent says (%s)", res, mask, e.Profile().L3IDs()[s.Socket], s.Mask)
			}
			if !contains(g.Tasks, spid) {
				t.Errorf("static group tasks %v lack pid %d", g.Tasks, spid)
			}
			pg, _ := es.Group(p.CtrlGroup)
			if p.Socket == s.Socket && uint64(pg.Schemata[res][p.Socket])&mask != 0 {
				t.Errorf("priority group %#x and static group %#x share ways", pg.Schemata[res][p.Socket], mask)
			}
			if !contains(pg.Tasks, ppid) {
				t.Errorf("priority group tasks %v lack pid %d", pg.Tasks, ppid)
			}
			a.term()
			if after := comparable(e); !equalState(before, after) {
				t.Errorf("%s: emulator changed after SIGTERM:\nbefore %+v\nafter  %+v", name, before, after)
			}
		})
	}
}
