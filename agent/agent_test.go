package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"colo/agent/api"
	"colo/agent/core"
	"colo/agent/discovery"
	"colo/agent/host"
	"colo/resctrl"
	"colo/resctrl/emu"
	"colo/resctrl/journal"
)

// fakeRuntime is a Discovery driven by the test.
type fakeRuntime struct{ ch chan discovery.Event }

func (f *fakeRuntime) Name() string { return "fake" }
func (f *fakeRuntime) Run(ctx context.Context, out chan<- discovery.Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-f.ch:
			out <- ev
		}
	}
}

// fakeHost gives every container a fixed set of thread IDs.
type fakeHost struct {
	mu      sync.Mutex
	threads map[string][]int
}

func (h *fakeHost) Threads(c core.Container) ([]int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.threads[c.ID]...), nil
}
func (h *fakeHost) OpenCounters(c core.Container) (host.Counters, error) {
	return nil, host.ErrNoCounters
}
func (h *fakeHost) Forget(core.Container) {}

type harness struct {
	t      *testing.T
	em     *emu.Emulator
	rt     *fakeRuntime
	host   *fakeHost
	ticks  chan api.Status
	cancel context.CancelFunc
	done   chan error
	jr     *journal.Journal
	a      *Agent
}

func startAgent(t *testing.T, em *emu.Emulator, policy, stateDir string) *harness {
	t.Helper()
	return startAgentWrapped(t, em, policy, stateDir, func(g Groups) Groups { return g })
}

func startAgentWrapped(t *testing.T, em *emu.Emulator, policy, stateDir string, wrap func(Groups) Groups, opts ...func(*Options)) *harness {
	t.Helper()
	o, jr, host := testOptions(t, em, policy, stateDir, wrap)
	h := &harness{t: t, em: em, rt: &fakeRuntime{ch: make(chan discovery.Event)}, host: host,
		ticks: make(chan api.Status, 1), done: make(chan error, 1), jr: jr}
	o.Discovery = h.rt
	o.Ticked = func(st api.Status) {
		select {
		case <-h.ticks:
		default:
		}
		h.ticks <- st
	}
	for _, opt := range opts {
		opt(&o)
	}
	var err error
	if h.a, err = New(o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.a.Run(ctx) }()
	return h
}

// until waits for a tick whose status satisfies ok (events, not a time window: the
// deadline only turns a hang into a failure).
func (h *harness) until(what string, ok func(api.Status) bool) api.Status {
	h.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case st := <-h.ticks:
			if ok(st) {
				return st
			}
		case <-deadline:
			h.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (h *harness) stop() error {
	h.cancel()
	return <-h.done
}

func newContainer(id string, class core.Class, threads []int, h *harness) core.Container {
	h.host.mu.Lock()
	h.host.threads[id] = threads
	h.host.mu.Unlock()
	return core.Container{ID: id, Name: "c-" + id, Image: "colo/test", Labels: map[string]string{core.LabelClass: string(class)}}
}

func find(st api.Status, id string) *api.ContainerStatus {
	for i := range st.Containers {
		if st.Containers[i].ID == id {
			return &st.Containers[i]
		}
	}
	return nil
}

func TestAgentStaticCatLifecycleOnEmulator(t *testing.T) {
	em, err := emu.NewNamed("intel", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := em.State()
	h := startAgent(t, em, "static-cat", t.TempDir())
	prio := newContainer("aaaa1111", core.Priority, []int{101, 102}, h)
	batch := newContainer("bbbb2222", core.Batch, []int{201}, h)
	h.rt.ch <- discovery.Event{Kind: discovery.Sync, Containers: []core.Container{prio, batch}}
	st := h.until("both containers allocated", func(st api.Status) bool {
		p, b := find(st, prio.ID), find(st, batch.ID)
		return p != nil && b != nil && p.CtrlGroup != "" && b.CtrlGroup != ""
	})
	p := find(st, prio.ID)
	es := em.State()
	g, ok := es.Group(p.CtrlGroup)
	if !ok || p.Mask == "" {
		t.Fatalf("emulator has no control group %q", p.CtrlGroup)
	}
	doms, _ := resctrl.SocketDomains(h.a.o.Machine, p.Socket)
	if got := g.Schemata["L3"][doms[0]]; fmt.Sprintf("%#x", got) != p.Mask {
		t.Errorf("emulator L3 %#x, status mask %s", got, p.Mask)
	}
	if !contains(g.Tasks, 101) || !contains(g.Tasks, 102) {
		t.Errorf("control group tasks %v", g.Tasks)
	}
	mg, ok := es.Group(p.MonGroup)
	if !ok || !mg.IsMon || p.Monitoring != "container" || !reflect.DeepEqual(mg.Tasks, []int{101, 102}) {
		t.Errorf("monitoring group %q: %+v (monitoring %s)", p.MonGroup, mg, p.Monitoring)
	}
	if !strings.HasPrefix(p.CtrlGroup, GroupPrefix(st.Instance)) {
		t.Errorf("group %s lacks the instance prefix", p.CtrlGroup)
	}
	// the container forks: the new thread joins at the next PID sync
	h.host.mu.Lock()
	h.host.threads[prio.ID] = []int{101, 102, 103}
	h.host.mu.Unlock()
	h.until("forked thread synced", func(st api.Status) bool {
		g, _ := em.State().Group(p.MonGroup)
		return len(g.Tasks) == 3
	})
	// the container exits: its groups go
	h.rt.ch <- discovery.Event{Kind: discovery.Gone, ID: prio.ID}
	h.until("groups removed", func(st api.Status) bool { return find(st, prio.ID) == nil })
	if _, ok := em.State().Group(p.MonGroup); ok {
		t.Errorf("monitoring group %s still exists", p.MonGroup)
	}
	if g, ok := em.State().Group(p.CtrlGroup); ok && contains(g.Tasks, 101) {
		t.Errorf("control group %s still holds the exited container's threads: %v", p.CtrlGroup, g.Tasks)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	after := em.State()
	after.Generation = before.Generation
	after.Groups[0].Tasks = before.Groups[0].Tasks // the threads went back to system/default
	if !reflect.DeepEqual(before, after) {
		t.Errorf("emulator changed after shutdown:\nbefore %+v\nafter  %+v", before, after)
	}
}

// A killed agent (no shutdown) leaves groups and a changed system/default; the next
// start with the same state directory undoes both from its journal.
func TestAgentReconcilesAfterKill(t *testing.T) {
	em, err := emu.NewNamed("intel", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := em.State()
	dir := t.TempDir()
	for round := 0; round < 3; round++ {
		h := startAgent(t, em, "static-cat", dir)
		c := newContainer("cccc3333", core.Priority, []int{301}, h)
		h.rt.ch <- discovery.Event{Kind: discovery.Sync, Containers: []core.Container{c}}
		h.until("allocated", func(st api.Status) bool { cs := find(st, c.ID); return cs != nil && cs.CtrlGroup != "" })
		// "kill -9": the loop is abandoned without its shutdown; the journal lock goes
		// with the process
		close(h.a.killed)
		<-h.done
		// as after kill -9: the record's process is gone
		r := h.jr.Record()
		r.PID = 0
		if err := r.Save(); err != nil {
			t.Fatal(err)
		}
		if len(em.State().Groups) == len(before.Groups) {
			t.Fatal("the agent created no groups")
		}
	}
	h := startAgent(t, em, "static-cat", dir)
	h.until("a tick", func(api.Status) bool { return true })
	mid := em.State()
	for _, g := range mid.Groups {
		if g.Path != "" {
			t.Errorf("orphaned group %s after restart", g.Path)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	after := em.State()
	after.Generation = before.Generation
	after.Groups[0].Tasks = before.Groups[0].Tasks // the threads went back to system/default
	if !reflect.DeepEqual(before, after) {
		t.Errorf("emulator not restored:\nbefore %+v\nafter  %+v", before, after)
	}
}

// With fewer CLOSIDs and RMIDs in resctrl than the policy assumes, containers that get no
// control group stay in system/default (lost isolation, counted and logged) and those
// that get no monitoring group of their own are monitored by class or through their
// control group; shutdown still restores everything.
func TestAgentDegradesWhenCLOSIDsAndRMIDsRunOut(t *testing.T) {
	p, err := emu.NamedProfile("intel")
	if err != nil {
		t.Fatal(err)
	}
	p.L3.NumCLOSIDs, p.MB.NumCLOSIDs, p.Mon.NumRMIDs = 3, 3, 5
	em, err := emu.New(p, emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := em.State()
	h := startAgent(t, em, "static-cat", t.TempDir())
	var cs []core.Container
	for i := 0; i < 5; i++ {
		cs = append(cs, newContainer(fmt.Sprintf("dddd%04d", i), core.Priority, []int{400 + i}, h))
	}
	h.rt.ch <- discovery.Event{Kind: discovery.Sync, Containers: cs}
	st := h.until("exhaustion handled", func(st api.Status) bool {
		return len(st.Containers) == 5 && st.Counts["closid_exhausted"] > 0
	})
	ctrl, modes := 0, map[string]int{}
	for _, c := range st.Containers {
		if c.CtrlGroup != "" {
			ctrl++
		}
		modes[c.Monitoring]++
	}
	// icx-4314-2s has two sockets: a control group holds one allocation per socket
	if ctrl < 2 || ctrl > 4 {
		t.Errorf("%d containers have control groups; 3 CLOSIDs leave 2 groups besides system/default", ctrl)
	}
	if modes["class"]+modes["control"] == 0 {
		t.Errorf("no container degraded to class or control-group monitoring: %v", modes)
	}
	notes := strings.Join(st.Notes, "\n")
	if !strings.Contains(notes, "lost isolation") {
		t.Errorf("degradations not said:\n%s", notes)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	after := em.State()
	after.Generation = before.Generation
	after.Groups[0].Tasks = before.Groups[0].Tasks
	if !reflect.DeepEqual(before, after) {
		t.Errorf("emulator changed after shutdown:\nbefore %+v\nafter  %+v", before, after)
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// vanishing is a mount that can disappear (its Available fails) and come back empty.
type vanishing struct {
	Groups
	mu   sync.Mutex
	gone bool
}

func (v *vanishing) Available() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.gone {
		return errors.New("resctrl is no longer mounted (test)")
	}
	return nil
}

func (v *vanishing) set(gone bool) { v.mu.Lock(); v.gone = gone; v.mu.Unlock() }

// The runtime going away keeps the agent running with its allocations; the resync after
// the reconnect releases containers that are gone. The resctrl mount disappearing pauses
// resctrl work (health says why); a new mount gets the groups again.
func TestAgentRuntimeAndMountOutages(t *testing.T) {
	em, err := emu.NewNamed("intel", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var v *vanishing
	h := startAgentWrapped(t, em, "static-cat", t.TempDir(), func(g Groups) Groups { v = &vanishing{Groups: g}; return v })
	a1 := newContainer("ffff0001", core.Priority, []int{501}, h)
	a2 := newContainer("ffff0002", core.Class("gold"), []int{502}, h) // invalid: batch, one log line, a metric
	h.rt.ch <- discovery.Event{Kind: discovery.Sync, Containers: []core.Container{a1, a2}}
	h.until("both allocated", func(st api.Status) bool {
		p, b := find(st, a1.ID), find(st, a2.ID)
		return p != nil && b != nil && p.CtrlGroup != "" && b.CtrlGroup != ""
	})
	if code, m := get(h.a, "/metrics"); code != http.StatusOK || !strings.Contains(m, `colo_label_errors_total{label="colo.io/class"} 1`) {
		t.Errorf("invalid label not counted in /metrics")
	}
	if c := find(h.a.Status(), a2.ID); c == nil || c.Request.Class != core.Batch {
		t.Errorf("invalid class not treated as batch: %+v", c)
	}
	h.rt.ch <- discovery.Event{Kind: discovery.Down, Err: errors.New("dial unix /var/run/docker.sock: connection refused")}
	st := h.until("runtime down", func(st api.Status) bool { return !st.RuntimeConnected })
	if p := find(st, a1.ID); p == nil || p.CtrlGroup == "" || !strings.Contains(st.RuntimeError, "connection refused") {
		t.Errorf("while the runtime is down: %+v, error %q", p, st.RuntimeError)
	}
	h.rt.ch <- discovery.Event{Kind: discovery.Sync, Containers: []core.Container{a1}} // a2 exited meanwhile
	st = h.until("resynced", func(st api.Status) bool { return st.RuntimeConnected && find(st, a2.ID) == nil })
	if find(st, a1.ID) == nil {
		t.Fatal("a running container was dropped at resync")
	}
	mon := find(st, a1.ID).MonGroup

	v.set(true)
	em.Reset() // what comes back is a fresh mount
	st = h.until("resctrl reported gone", func(st api.Status) bool { return st.ResctrlError != "" })
	if len(st.Containers) != 1 {
		t.Errorf("containers while resctrl is gone: %d", len(st.Containers))
	}
	if code, body := get(h.a, "/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "no longer mounted") {
		t.Errorf("/healthz while resctrl is gone: %d %q", code, body)
	}
	v.set(false)
	st = h.until("groups recreated on the new mount", func(st api.Status) bool {
		c := find(st, a1.ID)
		if st.ResctrlError != "" || c == nil || c.MonGroup == "" {
			return false
		}
		g, ok := em.State().Group(c.MonGroup)
		return ok && contains(g.Tasks, 501)
	})
	if find(st, a1.ID).MonGroup == "" || mon == "" {
		t.Errorf("monitoring group not recreated")
	}
	if code, _ := get(h.a, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after resctrl came back: %d", code)
	}
	_, metrics := get(h.a, "/metrics")
	for _, want := range []string{`container_llc_occupancy_bytes{id="/ffff0001",image="colo/test",name="c-ffff0001"}`,
		`colo_agent_resctrl_available{root="emu:intel"} 1`, `colo_agent_runtime_connected{runtime="fake"} 1`,
		`colo_container_class{class="priority",id="/ffff0001",image="colo/test",name="c-ffff0001",state="running"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	for _, g := range em.State().Groups {
		if g.Path != "" {
			t.Errorf("group %s left after shutdown", g.Path)
		}
	}
}

func get(a *Agent, path string) (int, string) {
	rec := httptest.NewRecorder()
	api.Handler(a.Status, time.Minute).ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Code, rec.Body.String()
}
