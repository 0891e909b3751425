package agent_test

import (
	"colo/agent/api"
	"colo/agent/core"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"testing"
)

// Static labels on a real Docker container: `docker run --label colo.io/llc-ways=3
// --label colo.io/mba=50` gets a control group of its own in the FUSE-mounted emulator
// holding 3 contiguous ways exclusive of the policy's priority container and of
// system/default, at MB 50, with the container's threads; stopping it removes the group
// and SIGTERM leaves the emulator as found.
func TestAgentStaticLabelsEndToEnd(t *testing.T) {
	bin, image := colo(t)
	e, root := mountEmulator(t)
	before := comparable(e)
	a := startAgent(t, bin, root, t.TempDir(), "static-cat")
	a.until("first interval", func(st api.Status) bool { return st.Ticks > 0 && st.RuntimeConnected })
	pre := fmt.Sprintf("colotest-agent-%d-static", os.Getpid())
	_, ppid := runContainer(t, image, pre+"-prio", "colo.io/class=priority")
	sid, spid := runContainer(t, image, pre+"-fixed", "colo.io/llc-ways=3", "colo.io/mba=50")
	st := a.until("both allocated", func(st api.Status) bool {
		p, s := byName(st, pre+"-prio"), byName(st, pre+"-fixed")
		return p != nil && s != nil && p.CtrlGroup != "" && s.CtrlGroup != "" && s.Threads > 0
	})
	p, s := byName(st, pre+"-prio"), byName(st, pre+"-fixed")
	if s.State != core.StateStatic || s.Request.Ways != 3 || s.Request.MBA != 50 {
		t.Errorf("static container: state %q, request %+v", s.State, s.Request)
	}
	es := e.State()
	g, ok := es.Group(s.CtrlGroup)
	if !ok {
		t.Fatalf("static control group %q not in the emulator", s.CtrlGroup)
	}
	mask := uint64(g.Schemata["L3"][s.Socket])
	if bits.OnesCount64(mask) != 3 || fmt.Sprintf("%#x", mask) != s.Mask {
		t.Errorf("static group L3 %#x on socket %d: want 3 ways, as the agent says (%s)", mask, s.Socket, s.Mask)
	}
	if mb := g.Schemata["MB"][s.Socket]; mb != 50 {
		t.Errorf("static group MB %d on socket %d, want 50", mb, s.Socket)
	}
	if !contains(g.Tasks, spid) {
		t.Errorf("static group tasks %v lack the container's pid %d", g.Tasks, spid)
	}
	pg, _ := es.Group(p.CtrlGroup)
	if p.Socket == s.Socket && uint64(pg.Schemata["L3"][p.Socket])&mask != 0 {
		t.Errorf("priority group %#x and static group %#x share ways", pg.Schemata["L3"][p.Socket], mask)
	}
	if !contains(pg.Tasks, ppid) {
		t.Errorf("priority group tasks %v lack pid %d", pg.Tasks, ppid)
	}
	def, _ := es.Group("")
	if uint64(def.Schemata["L3"][s.Socket])&mask != 0 {
		t.Errorf("system/default %#x keeps the static ways %#x", def.Schemata["L3"][s.Socket], mask)
	}
	if out, err := exec.Command("docker", "rm", "-f", sid).CombinedOutput(); err != nil {
		t.Fatalf("docker stop: %v %s", err, out)
	}
	a.until("static container released", func(st api.Status) bool { return byName(st, pre+"-fixed") == nil })
	if _, ok := e.State().Group(s.CtrlGroup); ok && s.CtrlGroup != p.CtrlGroup {
		t.Errorf("static control group %q still exists after the container stopped", s.CtrlGroup)
	}
	a.term()
	if after := comparable(e); !equalState(before, after) {
		t.Errorf("emulator changed after SIGTERM:\nbefore %+v\nafter  %+v", before, after)
	}
}
