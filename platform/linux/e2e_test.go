package linux

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"colo/bench"
	"colo/internal/emutest"
	_ "colo/policy/dcat" // static-cat, the example's scheduler (colo registers it too)
	"colo/resctrl/emu"
)

// exampleFile is the must-show example of issue #6: what `colo run FILE --platform linux
// --resctrl-root DIR` runs. The end-to-end tests run exactly that path: bench.Load,
// --platform (bench.Benchmark.Platform), --resctrl-root (ResctrlRoot), bench.RunAll,
// which builds this platform through its registered factory.
const exampleFile = "../../examples/linux/colocation.yaml"

// mountEmulator mounts the validating resctrl emulator through FUSE.
func mountEmulator(t *testing.T) (*emu.Emulator, string) {
	t.Helper()
	return emutest.MountNamed(t, "intel", emu.Options{PIDExists: emutest.ProcExists})
}

// loadExample is `colo run exampleFile --platform linux --resctrl-root dir` up to
// bench.RunAll.
func loadExample(t *testing.T, dir string) *bench.Benchmark {
	t.Helper()
	bm, err := bench.Load(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	bm.Platform, bm.ResctrlRoot = "linux", dir
	return bm
}

// useDefaults points the registered factory (what colo run uses) at the test's image
// and state directory for the rest of the test.
func useDefaults(t *testing.T, o Options) {
	old := Defaults
	Defaults = o
	t.Cleanup(func() { Defaults = old })
}

// spy records the run and checks, as it goes, what the emulator and the runtime see: right
// after each allocation the job's threads are in its class, whose schemata carries the
// mask, and its monitoring group holds them; at each sample the job has perf counters
// open and Docker stats.
type spy struct {
	bench.Memory
	t  *testing.T
	em *emu.Emulator
	mu sync.Mutex
	pf *Platform

	allocated map[int]int
	stats     map[int]int // Docker stats samples seen per job
	perf      map[int]int // samples with the job's perf counters open
	samples   map[int]int // samples per job
	mode      string
}

func (s *spy) opened(p *Platform) { s.mu.Lock(); s.pf = p; s.mu.Unlock() }

func (s *spy) Sample(r bench.SampleRecord) error {
	s.samples[r.Job]++
	if j, err := s.pf.get(r.Job); err == nil && j.counter != nil {
		s.perf[r.Job]++
		s.mode = string(j.counter.Mode())
	}
	if st, n, err := s.pf.DockerStats(r.Job); err == nil && n > 0 && st.CPUAvailable && st.MemAvailable {
		s.stats[r.Job] = n
	}
	return s.Memory.Sample(r)
}

func (s *spy) Allocation(a bench.AllocationRecord) error {
	if a.Source == "sched" && a.Mask != 0 && len(a.Members) == 1 {
		s.checkClass(a.Members[0], a.Socket, a.Mask)
	}
	return s.Memory.Allocation(a)
}

func (s *spy) checkClass(id, socket int, mask uint64) {
	j, err := s.pf.get(id)
	if err != nil {
		s.t.Errorf("job %d: %v", id, err)
		return
	}
	st := s.em.State()
	pl := s.pf.placement(id)
	g, ok := st.Group(pl.Group)
	if !ok || pl.Group == "" {
		s.t.Errorf("job %d: emulator has no group %q", id, pl.Group)
		return
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
		if !in[x] && emutest.ProcExists(x) {
			s.t.Errorf("job %d: thread %d of the container is not in %s (%v)", id, x, pl.Group, g.Tasks)
		}
	}
	if mg, ok := st.Group(pl.Mon); !ok || len(mg.Tasks) == 0 {
		s.t.Errorf("job %d: monitoring group %s missing or empty", id, pl.Mon)
	}
	s.allocated[id]++
}

// TestEndToEndEmulator runs examples/linux/colocation.yaml as `colo run FILE --platform
// linux --resctrl-root DIR` does, on real containers of the colo image and the resctrl
// emulator: both jobs get their CLOS and monitoring group, Docker stats and perf counters
// (software events here) are collected at 100 ms, and nothing is left afterwards.
func TestEndToEndEmulator(t *testing.T) {
	e := newEnv(t)
	em, dir := mountEmulator(t)
	bm := loadExample(t, dir)
	// The example's 14 s trace compressed: each job runs 4 s from its start, both
	// co-located for about 3 s. No max_t: the run ends when both jobs have (an event),
	// however long a loaded host takes to start containers.
	bm.MaxT = 0
	for i := range bm.Jobs {
		bm.Jobs[i].Arrival = min(bm.Jobs[i].Arrival, time.Second)
		bm.Jobs[i].Length = 4 * time.Second
	}
	sp := &spy{t: t, em: em, allocated: map[int]int{}, stats: map[int]int{}, perf: map[int]int{}, samples: map[int]int{}}
	o := e.options(nil)
	o.ResctrlRoot, o.Opened = "", sp.opened
	useDefaults(t, o)
	rep, err := bench.RunAll(bm, nil, bench.RunOptions{Recorder: func(string) (bench.Recorder, func(bench.Summary) error, error) {
		return sp, func(bench.Summary) error { return nil }, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Schedulers[0]
	t.Logf("machine %s, summary %+v, notes %q, allocations %v, docker stats %v, samples with perf (%s) %v",
		rep.Machine, s, sp.pf.Notes(), sp.allocated, sp.stats, sp.mode, sp.perf)
	if sp.mode == "software" && (sp.pf.IPCEUnavailable() == "" || len(s.Notes) == 0) {
		t.Errorf("software counters, yet the platform does not say IPCE is unavailable (%q, notes %q)", sp.pf.IPCEUnavailable(), s.Notes)
	}
	if rep.Machine != sp.pf.Machine().Name || s.JobsCompleted != 2 {
		t.Errorf("report machine %q (platform %q), %d jobs completed", rep.Machine, sp.pf.Machine().Name, s.JobsCompleted)
	}
	for _, j := range bm.Jobs {
		if sp.allocated[j.ID] == 0 {
			t.Errorf("job %s was never given a CLOS", j.Name)
		}
		if sp.stats[j.ID] == 0 {
			t.Errorf("job %s: no Docker stats collected", j.Name)
		}
		// every sample read the job's perf counters (how many samples 4 s give depends
		// on the host's load: not asserted)
		if sp.samples[j.ID] == 0 || sp.perf[j.ID] != sp.samples[j.ID] {
			t.Errorf("job %s: %d of %d samples with perf counters", j.Name, sp.perf[j.ID], sp.samples[j.ID])
		}
	}
	if s.AllocMismatches != 0 || s.AllocationErrors != 0 {
		t.Errorf("%d mismatches, %d allocation errors", s.AllocMismatches, s.AllocationErrors)
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

// TestKilledMidRunReconciles runs the example in a child process as colo run does on
// mount A, kills it with SIGKILL while its containers run in their classes, runs a
// complete run on mount B, and checks that colo cleanup (Cleanup) then removes the
// killed run's containers, network and resctrl groups and gives A's system/default
// back exactly as it was, and that the next platform on A finds nothing left.
func TestKilledMidRunReconciles(t *testing.T) {
	e := newEnv(t)
	em, dir := mountEmulator(t)
	found, err := os.ReadFile(dir + "/schemata")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildRun$")
	cmd.Env = append(os.Environ(), "COLO_E2E_CHILD="+strings.Join([]string{dir, e.image, e.state}, ","))
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
	killed, _ := os.ReadFile(dir + "/schemata")
	if string(killed) == string(found) {
		t.Fatalf("the killed run left system/default as found (%q): nothing to restore", found)
	}
	// A complete run on another mount B, same state directory: A stays as the kill left it.
	_, dirB := mountEmulator(t)
	ob := e.options(nil)
	ob.ResctrlRoot = dirB
	bm := parseBench(t, smokeYAML)
	pb, err := New(bm, ob)
	if err != nil {
		t.Fatal(err)
	}
	startAllocated(t, pb, bm.Jobs[0], 0, 0x3, 0, 0xffc)
	if err := pb.Close(); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(dir + "/schemata"); string(now) != string(killed) {
		t.Fatalf("a run on mount B changed mount A's system/default: %q, was %q", now, killed)
	}
	// colo cleanup
	did, err := Cleanup(context.Background(), e.state, nil)
	t.Logf("cleanup: %q", did)
	if err != nil {
		t.Fatal(err)
	}
	if c, n := leftovers(t, e, cmd.Process.Pid); c != 0 || n != 0 {
		t.Errorf("after cleanup: %d containers, %d networks of the killed colo", c, n)
	}
	if gs := em.State().Groups; len(gs) != 1 {
		t.Errorf("after cleanup the emulator still has %d groups", len(gs))
	}
	if now, _ := os.ReadFile(dir + "/schemata"); string(now) != string(found) {
		t.Errorf("system/default after cleanup %q, want exactly %q", now, found)
	}
	o := e.options(nil)
	o.ResctrlRoot = dir
	pf, err := New(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	// only the killed run's leftovers count: other packages' tests kill colo runs on the
	// same dockerd, and this start-up reconcile rightly removes those too
	killedRun := regexp.MustCompile(fmt.Sprintf(`-%d\b`, cmd.Process.Pid))
	for _, n := range pf.Notes() {
		if strings.Contains(n, "earlier colo run") && killedRun.MatchString(n) {
			t.Errorf("cleanup left something for the next run: %q", n)
		}
	}
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	if c, n := leftovers(t, e); c != 0 || n != 0 {
		t.Errorf("%d containers and %d networks left", c, n)
	}
}

// TestChildRun is the body of the child process of TestKilledMidRunReconciles: the
// example through bench.RunAll, as colo run runs it.
func TestChildRun(t *testing.T) {
	env := os.Getenv("COLO_E2E_CHILD")
	if env == "" {
		t.Skip("helper process for TestKilledMidRunReconciles")
	}
	a := strings.Split(env, ",")
	bm := loadExample(t, a[0])
	useDefaults(t, Options{Image: a[1], StateDir: a[2]})
	_, err := bench.RunAll(bm, nil, bench.RunOptions{Warn: func(w string) { fmt.Println("warning:", w) }})
	fmt.Println("run:", err)
}
