package core

import (
	"fmt"
	"math/bits"
	"strings"
	"testing"
	"time"

	"colo/machine"
	_ "colo/policy/dcat"
	"colo/sched"
)

func newCore(t *testing.T, policy string) (*Core, *machine.Profile) {
	t.Helper()
	s, m := testPolicy(t, policy)
	return New(m, s), m
}

func TestCoreStaticCatAllocatesAndReleases(t *testing.T) {
	c, m := newCore(t, "static-cat")
	c.Add(Container{ID: "p", Name: "prio", Labels: map[string]string{LabelClass: "priority"}}, 0)
	c.Add(Container{ID: "b", Name: "batch"}, 0)
	var p Plan
	for i := 1; i <= 3; i++ {
		p = c.Tick(time.Duration(i) * time.Second)
	}
	tp, ok := p.Targets["p"]
	if !ok || tp.Mask == 0 {
		t.Fatalf("priority container not allocated: %+v (log %v)", p.Targets, p.Log)
	}
	def := p.Default[tp.Socket]
	if def&tp.Mask != 0 {
		t.Fatalf("system/default %#x overlaps the priority mask %#x", def, tp.Mask)
	}
	if c.Member("b").Req.Class != Batch || c.Member("p").Req.Class != Priority {
		t.Fatal("classes not parsed")
	}
	for id, tg := range p.Targets {
		if tg.Mask == 0 || tg.Mask&p.Default[tg.Socket] != 0 {
			t.Errorf("%s: mask %#x empty or shared with system/default %#x", id, tg.Mask, p.Default[tg.Socket])
		}
		for id2, tg2 := range p.Targets {
			if id < id2 && tg.Socket == tg2.Socket && tg.Mask&tg2.Mask != 0 {
				t.Errorf("%s and %s share ways: %#x %#x", id, id2, tg.Mask, tg2.Mask)
			}
		}
	}
	if st := c.Stats(); st.Decisions["place"] != 2 || st.Decisions["allocate"] < 2 {
		t.Errorf("decisions %v", st.Decisions)
	}
	c.Remove("p")
	p = c.Tick(4 * time.Second)
	if _, ok := p.Targets["p"]; ok || len(p.Targets) != 1 {
		t.Fatalf("removed container still targeted: %v", p.Targets)
	}
	if bits.OnesCount64(m.FullMask()) != m.LLC.Ways {
		t.Fatal("machine mask")
	}
	// the last container on socket 1 leaves: system/default gets every way back there
	c.Remove("b")
	p = c.Tick(5 * time.Second)
	for s := 0; s < m.Sockets; s++ {
		if p.Default[s] != m.FullMask() {
			t.Errorf("socket %d without containers: system/default %#x, want every way %#x", s, p.Default[s], m.FullMask())
		}
	}
}

// Without IPCE the dynamic scheduler neither probes nor allocates (sched.Dynamic): the
// agent keeps every container in system/default and says why.
func TestCoreDynamicWithoutIPCEKeepsDefault(t *testing.T) {
	c, m := newCore(t, "dynamic")
	c.Add(Container{ID: "p", Name: "prio", Labels: map[string]string{LabelClass: "priority", LabelTargetIPCE: "0.8"}}, 0)
	var log []string
	for i := 1; i <= 5; i++ {
		p := c.Tick(time.Duration(i) * time.Second)
		log = append(log, p.Log...)
		if tg := p.Targets["p"]; tg.Mask != 0 || p.Default[tg.Socket] != m.FullMask() {
			t.Fatalf("tick %d: %+v default %#x", i, tg, p.Default[tg.Socket])
		}
	}
	if c.Member("p").State != StateRunning || len(log) == 0 {
		t.Errorf("state %s, log %v", c.Member("p").State, log)
	}
}

func TestParseRequest(t *testing.T) {
	m, _ := machine.Get("icx-4314-2s")
	r, errs := ParseRequest(map[string]string{LabelClass: "gold", LabelTargetIPCE: "0.9", LabelLLCWays: "99", LabelMBA: "50"}, m)
	if r.Class != Batch || r.TargetIPCE != 0.9 || r.Ways != 0 || r.MBA != 50 {
		t.Errorf("request %+v", r)
	}
	if len(errs) != 2 || errs[0].Label != LabelClass || errs[1].Label != LabelLLCWays {
		t.Errorf("errors %v", errs)
	}
	r, errs = ParseRequest(nil, m)
	if r.Class != Batch || len(errs) != 0 {
		t.Errorf("unlabelled: %+v %v", r, errs)
	}
}

// A static request (colo.io/llc-ways, colo.io/mba) is allocated as asked by the
// accountant, outside the policy: its ways are exclusive of the policy's containers and
// of system/default, the policy is told they are taken, an MBA-only request throttles
// in system/default's ways, one that does not fit waits, and leaving gives the ways back.
func TestCoreStaticRequests(t *testing.T) {
	c, m := newCore(t, "static-cat")
	c.Add(Container{ID: "p", Name: "prio", Labels: map[string]string{LabelClass: "priority"}}, 0)
	c.Add(Container{ID: "s", Name: "static", Labels: map[string]string{LabelLLCWays: "3", LabelMBA: "50"}}, 0)
	c.Add(Container{ID: "t", Name: "throttled", Labels: map[string]string{LabelMBA: "30"}}, 0)
	c.Add(Container{ID: "x", Name: "too-big", Labels: map[string]string{LabelLLCWays: fmt.Sprint(m.LLC.Ways)}}, 0)
	var p Plan
	var log []string
	for i := 1; i <= 3; i++ {
		p = c.Tick(time.Duration(i) * time.Second)
		log = append(log, p.Log...)
	}
	ts, tp := p.Targets["s"], p.Targets["p"]
	// the log names the mask applied (before, the accountant's reversed one: "0xe" for 0x700)
	if want := fmt.Sprintf("static request: 3 ways %#x", ts.Mask); !strings.Contains(strings.Join(log, "\n"), want) {
		t.Errorf("the log does not name the applied mask (%q):\n%s", want, strings.Join(log, "\n"))
	}
	if st := c.Member("s").State; st != StateStatic {
		t.Fatalf("static request in state %q", st)
	}
	if bits.OnesCount64(ts.Mask) != 3 || ts.MBA != 50 {
		t.Fatalf("static target %+v: want 3 ways at MBA 50 (log %v)", ts, p.Log)
	}
	if lo := ts.Mask >> bits.TrailingZeros64(ts.Mask); lo&(lo+1) != 0 {
		t.Errorf("static mask %#x is not contiguous", ts.Mask)
	}
	if tp.Mask == 0 {
		t.Fatalf("the policy did not allocate its priority container: %+v (log %v)", tp, p.Log)
	}
	if ts.Socket == tp.Socket && ts.Mask&tp.Mask != 0 {
		t.Errorf("static %#x and policy %#x masks share ways on socket %d", ts.Mask, tp.Mask, ts.Socket)
	}
	if p.Default[ts.Socket]&ts.Mask != 0 {
		t.Errorf("system/default %#x keeps static ways %#x", p.Default[ts.Socket], ts.Mask)
	}
	if clos := c.policyBudget(); clos == nil || clos[ts.Socket].Foreign&ts.Mask != ts.Mask {
		t.Errorf("the policy is not told the static ways %#x are taken: %+v", ts.Mask, clos)
	}
	if tt := p.Targets["t"]; tt.MBA != 30 || tt.Mask != p.Default[tt.Socket] {
		t.Errorf("MBA-only request: %+v, want MBA 30 in system/default's ways %#x", tt, p.Default[tt.Socket])
	}
	if tx, mx := p.Targets["x"], c.Member("x"); tx.Mask != 0 || !strings.Contains(mx.Reason, "waiting") {
		t.Errorf("a request of every way was given %#x (reason %q); the reserve stays with system/default", tx.Mask, mx.Reason)
	}
	c.Remove("s")
	p = c.Tick(4 * time.Second)
	if _, ok := p.Targets["s"]; ok {
		t.Errorf("a removed static container is still targeted: %+v", p.Targets)
	}
	if clos := c.policyBudget(); clos != nil && clos[ts.Socket].Foreign&ts.Mask != 0 {
		t.Errorf("released static ways still foreign to the policy: %+v", clos)
	}
}

// testPolicy is the named policy on the emulator's "intel" machine (icx-4314-2s), with
// RDT on and no PMU.
func testPolicy(tb testing.TB, policy string) (sched.Scheduler, *machine.Profile) {
	tb.Helper()
	m, err := machine.Get("icx-4314-2s")
	if err != nil {
		tb.Fatal(err)
	}
	cfg := sched.DefaultConfig()
	cfg.RDT = true
	s, err := sched.New(policy, sched.Env{Machine: m, Config: cfg, IPCEUnavailable: "test: no PMU"})
	if err != nil {
		tb.Fatal(err)
	}
	return s, m
}
