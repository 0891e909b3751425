package simplatform

import (
	"strings"
	"testing"
	"time"

	"colo/bench"
	"colo/internal/machinetest"
	"colo/platform"
	"colo/sched"
	"colo/sim"
)

func TestWorkloadFromCommand(t *testing.T) {
	cases := map[string]string{
		"/neighbor --duration 3600 --buffer-size 6MB --pattern random --hugepages hugetlb-1g": sim.Neighbor(6<<20, sim.Page1G).Name,
		"/neighbor --buffer-size 6MB --pattern random --hugepages hugetlb-2m":                 sim.Neighbor(6<<20, sim.Page2M).Name,
		"7z a -mx=2 -mmt=2 /tmp/out.7z /data/blob":                                            sim.SevenZip(2, 2).Name,
		"stress-ng --matrix-3d 1 --matrix-3d-size 96 --timeout 0":                             sim.StressMatrix3D(96).Name,
		"stress-ng --matrix-3d 1":                                                             sim.StressMatrix3D(128).Name,
		"stress-ng --tsearch 2 --tsearch-size 131072":                                         sim.StressTsearch(131072).Name,
	}
	for cmd, want := range cases {
		w, err := Workload(bench.JobSpec{Command: cmd, Cores: 2})
		if err != nil || w.Name != want || w.Threads != 2 {
			t.Errorf("%q -> %q (threads %d), %v; want %q", cmd, w.Name, w.Threads, err, want)
		}
	}
	for spec, want := range map[string]string{"neighbor:4MB:1g": sim.Neighbor(4<<20, sim.Page1G).Name, "7zip:5": sim.SevenZip(5, 1).Name, "tsearch:1048576": sim.StressTsearch(1 << 20).Name} {
		if w, err := Workload(bench.JobSpec{Workload: spec}); err != nil || w.Name != want {
			t.Errorf("%q -> %q, %v", spec, w.Name, err)
		}
	}
	// phases: models in turn, looping
	w, err := Workload(bench.JobSpec{Workload: "cpu@5|mlr:8M@2.5", Cores: 2})
	if err != nil || len(w.Phases) != 2 || !w.Loop || w.Phases[0].Duration != 5*time.Second || w.Phases[1].Duration != 2500*time.Millisecond || w.Threads != 2 {
		t.Errorf("phased workload: %+v, %v", w, err)
	}
	for _, bad := range []bench.JobSpec{{Command: "postgres -D /data"}, {Workload: "neighbor:lots"}, {Command: "stress-ng --futex 1"}, {},
		{Workload: "cpu@0"}, {Workload: "cpu@1e300"}, {Workload: "cpu|mlr:8M@2"}, {Workload: "nosuch@3"}} {
		if _, err := Workload(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestAllocationsGoThroughResctrl: masks reach the simulator only through the emulator;
// one group serves one job per socket; releasing returns the task to system/default and
// Close leaves no colo group behind.
func TestAllocationsGoThroughResctrl(t *testing.T) {
	p, err := New(machinetest.Get(t, "icx-4314-2s"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 12 priority-style jobs, 6 per socket: more than the 7 usable CLOSIDs if each
	// needed its own group
	for i := 0; i < 12; i++ {
		cpu := i / 2
		if i%2 == 1 {
			cpu += 16
		}
		if err := p.Start(bench.JobSpec{ID: i, Workload: "neighbor:6MB:1g", Cores: 1}, []int{cpu}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 12; i++ {
		if err := p.SetAllocation(i, i%2, 0x1<<uint(i/2), 10); err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	if ctrlGroups(p) != 6 {
		t.Fatalf("%d groups for 6 jobs per socket", ctrlGroups(p))
	}
	for i := 0; i < 12; i++ {
		a, err := p.ReadAllocation(i)
		if err != nil || a.Mask != 0x1<<uint(i/2) || a.MBA != 10 || !strings.HasPrefix(a.Group, DefaultPrefix) {
			t.Fatalf("job %d read back %+v %v", i, a, err)
		}
		// the simulator runs the job in the CLOS resctrl gave its group
		cl := p.emu.State()
		g, _ := cl.Group(a.Group)
		masks, mba := p.sm.CLOS(g.CLOSID)
		if masks[i%2] != a.Mask || mba[i%2] != 10 {
			t.Fatalf("job %d: simulator CLOS %d has %#x/%d", i, g.CLOSID, masks[i%2], mba[i%2])
		}
	}
	if err := p.SetDefaultMask(0, 0xfc0); err != nil {
		t.Fatal(err)
	}
	if m, _ := p.sm.CLOS(0); m[0] != 0xfc0 {
		t.Fatalf("default CLOS mask %#x", m[0])
	}
	if err := p.SetAllocation(0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if a, _ := p.ReadAllocation(0); a.Group != "" || a.Mask != 0 {
		t.Fatalf("released job reads %+v", a)
	}
	// two more jobs on socket 0 asking for one mask and MBA share one group (a cluster)
	for _, i := range []int{20, 21} {
		if err := p.Start(bench.JobSpec{ID: i, Workload: "neighbor:6MB:1g", Cores: 1}, []int{i - 10}); err != nil {
			t.Fatal(err)
		}
		if err := p.SetAllocation(i, 0, 0x600, 20); err != nil {
			t.Fatal(err)
		}
	}
	a20, _ := p.ReadAllocation(20)
	a21, _ := p.ReadAllocation(21)
	if a20.Group != a21.Group || a20.Mask != 0x600 || ctrlGroups(p) != 6 {
		t.Fatalf("cluster: %+v %+v, %d groups", a20, a21, ctrlGroups(p))
	}
	// one of them changes: it leaves the shared group, the other keeps its mask
	if err := p.SetAllocation(21, 0, 0x400, 20); err != nil {
		t.Fatal(err)
	}
	a20, _ = p.ReadAllocation(20)
	a21, _ = p.ReadAllocation(21)
	if a20.Group == a21.Group || a20.Mask != 0x600 || a21.Mask != 0x400 {
		t.Fatalf("after the change: %+v %+v", a20, a21)
	}
	// no CLOSID left for a seventh distinct allocation: a clean error, the job stays in
	// system/default
	if err := p.Start(bench.JobSpec{ID: 22, Workload: "neighbor:6MB:1g", Cores: 1}, []int{13}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetAllocation(22, 0, 0x100, 20); err == nil || !strings.Contains(err.Error(), "CLOSID") {
		t.Fatalf("8th CLOSID: %v", err)
	}
	if a, _ := p.ReadAllocation(22); a.Group != "" {
		t.Fatalf("job 22 reads %+v after a failed allocation", a)
	}
	if err := p.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	if c, _ := p.Read(3); c.Cycles <= 0 || c.Instructions <= 0 || c.StallsTotal <= 0 {
		t.Fatalf("counters %+v", c)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, g := range p.emu.State().Groups {
		if strings.HasPrefix(g.Path, DefaultPrefix) {
			t.Fatalf("group %s left behind", g.Path)
		}
	}
	if err := p.SetAllocation(1, 1, 0x3, 10); err == nil {
		t.Fatal("allocation for a stopped job accepted")
	}
}

// TestThesisDirection runs the High Utilization scenario (Table 5.1) for its full hour
// under both schedulers: priority IPCE must rise by tens of percent, batch IPCE fall by
// little, global IPCE rise (seed000.md §4.4). The simulator is not tuned to the thesis.
func TestThesisDirection(t *testing.T) {
	if testing.Short() {
		t.Skip("one simulated hour, twice")
	}
	bm, err := bench.Load("../../examples/thesis/high-utilization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := bench.RunAll(bm, []string{"least-loaded", "dynamic"}, bench.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ll, dy, ch := rep.Schedulers[0], rep.Schedulers[1], rep.Comparison[0]
	t.Logf("least-loaded %+v\ndynamic %+v\nchange %+v", ll, dy, ch)
	if ch.PriorityIPCE < 20 || ch.BatchIPCE > 0 || ch.BatchIPCE < -3 || ch.GlobalIPCE <= 0 {
		t.Fatalf("direction: %+v", ch)
	}
	if dy.AllocMismatches != 0 || dy.AllocationErrors != 0 || dy.Probes == 0 || dy.TimeOverTarget <= ll.TimeOverTarget {
		t.Fatalf("dynamic %+v", dy)
	}
	if dy.VirtualSeconds != 3600 || ll.VirtualSeconds != 3600 {
		t.Fatalf("virtual time %v %v", ll.VirtualSeconds, dy.VirtualSeconds)
	}
	// same trace, same seed: same numbers
	again, err := bench.RunAll(bm, []string{"dynamic"}, bench.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := again.Schedulers[0], dy
	if a.PriorityIPCE != b.PriorityIPCE || a.BatchIPCE != b.BatchIPCE || a.Samples != b.Samples {
		t.Fatalf("not deterministic: %+v vs %+v", a, b)
	}
}

func TestFailedProbeOnSim(t *testing.T) {
	// 10 s segments: the 8 s job stops in the middle of its first segment, the probe
	// fails, and the job has run (and completed) without an allocation afterwards
	y := `benchmark:
  max_t: 40
  scheduler: {implementation: dynamic, prober: {probing_t: 60}}
containers:
  p: {workload: "neighbor:6MB:1g", priority: true, ipce: 90, length: 8}
  b: {workload: "matrix-3d:128", num_cores: 2}
`
	bm, err := bench.Parse("p.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sched.New("dynamic", sched.Env{Machine: bm.Machine, Config: bm.Sched})
	p, _ := New(bm.Machine, sim.Options{})
	res, err := bench.Run(bm, p, s, bench.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sum := bench.Summarize(res, 0)
	if sum.Probes != 1 || sum.ProbesFailed != 1 || res.Jobs[0].State != bench.StateCompleted || sum.AllocMismatches != 0 {
		t.Fatalf("%+v %+v", sum, res.Jobs[0])
	}
}

// BenchmarkThesisHour runs each 1-hour Table 5.1 scenario under the dynamic scheduler
// (no run directory) and reports virtual seconds per wall second and heap bytes
// allocated per collector sample.
func BenchmarkThesisHour(b *testing.B) {
	for _, sc := range []string{"low-demand", "high-utilization", "exceeding-demand"} {
		b.Run(sc, func(b *testing.B) {
			bm, err := bench.Load("../../examples/thesis/" + sc + ".yaml")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			samples := 0
			start := time.Now()
			for i := 0; i < b.N; i++ {
				rep, err := bench.RunAll(bm, []string{"dynamic"}, bench.RunOptions{})
				if err != nil {
					b.Fatal(err)
				}
				samples += rep.Schedulers[0].Samples
			}
			el := time.Since(start).Seconds()
			b.ReportMetric(3600*float64(b.N)/el, "virtual-s/s")
			b.ReportMetric(float64(samples)/float64(b.N), "samples/run")
		})
	}
}

// CPU quota and the L2-miss counter through the platform: a job at quota 0.5 runs half the
// cycles and instructions of its twin at the same IPC and is charged half the CPU time; the
// L2 misses are carried into the counters (MLOAD: APKI 62 per kilo-instruction); the quota
// is a platform.QuotaSetter capability; a bad quota changes nothing.
func TestQuotaAndL2Misses(t *testing.T) {
	p, err := New(machinetest.Get(t, "icx-4314-2s"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var _ platform.QuotaSetter = p
	if why := platform.CPUQuotaUnavailable(p); why != "" {
		t.Fatalf("the sim platform has CPU quotas: %q", why)
	}
	for id, core := range map[int]int{1: 0, 2: 16} {
		if err := p.Start(bench.JobSpec{ID: id, Name: "m", Workload: "mload:60M", Cores: 1}, []int{core}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.SetQuota(2, 0.5); err != nil {
		t.Fatal(err)
	}
	if err := p.SetQuota(2, 1.5); err == nil {
		t.Fatal("quota 1.5 accepted")
	}
	if err := p.SetQuota(9, 0.5); err == nil {
		t.Fatal("quota of a job that does not run accepted")
	}
	if err := p.Advance(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	a, _ := p.Read(1)
	b, _ := p.Read(2)
	if r := b.Cycles / a.Cycles; r < 0.499 || r > 0.501 {
		t.Errorf("cycles at quota 0.5: %.4f of full", r)
	}
	if ia, ib := a.Instructions/a.Cycles, b.Instructions/b.Cycles; ib < 0.999*ia || ib > 1.001*ia {
		t.Errorf("IPC %.4f at quota 0.5, %.4f without", ib, ia)
	}
	if b.CPUTime != time.Second || a.CPUTime != 2*time.Second {
		t.Errorf("CPU time %v at quota 0.5, %v without", b.CPUTime, a.CPUTime)
	}
	if l2 := 1000 * a.L2Misses / a.Instructions; l2 < 61.9 || l2 > 62.1 || a.LLCMisses > a.L2Misses {
		t.Errorf("L2 MPKI %.3f (want MLOAD's 62), LLC misses %.0f, L2 misses %.0f", l2, a.LLCMisses, a.L2Misses)
	}
}

// ctrlGroups counts the platform's control groups on its emulated mount.
func ctrlGroups(p *Platform) int {
	n := 0
	for _, g := range p.emu.State().Groups {
		if !g.IsMon && strings.HasPrefix(g.Path, DefaultPrefix) {
			n++
		}
	}
	return n
}

// counted is platform sim counting its control groups after every allocation.
type counted struct {
	*Platform
	most int
}

func (c *counted) SetAllocation(id, socket int, mask uint64, mba int) error {
	err := c.Platform.SetAllocation(id, socket, mask, mba)
	c.most = max(c.most, ctrlGroups(c.Platform))
	return err
}

var lastCounted *counted

func init() {
	bench.RegisterPlatform("sim-counted", func(bm *bench.Benchmark) (bench.Platform, error) {
		p, err := New(bm.Machine, sim.Options{Seed: bm.Seed})
		lastCounted = &counted{Platform: p}
		return lastCounted, err
	})
}

// TestExceedingDemandStaysWithinCLOSIDs runs the thesis's exceeding-demand scenario under
// dynamic: the run never holds more control groups than icx-4314-2s's CLOSIDs allow (8,
// MBA's num_closids, one of them system/default), and no allocation fails for want of
// one: the accountant sees the budget (sched.Observation.CLOS).
func TestExceedingDemandStaysWithinCLOSIDs(t *testing.T) {
	bm, err := bench.Load("../../examples/thesis/exceeding-demand.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bm.Platform = "sim-counted"
	rep, err := bench.RunAll(bm, []string{"dynamic"}, bench.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Schedulers[0]
	limit := min(bm.Machine.CAT.NumCLOSIDs, bm.Machine.MBA.NumCLOSIDs) - 1
	t.Logf("most control groups at once %d (limit %d); %+v", lastCounted.most, limit, s)
	if lastCounted.most == 0 || lastCounted.most > limit || s.AllocationErrors != 0 || s.Probes == 0 {
		t.Fatalf("%d control groups at once (limit %d), %d allocation errors, %d probes", lastCounted.most, limit, s.AllocationErrors, s.Probes)
	}
	if b := lastCounted.CLOSBudget(); len(b) != 2 || b[0].Groups != limit {
		t.Fatalf("budget %+v", b)
	}
}
