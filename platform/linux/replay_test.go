package linux

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"colo/bench"
	simplatform "colo/platform/sim"
	"colo/resctrl"
	"colo/sim"
	"colo/workload"
)

// fakeRuntime is a runtime without processes: each workload is a cgroup directory whose
// tasks file holds one thread, 10000+job ID (the PID platform sim gives the job), so the
// linux platform moves the same tasks as the simulator. Remove calls gone(pid), as the
// kernel forgets an exited task.
type fakeRuntime struct {
	dir  string
	gone func(pid int)

	mu sync.Mutex
	n  int
	ws map[string]*fakeWorkload
}

type fakeWorkload struct {
	info workload.Info
	pid  int
	done chan struct{}
}

var jobOfName = regexp.MustCompile(`-j(\d+)-`)

func newFakeRuntime(t *testing.T, gone func(int)) *fakeRuntime {
	return &fakeRuntime{dir: t.TempDir(), gone: gone, ws: map[string]*fakeWorkload{}}
}

func (f *fakeRuntime) Name() string { return "fake" }

func (f *fakeRuntime) Create(_ context.Context, s workload.Spec) (string, error) {
	m := jobOfName.FindStringSubmatch(s.Name)
	if m == nil {
		return "", fmt.Errorf("fake runtime: no job ID in %q", s.Name)
	}
	id, _ := strconv.Atoi(m[1])
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	rid := fmt.Sprintf("w%d", f.n)
	dir := filepath.Join(f.dir, rid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	pid := 10000 + id
	if err := os.WriteFile(filepath.Join(dir, "tasks"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return "", err
	}
	f.ws[rid] = &fakeWorkload{pid: pid, done: make(chan struct{}),
		info: workload.Info{ID: rid, Name: s.Name, State: workload.Created, Cgroup: workload.Cgroup{Version: 1, Dirs: map[string]string{"cpu": dir}}, Labels: s.Labels}}
	return rid, nil
}

func (f *fakeRuntime) get(id string) (*fakeWorkload, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.ws[id]
	if !ok {
		return nil, fmt.Errorf("workload %s: %w", id, workload.ErrNotFound)
	}
	return w, nil
}

func (f *fakeRuntime) Start(_ context.Context, id string) error {
	w, err := f.get(id)
	if err == nil {
		f.mu.Lock()
		w.info.State, w.info.PID = workload.Running, w.pid
		f.mu.Unlock()
	}
	return err
}

func (f *fakeRuntime) Stop(_ context.Context, id string, _ time.Duration) error {
	w, err := f.get(id)
	if err == nil {
		f.mu.Lock()
		w.info.State = workload.Exited
		f.mu.Unlock()
	}
	return err
}

func (f *fakeRuntime) Remove(_ context.Context, id string) error {
	w, err := f.get(id)
	if err != nil {
		return err
	}
	f.mu.Lock()
	delete(f.ws, id)
	f.mu.Unlock()
	close(w.done)
	os.RemoveAll(filepath.Dir(filepath.Join(w.info.Cgroup.Dirs["cpu"], "tasks")))
	if f.gone != nil {
		f.gone(w.pid)
	}
	return nil
}

func (f *fakeRuntime) Wait(ctx context.Context, id string) (workload.Exit, error) {
	w, err := f.get(id)
	if err != nil {
		return workload.Exit{}, err
	}
	select {
	case <-w.done:
		return workload.Exit{}, nil
	case <-ctx.Done():
		return workload.Exit{}, ctx.Err()
	}
}

func (f *fakeRuntime) Inspect(_ context.Context, id string) (workload.Info, error) {
	w, err := f.get(id)
	if err != nil {
		return workload.Info{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return w.info, nil
}

func (f *fakeRuntime) List(context.Context, map[string]string) ([]workload.Info, error) {
	return nil, nil
}
func (f *fakeRuntime) Stats(context.Context, string) (workload.Stats, error) {
	return workload.Stats{}, nil
}
func (f *fakeRuntime) SetCpuset(context.Context, string, string) error { return nil }
func (f *fakeRuntime) Close() error                                    { return nil }
func (f *fakeRuntime) SetCPUQuota(context.Context, string, time.Duration, time.Duration) error {
	return fmt.Errorf("the fake runtime has no CPU quota")
}

// call is one platform call of a scheduler's decision stream.
type call struct {
	op         string // start, stop, move, alloc, default
	job        bench.JobSpec
	id, socket int
	cpus       []int
	mask       uint64
	mba        int
}

func (c call) String() string {
	return fmt.Sprintf("%s job %d socket %d cpus %v mask %#x mba %d", c.op, c.id, c.socket, c.cpus, c.mask, c.mba)
}

// recorder is platform sim, recording every call that changes resctrl state.
type recorder struct {
	*simplatform.Platform
	calls []call
}

func (r *recorder) Start(j bench.JobSpec, cpus []int) error {
	r.calls = append(r.calls, call{op: "start", job: j, id: j.ID, cpus: cpus})
	return r.Platform.Start(j, cpus)
}
func (r *recorder) Stop(id int) error {
	r.calls = append(r.calls, call{op: "stop", id: id})
	return r.Platform.Stop(id)
}
func (r *recorder) Move(id int, cpus []int) error {
	r.calls = append(r.calls, call{op: "move", id: id, cpus: cpus})
	return r.Platform.Move(id, cpus)
}
func (r *recorder) SetAllocation(id, socket int, mask uint64, mba int) error {
	r.calls = append(r.calls, call{op: "alloc", id: id, socket: socket, mask: mask, mba: mba})
	return r.Platform.SetAllocation(id, socket, mask, mba)
}
func (r *recorder) SetDefaultMask(socket int, mask uint64) error {
	r.calls = append(r.calls, call{op: "default", socket: socket, mask: mask})
	return r.Platform.SetDefaultMask(socket, mask)
}

const replayPrefix = "colo.replay."

var (
	recMu    sync.Mutex
	recLast  *recorder
	recOnce  sync.Once
	recSetup func(*testing.T, *resctrl.Client) // prepares each recorded mount (foreign groups)
	recT     *testing.T
)

// recordRun runs a benchmark on platform sim under one scheduler and returns its
// decision stream.
func recordRun(t *testing.T, file, scheduler string, maxT time.Duration, setup func(*testing.T, *resctrl.Client)) []call {
	t.Helper()
	recOnce.Do(func() {
		bench.RegisterPlatform("sim-recorded", func(bm *bench.Benchmark) (bench.Platform, error) {
			p, err := simplatform.NewPrefixed(bm.Machine, sim.Options{Seed: bm.Seed}, replayPrefix)
			if err != nil {
				return nil, err
			}
			r := &recorder{Platform: p}
			recMu.Lock()
			recLast = r
			if recSetup != nil {
				recSetup(recT, resctrl.New(p.Emulator().FS(), resctrl.Options{AllowForeign: true}))
			}
			recMu.Unlock()
			return r, nil
		})
	})
	recMu.Lock()
	recSetup, recT = setup, t
	recMu.Unlock()
	bm, err := bench.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	bm.Platform = "sim-recorded"
	if maxT > 0 {
		bm.MaxT = maxT
	}
	if _, err := bench.RunAll(bm, []string{scheduler}, bench.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	recMu.Lock()
	defer recMu.Unlock()
	return recLast.calls
}

// twin is the same decision stream applied to platform sim and to platform linux (the
// in-process resctrl emulator of the same machine, a fake runtime).
type twin struct {
	t   *testing.T
	sim *simplatform.Platform
	lin *Platform
	rdt *emuRDT
	sc  *resctrl.Client
	lc  *resctrl.Client
}

func newTwin(t *testing.T, machineName string, setup func(*testing.T, *resctrl.Client)) *twin {
	t.Helper()
	rdt := newEmuRDT(t, machineName)
	sp, err := simplatform.NewPrefixed(rdt.m, sim.Options{Seed: 1}, replayPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(t, resctrl.New(sp.Emulator().FS(), resctrl.Options{AllowForeign: true}))
		setup(t, resctrl.New(rdt.em.FS(), resctrl.Options{AllowForeign: true}))
	}
	o := Options{RDT: rdt, Runtime0: newFakeRuntime(t, func(pid int) { rdt.em.Forget(pid) }), StateDir: t.TempDir(),
		Machine: rdt.m, Prefix: replayPrefix, StartGrace: time.Nanosecond, Logf: func(string, ...any) {}}
	lp, err := New(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lp.Close(); sp.Close() })
	return &twin{t: t, sim: sp, lin: lp, rdt: rdt,
		sc: resctrl.New(sp.Emulator().FS(), resctrl.Options{}), lc: resctrl.New(rdt.em.FS(), resctrl.Options{})}
}

// tree is the `colo resctrl ls` table of a mount plus every group's task list.
func tree(t *testing.T, c *resctrl.Client) string {
	vs, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := resctrl.WriteList(&b, vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		fmt.Fprintf(&b, "%s tasks %v\n", resctrl.GroupName(v.Path), v.Tasks)
	}
	return b.String()
}

// apply makes one call on both platforms: both must accept or refuse it alike, and
// their resctrl trees must be byte-identical afterwards.
func (tw *twin) apply(i int, c call) {
	tw.t.Helper()
	var es, el error
	switch c.op {
	case "start":
		es, el = tw.sim.Start(c.job, c.cpus), tw.lin.Start(c.job, c.cpus)
	case "stop":
		es, el = tw.sim.Stop(c.id), tw.lin.Stop(c.id)
	case "move":
		es, el = tw.sim.Move(c.id, c.cpus), tw.lin.Move(c.id, c.cpus)
	case "alloc":
		es, el = tw.sim.SetAllocation(c.id, c.socket, c.mask, c.mba), tw.lin.SetAllocation(c.id, c.socket, c.mask, c.mba)
	case "default":
		es, el = tw.sim.SetDefaultMask(c.socket, c.mask), tw.lin.SetDefaultMask(c.socket, c.mask)
	}
	if (es == nil) != (el == nil) {
		tw.t.Fatalf("step %d (%s): sim says %v, linux says %v", i, c, es, el)
	}
	if s, l := tree(tw.t, tw.sc), tree(tw.t, tw.lc); s != l {
		tw.t.Fatalf("step %d (%s): the resctrl trees diverge\nsim:\n%s\nlinux:\n%s", i, c, s, l)
	}
}

// TestReplaySimAndLinuxGiveOneTree replays the decision stream of the thesis's
// exceeding-demand scenario under dynamic (probes, consolidations, migrations, jobs
// ending while allocated), recorded on platform sim, through a fresh platform sim and
// platform linux on the emulator: after every call the two mounts must list the same
// groups, modes, schemata and tasks, byte for byte.
func TestReplaySimAndLinuxGiveOneTree(t *testing.T) {
	calls := recordRun(t, "../../examples/thesis/exceeding-demand.yaml", "dynamic", 20*time.Minute, nil)
	kinds := map[string]int{}
	for _, c := range calls {
		kinds[c.op]++
	}
	t.Logf("%d calls: %v", len(calls), kinds)
	if kinds["alloc"] < 50 || kinds["move"] == 0 || kinds["default"] == 0 || kinds["stop"] == 0 {
		t.Fatalf("the stream does not exercise every kind of call: %v", kinds)
	}
	tw := newTwin(t, "icx-4314-2s", nil)
	most, at := 0, ""
	for i, c := range calls {
		tw.apply(i, c)
		if n := strings.Count(tree(t, tw.lc), "ctrl_mon"); n > most {
			most, at = n, tree(t, tw.lc)
		}
	}
	t.Logf("most control groups at once: %d\n%s", most-1, at)
	if most < 3 {
		t.Fatal("the stream never held two control groups at once")
	}
}

// TestNineIdenticalAllocations: nine jobs on one icx-4314-2s socket asking for the same
// mask share one CLOS on both platforms (8 usable CLOSIDs, MBA's limit), and both say so.
func TestNineIdenticalAllocations(t *testing.T) {
	tw := newTwin(t, "icx-4314-2s", nil)
	var calls []call
	for i := 0; i < 9; i++ {
		calls = append(calls, call{op: "start", job: bench.JobSpec{ID: i, Name: fmt.Sprintf("n%d", i), Workload: "neighbor:6MB:1g", Command: "stress compute", Cores: 1}, id: i, cpus: []int{i}})
	}
	for i := 0; i < 9; i++ {
		calls = append(calls, call{op: "alloc", id: i, socket: 0, mask: 0x0f0, mba: 50})
	}
	for i, c := range calls {
		tw.apply(i, c)
	}
	for i := 0; i < 9; i++ {
		s, err1 := tw.sim.ReadAllocation(i)
		l, err2 := tw.lin.ReadAllocation(i)
		if err1 != nil || err2 != nil || s != l || s.Mask != 0x0f0 || s.MBA != 50 || s.Group != replayPrefix+"c0" {
			t.Fatalf("job %d: sim reads %+v %v, linux %+v %v", i, s, err1, l, err2)
		}
	}
	shared := func(notes []string) int {
		n := 0
		for _, s := range notes {
			if strings.Contains(s, "shares CLOS "+replayPrefix+"c0") && strings.Contains(s, "KPart") {
				n++
			}
		}
		return n
	}
	if s, l := shared(tw.sim.Notes()), shared(tw.lin.Notes()); s != 8 || l != 8 {
		t.Fatalf("shared-CLOS notes: sim %d, linux %d, want 8 each\nsim %q\nlinux %q", s, l, tw.sim.Notes(), tw.lin.Notes())
	}
	// a distinct eighth allocation still fits (7 control groups), and then no more:
	// both refuse alike (TestReplay... compares the trees after the refusal too)
	for i, c := range []call{
		{op: "alloc", id: 1, socket: 0, mask: 0x001, mba: 10},
		{op: "alloc", id: 2, socket: 0, mask: 0x002, mba: 10},
		{op: "alloc", id: 3, socket: 0, mask: 0x004, mba: 10},
		{op: "alloc", id: 4, socket: 0, mask: 0x008, mba: 10},
		{op: "alloc", id: 5, socket: 0, mask: 0x100, mba: 10},
		{op: "alloc", id: 6, socket: 0, mask: 0x200, mba: 10},
	} {
		tw.apply(100+i, c)
	}
	es, el := tw.sim.SetAllocation(7, 0, 0x400, 10), tw.lin.SetAllocation(7, 0, 0x400, 10)
	if es == nil || el == nil || !strings.Contains(es.Error(), "no CLOSID left") || !strings.Contains(el.Error(), "no CLOSID left") {
		t.Fatalf("an 8th control group: sim %v, linux %v", es, el)
	}
	if s, l := tree(t, tw.sc), tree(t, tw.lc); s != l {
		t.Fatalf("after the refusal:\nsim:\n%s\nlinux:\n%s", s, l)
	}
	b := tw.lin.CLOSBudget()
	if len(b) != 2 || b[0].Groups != 7 || b[0] != tw.sim.CLOSBudget()[0] {
		t.Fatalf("budgets: linux %+v, sim %+v", b, tw.sim.CLOSBudget())
	}
}

// foreign03 is another agent's group holding ways 0x3 on socket 0 (and the full mask,
// no claim, on socket 1).
func foreign03(t *testing.T, c *resctrl.Client) {
	s, err := resctrl.ParseSpec("L3:0=3")
	if err == nil {
		err = c.Apply(resctrl.Change{Group: "theirs", Create: true, Schemata: s})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestForeignGroupNeverExclusive: with another agent's group holding ways 0x3 on socket
// 0, dynamic (which sees the foreign ways through sched.Observation.CLOS) never asks for
// them on sim, and replayed on platform linux no job's class ever holds one of those
// ways (a slot at the full mask is an unused one), the foreign group keeps its schemata,
// and both trees stay identical.
func TestForeignGroupNeverExclusive(t *testing.T) {
	calls := recordRun(t, "../../examples/thesis/exceeding-demand.yaml", "dynamic", 20*time.Minute, foreign03)
	allocs := 0
	for _, c := range calls {
		if c.op == "alloc" && c.mask != 0 {
			allocs++
			if c.socket == 0 && c.mask&0x3 != 0 {
				t.Fatalf("dynamic asked for the foreign ways: %s", c)
			}
		}
	}
	if allocs < 50 {
		t.Fatalf("only %d allocations", allocs)
	}
	tw := newTwin(t, "icx-4314-2s", foreign03)
	want := ""
	for i, c := range calls {
		tw.apply(i, c)
		for _, g := range tw.rdt.em.State().Groups {
			switch {
			case g.Path == "theirs":
				got := fmt.Sprint(g.Schemata["L3"], g.Schemata["MB"], g.Mode)
				if want == "" {
					want = got
				}
				if got != want {
					t.Fatalf("step %d (%s): the foreign group changed: %s, was %s", i, c, got, want)
				}
			case strings.HasPrefix(g.Path, replayPrefix) && !g.IsMon:
				if m := uint64(g.Schemata["L3"][0]); m&0x3 != 0 && m != tw.rdt.m.FullMask() {
					t.Fatalf("step %d (%s): %s holds %#x on socket 0, overlapping the foreign 0x3", i, c, g.Path, m)
				}
			}
		}
	}
	if b := tw.lin.CLOSBudget(); b[0].Foreign != 0x3 || b[1].Foreign != 0 || b[0].Groups != 6 {
		t.Fatalf("budget %+v", b)
	}
	// asked outright, the linux platform refuses the foreign ways and says why
	if err := tw.lin.Start(fakeJob(900), []int{15}); err != nil {
		t.Fatal(err)
	}
	if err := tw.lin.SetAllocation(900, 0, 0x6, 10); err == nil || !strings.Contains(err.Error(), "theirs") {
		t.Fatalf("an overlapping allocation: %v", err)
	}
}
