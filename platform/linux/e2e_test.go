package linux

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/bench"
	"colo/resctrl/emu"
	"colo/sched"
)

// e2eYAML: a cache thrasher and a compute loop, both priority jobs, under the dynamic
// scheduler with RDT: they are probed and then allocated their own CLOS; collectors
// sample perf (software here), Docker stats and resctrl every 100 ms.
const e2eYAML = `benchmark:
  name: linux-e2e
  platform: linux
  max_t: %d
  scheduler:
    implementation: dynamic
    rdt: true
    tick_t: 0.5
    prober:
      implementation: default
      min_l3: 2
      max_l3: 3
      step_l3: 1
      min_mem: 10
      max_mem: 10
      mem_step: 10
      probing_t: 1
      warmup_t: 0.5
      cooldown_t: 0.5
      probing_frequency: 100
      break_condition: 0.9
      allocate: true
  data:
    frequency: 100
    perf: true
    docker: true
    rdt: true
containers:
  thrasher:
    command: "stress random --mb 64 --duration 120s"
    num_cores: 1
    priority: true
    ipce: 90
  compute:
    command: "stress compute --duration 120s"
    num_cores: 1
    priority: true
    ipce: 90
`

func procExists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// mountEmulator mounts the validating resctrl emulator through FUSE.
func mountEmulator(t *testing.T) (*emu.Emulator, string) {
	t.Helper()
	if err := emu.FUSEAvailable(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the end-to-end test must run in CI: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	e, err := emu.NewNamed("intel", emu.Options{PIDExists: procExists})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m, err := emu.Mount(e, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Unmount() })
	return e, dir
}

// allocSpy checks, right after every allocation, that the emulator holds the job's
// threads in its class and the class's schemata carries the mask.
type allocSpy struct {
	*Platform
	t         *testing.T
	em        *emu.Emulator
	allocated map[int]int
	stats     map[int]int // Docker stats samples seen per job
	perf      map[int]int // reads with software counters (task-clock CPU time)
}

func (s allocSpy) Read(id int) (bench.Counters, error) {
	c, err := s.Platform.Read(id)
	if st, n, e := s.Platform.DockerStats(id); e == nil && n > 0 && st.CPUAvailable && st.MemAvailable {
		s.stats[id] = n
	}
	if j, e := s.Platform.get(id); e == nil && j.counter != nil && c.CPUTime > 0 {
		s.perf[id]++
	}
	return c, err
}

func (s allocSpy) SetAllocation(id, socket int, mask uint64, mba int) error {
	err := s.Platform.SetAllocation(id, socket, mask, mba)
	if err != nil || mask == 0 {
		return err
	}
	j, _ := s.Platform.get(id)
	st := s.em.State()
	g, ok := st.Group(j.ctrl)
	if !ok {
		s.t.Errorf("job %d: emulator has no group %q", id, j.ctrl)
		return err
	}
	if got := g.Schemata["L3"]; len(got) <= socket || uint64(got[socket]) != mask {
		s.t.Errorf("job %d: emulator schemata L3 %v, applied %#x on domain %d", id, got, mask, socket)
	}
	tids, _ := j.cg.Threads()
	in := map[int]bool{}
	for _, x := range g.Tasks {
		in[x] = true
	}
	for _, x := range tids {
		if !in[x] && procExists(x) {
			s.t.Errorf("job %d: thread %d of the container is not in %s (%v)", id, x, j.ctrl, g.Tasks)
		}
	}
	if mg, ok := st.Group(j.mon); !ok || len(mg.Tasks) == 0 {
		s.t.Errorf("job %d: monitoring group %s missing or empty", id, j.mon)
	}
	s.allocated[id]++
	return err
}

func TestEndToEndEmulator(t *testing.T) {
	e := newEnv(t)
	em, dir := mountEmulator(t)
	bm := parseBench(t, fmt.Sprintf(e2eYAML, 12))
	o := e.options(nil)
	o.ResctrlRoot = dir
	pf, err := New(bm, o)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	s, err := sched.New(bm.Sched.Implementation, sched.Env{Machine: bm.Machine, Config: bm.Sched})
	if err != nil {
		t.Fatal(err)
	}
	mem := &bench.Memory{}
	spy := allocSpy{Platform: pf, t: t, em: em, allocated: map[int]int{}, stats: map[int]int{}, perf: map[int]int{}}
	res, err := bench.Run(bm, spy, s, bench.Options{Recorder: mem})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range mem.Events {
		t.Logf("event %v %s job %d: %s", ev.T.Round(time.Millisecond), ev.Kind, ev.Job, ev.Text)
	}
	t.Logf("warnings %q, notes %q, allocations %v, docker stats %v, counter reads %v, samples %d, probes %d",
		res.Warnings, pf.Notes(), spy.allocated, spy.stats, spy.perf, len(mem.Samples), res.Probes)
	for _, j := range bm.Jobs {
		if spy.allocated[j.ID] == 0 {
			t.Errorf("job %s was never given a CLOS", j.Name)
		}
		if spy.stats[j.ID] == 0 {
			t.Errorf("job %s: no Docker stats collected", j.Name)
		}
		if spy.perf[j.ID] < 20 {
			t.Errorf("job %s: %d counter reads with CPU time at 100 ms", j.Name, spy.perf[j.ID])
		}
	}
	if res.AllocationMismatches != 0 || res.AllocationErrors != 0 {
		t.Errorf("%d mismatches, %d allocation errors", res.AllocationMismatches, res.AllocationErrors)
	}
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	st := em.State()
	if len(st.Groups) != 1 || st.Groups[0].Path != "" {
		var ps []string
		for _, g := range st.Groups {
			ps = append(ps, g.Path)
		}
		t.Errorf("emulator groups left: %v", ps)
	}
	if c, n := leftovers(t, e); c != 0 || n != 0 {
		t.Errorf("%d containers and %d networks left behind", c, n)
	}
}

// TestKilledMidRunReconciles runs the benchmark in a child process, kills it with
// SIGKILL while its containers run in their classes, and checks that the next platform
// removes the containers, the network and the resctrl groups.
func TestKilledMidRunReconciles(t *testing.T) {
	e := newEnv(t)
	em, dir := mountEmulator(t)
	yml := filepath.Join(t.TempDir(), "e2e.yaml")
	if err := os.WriteFile(yml, []byte(fmt.Sprintf(e2eYAML, 60)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildRun$")
	cmd.Env = append(os.Environ(), "COLO_E2E_CHILD="+strings.Join([]string{yml, dir, e.image, e.state}, ","))
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait until both jobs sit in their own classes.
	deadline := time.Now().Add(60 * time.Second)
	for {
		n := 0
		for _, g := range em.State().Groups {
			if !g.IsMon && strings.HasPrefix(g.Path, "colo.") && len(g.Tasks) > 0 {
				n++
			}
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child never allocated both jobs; its output:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	c, n := leftovers(t, e, cmd.Process.Pid)
	owned := 0
	for _, g := range em.State().Groups {
		if g.Path != "" {
			owned++
		}
	}
	if c != 2 || n != 1 || owned < 2 {
		t.Fatalf("after the kill: %d containers, %d networks, %d groups (want leftovers to reconcile)", c, n, owned)
	}
	o := e.options(nil)
	o.ResctrlRoot = dir
	pf, err := New(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if c, n := leftovers(t, e, cmd.Process.Pid); c != 0 || n != 0 {
		t.Errorf("after reconcile: %d containers, %d networks of the killed colo", c, n)
	}
	if gs := em.State().Groups; len(gs) != 1 {
		t.Errorf("after reconcile the emulator still has %d groups", len(gs))
	}
	t.Logf("reconcile notes: %q", pf.Notes())
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	if c, n := leftovers(t, e); c != 0 || n != 0 {
		t.Errorf("%d containers and %d networks left", c, n)
	}
}

// TestChildRun is the body of the child process of TestKilledMidRunReconciles.
func TestChildRun(t *testing.T) {
	env := os.Getenv("COLO_E2E_CHILD")
	if env == "" {
		t.Skip("helper process for TestKilledMidRunReconciles")
	}
	a := strings.Split(env, ",")
	bm, err := bench.Load(a[0])
	if err != nil {
		t.Fatal(err)
	}
	pf, err := New(bm, Options{Image: a[2], ResctrlRoot: a[1], StateDir: a[3]})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sched.New(bm.Sched.Implementation, sched.Env{Machine: bm.Machine, Config: bm.Sched})
	if err != nil {
		t.Fatal(err)
	}
	bench.Run(bm, pf, s, bench.Options{Warn: func(w string) { fmt.Println("warning:", w) }})
}
