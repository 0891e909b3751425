package linux

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"colo/bench"
	"colo/counter"
	"colo/perf/perftest"
	"colo/sched"
	"colo/workload"
	"colo/workload/docker"
	"colo/workload/docker/dockertest"
)

func TestSplitCommand(t *testing.T) {
	for in, want := range map[string]string{
		`stress random --mb 64`:         "stress|random|--mb|64",
		`  sh -c 'echo "a b"; exit 3' `: `sh|-c|echo "a b"; exit 3`,
		`say "it's" a\ b`:               `say|it's|a b`,
		``:                              ``,
	} {
		got, err := SplitCommand(in)
		if err != nil || strings.Join(got, "|") != want {
			t.Errorf("SplitCommand(%q) = %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`a "b`, `a 'b`, `a\`} {
		if _, err := SplitCommand(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

type testEnv struct {
	image string
	dock  *docker.Runtime
	state string
}

var (
	imageOnce sync.Once
	imageTag  string
	imageErr  error
)

// TestMain removes the colo image the tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	if imageTag != "" {
		if r, err := docker.New(context.Background(), docker.Options{}); err == nil {
			docker.RemoveImage(context.Background(), r.Client(), imageTag)
			r.Close()
		}
	}
	os.Exit(code)
}

func newEnv(t testing.TB) testEnv {
	t.Helper()
	r := dockertest.Require(t, docker.Options{})
	imageOnce.Do(func() {
		imageTag, imageErr = dockertest.BuildColoImage(context.Background(), r, dockertest.Name(t, "colo")+":test")
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return testEnv{image: imageTag, dock: r, state: t.TempDir()}
}

func (e testEnv) options(rdt RDT) Options {
	return Options{Image: e.image, StateDir: e.state, RDT: rdt, ResctrlRoot: "none", Logf: func(string, ...any) {}}
}

func parseBench(t testing.TB, y string) *bench.Benchmark {
	t.Helper()
	bm, err := bench.Parse("linux-test.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return bm
}

// leftovers counts the containers and networks created by this test process (or the
// given PIDs): other colo processes on the host may run their own.
func leftovers(t *testing.T, e testEnv, pids ...int) (int, int) {
	if len(pids) == 0 {
		pids = []int{os.Getpid()}
	}
	c, n := 0, 0
	for _, pid := range pids {
		l := map[string]string{labelPlatform: "linux", labelPID: strconv.Itoa(pid), labelPIDNS: pidNamespace()}
		cs, err := e.dock.List(context.Background(), l)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := e.dock.ListNetworks(context.Background(), l)
		if err != nil {
			t.Fatal(err)
		}
		c, n = c+len(cs), n+len(ns)
	}
	return c, n
}

// max_t only bounds a hang: the run ends when both 4 s jobs have (a loaded machine can take
// seconds to start a container, and a job still running at max_t counts as killed).
const smokeYAML = `benchmark:
  name: linux-smoke
  platform: linux
  max_t: 120
  scheduler:
    implementation: least-loaded
  data:
    frequency: 100
    perf: true
    docker: true
containers:
  thrasher:
    command: "stress random --mb 64 --duration 60s"
    num_cores: 1
    length: 4
  compute:
    command: "stress compute --duration 60s"
    num_cores: 1
    length: 4
`

// TestBenchmarkOnRealContainers runs a benchmark YAML with platform: linux through the
// orchestrator on real containers of the colo image: a cache thrasher and a compute
// loop, sampled every 100 ms, then checks nothing is left.
func TestBenchmarkOnRealContainers(t *testing.T) {
	e := newEnv(t)
	bm := parseBench(t, smokeYAML)
	// No max_t: the run ends when both jobs have (an event), however long a loaded host
	// takes to start containers (under stress-ng --cpu 4 the compute job was still
	// running at the 10 s max_t).
	bm.MaxT = 0
	pf := newPlatform(t, bm, e.options(nil))
	defer pf.Close()
	if bm.Machine != pf.Machine() || bm.Machine.Name != "host" {
		t.Fatalf("benchmark machine %v not the detected host", bm.Machine.Name)
	}
	s, err := sched.New("least-loaded", sched.Env{Machine: bm.Machine, Config: bm.Sched})
	if err != nil {
		t.Fatal(err)
	}
	mem := &bench.Memory{}
	// Docker stats are kept by the platform; look at them while the jobs run.
	var statsSeen [2]int
	res, err := bench.Run(bm, statsSpy{pf, &statsSeen}, s, bench.Options{Recorder: mem})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) > 0 {
		t.Errorf("warnings %q", res.Warnings)
	}
	for _, j := range res.Jobs {
		// sampled again and again (how often a loaded host manages is not asserted)
		if j.State != bench.StateCompleted || j.Samples < 3 {
			t.Errorf("job %s: %s (%s), %d samples", j.Name, j.State, j.Reason, j.Samples)
		}
	}
	// Software counters only on this VM: IPC is unavailable (NaN), never 0.
	nan := 0
	for _, smp := range mem.Samples {
		if math.IsNaN(smp.IPC) {
			nan++
		} else if smp.IPC == 0 {
			t.Fatalf("IPC reported as 0: %+v", smp)
		}
	}
	if len(mem.Samples) < 6 {
		t.Fatalf("%d samples", len(mem.Samples))
	}
	t.Logf("%d samples (%d without IPC), docker stats seen %v, notes %q", len(mem.Samples), nan, statsSeen, pf.Notes())
	for i, n := range statsSeen {
		if n == 0 {
			t.Errorf("job %d: no Docker stats sample", i)
		}
	}
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	if c, n := leftovers(t, e); c != 0 || n != 0 {
		t.Fatalf("%d containers and %d networks left behind", c, n)
	}
}

// statsSpy records the platform's Docker stats at every Read.
type statsSpy struct {
	*Platform
	seen *[2]int
}

func (s statsSpy) Read(id int) (counter.Reading, error) {
	c, err := s.Platform.Read(id)
	if st, n, e := s.Platform.DockerStats(id); e == nil && n > 0 && st.CPUAvailable && id < 2 {
		s.seen[id] = n
	}
	return c, err
}

// TestAllocationsAndCPUTime drives the platform directly: a job's threads follow it from
// its monitoring group into its class and back, schemata are written and read back, CPU
// time grows, and Close removes every group and restores system/default.
func TestAllocationsAndCPUTime(t *testing.T) {
	e := newEnv(t)
	rdt, o := emuOptions(t, e)
	bm := parseBench(t, smokeYAML)
	pf := newPlatform(t, bm, o)
	defer pf.Close()
	js := bm.Jobs[0]
	if err := pf.Check(js); err != nil {
		t.Fatal(err)
	}
	if err := pf.Start(js, []int{0}); err != nil {
		t.Fatal(err)
	}
	j, _ := pf.get(js.ID)
	tids, _ := j.cg.Threads()
	if len(tids) < 2 { // a Go program has several threads
		t.Fatalf("threads %v", tids)
	}
	mon := "mon_groups/" + pf.prefix + "j0"
	if got, _ := rdt.Tasks(mon); len(got) != len(tids) || pf.placement(js.ID).Mon != mon {
		t.Fatalf("monitoring group %s has %v, container threads %v (placement %+v)", mon, got, tids, pf.placement(js.ID))
	}
	c0, err := pf.Read(js.ID)
	if err != nil {
		t.Fatal(err)
	}
	// the container's CPU time grows (an event: a loaded host only delays it)
	c1 := c0
	for deadline := time.Now().Add(60 * time.Second); c1.CPUTime <= c0.CPUTime && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		c1, _ = pf.Read(js.ID)
	}
	if c1.CPUTime <= c0.CPUTime || c1.Instructions != 0 {
		t.Errorf("counters %+v then %+v", c0, c1)
	}
	// Without a hardware PMU (this VM) L2 misses are unavailable: said once, counted 0.
	if pf.IPCEUnavailable() != "" && (pf.L2MissesUnavailable() == "" || c1.L2Misses != 0) {
		t.Errorf("no PMU, yet L2 misses %v (unavailable: %q)", c1.L2Misses, pf.L2MissesUnavailable())
	}
	// Into a class with 4 ways and 50 % MBA on socket 0. One thread "exits" between
	// listing and writing (ESRCH): it is skipped, the others move, nothing fails.
	rdt.vanish(tids[0], true)
	before := len(pf.Notes()) // New's notes (e.g. IPCE unavailable without a PMU)
	if err := pf.SetAllocation(js.ID, 0, 0xf0, 50); err != nil {
		t.Fatal(err)
	}
	class := pf.placement(js.ID).Group
	// The Go runtime in the container may start threads meanwhile: those move too, so
	// the class must hold every listed thread but the vanished one (and may hold more).
	if got, _ := rdt.Tasks(class); class == "" || slices.Contains(got, tids[0]) || !containsAll(got, tids[1:]) {
		t.Errorf("class %q has %v, want every thread but the vanished %d of %v", class, got, tids[0], tids)
	}
	if n := pf.Notes()[before:]; len(n) != 0 {
		t.Errorf("a vanished thread is normal, yet noted: %q", n)
	}
	rdt.vanish(tids[0], false)
	if rdt.exists(mon) || !rdt.exists(class+"/mon_groups/"+pf.prefix+"j0") {
		t.Errorf("groups %v", rdt.groups("colo."))
	}
	a, err := pf.ReadAllocation(js.ID)
	if err != nil || a.Group != class || a.Mask != 0xf0 || a.MBA != 50 {
		t.Errorf("read back %+v %v", a, err)
	}
	// A rejected mask changes nothing.
	if err := pf.SetAllocation(js.ID, 0, 1<<20, 50); err == nil {
		t.Error("invalid mask accepted")
	}
	if a, _ := pf.ReadAllocation(js.ID); a.Mask != 0xf0 {
		t.Errorf("after rejected write %+v", a)
	}
	if err := pf.SetDefaultMask(0, 0x0f); err != nil {
		t.Fatal(err)
	}
	// Back to system/default.
	if err := pf.SetAllocation(js.ID, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if rdt.exists(class) || !rdt.exists(mon) {
		t.Errorf("groups after release %v", rdt.groups("colo."))
	}
	if a, _ := pf.ReadAllocation(js.ID); a.Group != "" || a.Mask != 0x0f {
		t.Errorf("default read back %+v", a)
	}
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	if g := rdt.groups("colo."); len(g) != 0 {
		t.Errorf("groups left: %v", g)
	}
	if m, _, _ := rdt.ReadSchemata("", 0); m != rdt.m.FullMask() {
		t.Errorf("system/default not restored: %#x", m)
	}
	if c, n := leftovers(t, e); c != 0 || n != 0 {
		t.Fatalf("%d containers and %d networks left behind", c, n)
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t)
	bm := parseBench(t, smokeYAML)
	o := e.options(nil)
	// a loaded host may take seconds to run a container that exits at once: watch long
	// enough that the exit is an event seen, not a race lost
	o.StartGrace = 10 * time.Second
	pf := newPlatform(t, bm, o)
	defer pf.Close()
	// A second platform on the same host runs beside the first (its own journal) and
	// leaves the first's things alone when it starts and ends.
	if pf2, err := New(nil, e.options(nil)); err != nil {
		t.Errorf("second platform: %v", err)
	} else if err := pf2.Close(); err != nil {
		t.Errorf("second platform's close: %v", err)
	}
	// Image missing: Check says how to build it.
	js := bm.Jobs[0]
	js.Image = "colo-missing:none"
	if err := pf.Check(js); err == nil || !strings.Contains(err.Error(), "colo image build --tag colo-missing:none") {
		t.Errorf("missing image: %v", err)
	}
	// A simulator workload model is not runnable here.
	if err := pf.Check(bench.JobSpec{Name: "m", Workload: "tip:3"}); err == nil || !strings.Contains(err.Error(), "simulator model") {
		t.Errorf("workload model: %v", err)
	}
	// A container exiting at once: a clear error, nothing left.
	js = bm.Jobs[0]
	js.Command = "stress no-such-kind"
	err := pf.Start(js, []int{0})
	if err == nil || !strings.Contains(err.Error(), "exited at once") {
		t.Errorf("exiting container: %v", err)
	}
	t.Logf("exit-at-once message: %v", err)
	// Allocation without resctrl says how to get one.
	js = bm.Jobs[1]
	if err := pf.Start(js, []int{1 % len(bm.Machine.Name)}); err != nil {
		t.Fatal(err)
	}
	if err := pf.SetAllocation(js.ID, 0, 0xf, 0); err == nil || !strings.Contains(err.Error(), "--resctrl-root") {
		t.Errorf("no-RDT allocation: %v", err)
	}
	// A container that ends on its own is reported once by Read.
	j, _ := pf.get(js.ID)
	e.dock.Client().ContainerKill(context.Background(), j.rid, "KILL")
	<-j.done
	if _, err := pf.Read(js.ID); err == nil || !strings.Contains(err.Error(), "ended before colo stopped it") {
		t.Errorf("first read after exit: %v", err)
	}
	if _, err := pf.Read(js.ID); err != nil {
		t.Errorf("second read after exit: %v", err)
	}
	pf.Close()
	if c, n := leftovers(t, e); c != 0 || n != 0 {
		t.Fatalf("%d containers and %d networks left behind", c, n)
	}
}

// A colo killed mid-run leaves containers, a network and resctrl groups; the next
// platform removes them and restores system/default.
func TestReconcileAfterCrash(t *testing.T) {
	e := newEnv(t)
	rdt, o := emuOptions(t, e)
	bm := parseBench(t, smokeYAML)
	pf, err := New(bm, o)
	if err != nil {
		t.Fatal(err)
	}
	startAllocated(t, pf, bm.Jobs[0], 0, 0x3, 0, 0xffc)
	// "Crash": the process dies, nothing is undone; its journal stays, and its PID
	// (this test's) now belongs to "another process" (another start time).
	kill9(t, pf)
	if c, _ := leftovers(t, e); c != 1 || len(rdt.groups("colo.")) != 2 {
		t.Fatalf("crash state: %d containers, groups %v", c, rdt.groups("colo."))
	}
	pf2, err := New(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer pf2.Close()
	if c, n := leftovers(t, e); c != 0 || n != 1 { // only pf2's own network
		t.Errorf("after reconcile: %d containers, %d networks", c, n)
	}
	if g := rdt.groups("colo."); len(g) != 0 {
		t.Errorf("groups left: %v", g)
	}
	if m, _, _ := rdt.ReadSchemata("", 0); m != rdt.m.FullMask() {
		t.Errorf("system/default %#x, want restored %#x", m, rdt.m.FullMask())
	}
	notes := strings.Join(pf2.Notes(), "\n")
	if !strings.Contains(notes, "left by an earlier colo run") || !strings.Contains(notes, "restored system/default") {
		t.Errorf("notes: %s", notes)
	}
}

// The shipped examples are valid benchmarks for this platform.
func TestExamplesParse(t *testing.T) {
	files, _ := filepath.Glob("../../examples/linux/*.yaml")
	if len(files) < 2 {
		t.Fatalf("examples: %v", files)
	}
	for _, f := range files {
		bm, err := bench.Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if bm.Platform != "linux" || len(bm.Jobs) != 2 || bm.MaxT > 2*time.Minute {
			t.Errorf("%s: platform %s, %d jobs, max_t %v", f, bm.Platform, len(bm.Jobs), bm.MaxT)
		}
		for _, j := range bm.Jobs {
			if args, err := SplitCommand(j.Command); err != nil || len(args) == 0 || args[0] != "stress" {
				t.Errorf("%s: job %s command %q", f, j.Name, j.Command)
			}
		}
	}
}

// TestProcessRuntimePlatform runs the smoke benchmark with plain processes in their own
// cgroups (a host without Docker): the jobs run colo's own workloads from a static colo.
func TestProcessRuntimePlatform(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the process runtime needs root")
	}
	bin, cleanup, err := docker.StaticColo(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	bm := parseBench(t, strings.Replace(smokeYAML, "length: 4", "length: 2", 2))
	bm.MaxT = 0 // the run ends when both jobs have (an event), not at a wall-clock bound
	state := t.TempDir()
	pf := newPlatform(t, bm, Options{Runtime: "process", Self: bin, StateDir: state, ResctrlRoot: "none", Logf: func(string, ...any) {}})
	defer pf.Close()
	s, err := sched.New("least-loaded", sched.Env{Machine: bm.Machine, Config: bm.Sched})
	if err != nil {
		t.Fatal(err)
	}
	var seen [2]int
	res, err := bench.Run(bm, statsSpy{pf, &seen}, s, bench.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range res.Jobs {
		if j.State != bench.StateCompleted || j.Samples < 3 {
			t.Errorf("job %s: %s (%s), %d samples", j.Name, j.State, j.Reason, j.Samples)
		}
	}
	if seen[0] == 0 || seen[1] == 0 {
		t.Errorf("runtime stats seen %v", seen)
	}
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	// Nothing left: no state files, no cgroups.
	if left, _ := filepath.Glob(filepath.Join(state, "process", "*.json")); len(left) != 0 {
		t.Errorf("state files left: %v", left)
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, m := range workload.Mounts(mi) {
		if ents, _ := filepath.Glob(filepath.Join(m.Dir, "colo", "colo-*")); len(ents) != 0 {
			t.Errorf("cgroups left: %v", ents)
		}
	}
}

// TestHardwarePathThroughPlatform runs real containers with the PMU faked at perf's
// system-call boundary: events count at known rates and are on the PMU a quarter of the
// time, so the samples' IPC and IPCE must come out exactly as the rates say (multiplex
// scaling through the platform and the orchestrator's collector).
func TestHardwarePathThroughPlatform(t *testing.T) {
	e := newEnv(t)
	H, R := uint32(unix.PERF_TYPE_HARDWARE), uint32(unix.PERF_TYPE_RAW)
	pmu := perftest.New(map[perftest.Key]float64{
		{Type: H, Config: unix.PERF_COUNT_HW_INSTRUCTIONS}:        2.0e9,
		{Type: H, Config: unix.PERF_COUNT_HW_CPU_CYCLES}:          2.5e9,
		{Type: H, Config: unix.PERF_COUNT_HW_CACHE_REFERENCES}:    4e7,
		{Type: H, Config: unix.PERF_COUNT_HW_CACHE_MISSES}:        1e7,
		{Type: H, Config: unix.PERF_COUNT_HW_BRANCH_INSTRUCTIONS}: 3e8,
		{Type: H, Config: unix.PERF_COUNT_HW_BRANCH_MISSES}:       3e6,
		{Type: R, Config: 0x40004a3}:                              1.0e9, // cycle_activity.stalls_total (Ice Lake-SP)
		{Type: R, Config: 0x60006a3}:                              0.4e9, // cycle_activity.stalls_l3_miss
		{Type: R, Config: 0x1ff1}:                                 2e7,   // l2_lines_in.all (Ice Lake-SP L2 misses)
	}, 0.25)
	// The fake PMU counts by its clock. One sample reads the events one after another; on
	// a loaded host those reads can be far apart, which would skew the ratios: its clock
	// moves once per sample (PerSample), so the reads of one sample see one instant.
	pmu.PerSample = true
	// The jobs' length is only an upper bound: the run stops once every job has 3 samples
	// after its first (an event, however slowly a loaded host samples).
	bm := parseBench(t, strings.NewReplacer("length: 4", "length: 100", "max_t: 10", "max_t: 200").Replace(smokeYAML))
	o := e.options(nil)
	o.PerfSys, o.Microarch = pmu, "icelake-sp"
	pf := newPlatform(t, bm, o)
	defer pf.Close()
	if why := pf.IPCEUnavailable(); why != "" {
		t.Errorf("with cycles and Ice Lake's stall events the platform says IPCE is unavailable: %s", why)
	}
	if why := pf.L2MissesUnavailable(); why != "" {
		t.Errorf("with Ice Lake's L2_LINES_IN.ALL the platform says L2 misses are unavailable: %s", why)
	}
	s, _ := sched.New("least-loaded", sched.Env{Machine: bm.Machine, Config: bm.Sched})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	mem := &samplesThenStop{Memory: &bench.Memory{}, need: 3, jobs: len(bm.Jobs), stop: stop, n: map[int]int{}}
	if _, err := bench.Run(bm, pf, s, bench.Options{Recorder: mem, Ctx: ctx}); err != nil && !errors.Is(err, bench.ErrInterrupted) {
		t.Fatal(err)
	}
	n := 0
	first := map[int]bool{}
	for _, smp := range mem.Samples {
		// The first sample of a job covers its start, before its counters opened one
		// after another (each fd has its own start time): skip it.
		if !first[smp.Job] {
			first[smp.Job] = true
			continue
		}
		n++
		if math.Abs(smp.IPC/0.8-1) > 1e-3 || math.Abs(smp.IPCE/0.6-1) > 1e-3 || math.Abs(smp.StallsL3Miss/smp.StallsTotal/0.4-1) > 1e-3 {
			t.Fatalf("sample %+v: want IPC 0.8, IPCE 0.6 (rates 2.0e9/2.5e9, stalls 1.0e9)", smp)
		}
	}
	if n < 3*len(bm.Jobs) {
		t.Fatalf("%d samples after the jobs' first, want the %d the run waited for", n, 3*len(bm.Jobs))
	}
	// On the PMU a quarter of the time: only the enabled/running scaling recovers the
	// true 2e9 instructions per second.
	js := bm.Jobs[0]
	if err := pf.Start(js, []int{0}); err != nil {
		t.Fatal(err)
	}
	c0, _ := pf.Read(js.ID)
	t0 := pmu.Instant()
	c1, _ := pf.Read(js.ID)               // the next sample: the PMU's clock moves
	dt := pmu.Instant().Sub(t0).Seconds() // the PMU's clock, as the counters saw it
	if r := (c1.Instructions - c0.Instructions) / dt; r < 1.8e9 || r > 2.2e9 {
		t.Errorf("instruction rate %.3g/s, want 2e9/s", r)
	}
	if r := (c1.L2Misses - c0.L2Misses) / dt; r < 1.8e7 || r > 2.2e7 {
		t.Errorf("L2-miss rate %.3g/s, want 2e7/s (the fake PMU's l2_lines_in.all)", r)
	}
	pf.Close()
	if k := pmu.OpenFDs(); k != 0 {
		t.Errorf("%d perf descriptors left open", k)
	}
}

// samplesThenStop records a run and stops it once each of its jobs has need samples
// after its first.
type samplesThenStop struct {
	*bench.Memory
	need, jobs int
	stop       func()
	n          map[int]int // samples per job
}

func (r *samplesThenStop) Sample(s bench.SampleRecord) error {
	r.n[s.Job]++
	done := len(r.n) == r.jobs
	for _, k := range r.n {
		done = done && k > r.need
	}
	if done {
		r.stop()
	}
	return r.Memory.Sample(s)
}

func containsAll(have, want []int) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
