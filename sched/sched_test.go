package sched

import (
	"math/bits"
	"testing"
	"time"

	"colo/internal/machinetest"
	"colo/machine"
	"colo/probe"
)

func icx(t *testing.T) *machine.Profile {
	t.Helper()
	return machinetest.Get(t, "icx-4314-2s")
}

func freeAll(m *machine.Profile) [][]int {
	out := make([][]int, m.Sockets)
	for c := 0; c < m.Cores(); c++ {
		out[m.SocketOfCore(c)] = append(out[m.SocketOfCore(c)], c)
	}
	return out
}

func TestLeastLoadedFIFO(t *testing.T) {
	m := icx(t)
	s, err := New("least-loaded", Env{Machine: m, Config: DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	free := freeAll(m)
	free[0] = free[0][:3] // socket 0: 3 free cores, socket 1: 16
	obs := &Observation{FreeCPUs: free, Queue: []Job{
		{ID: 1, Cores: 2}, {ID: 2, Cores: 16}, {ID: 3, Cores: 1},
	}}
	d := s.Tick(obs)
	// job 1 goes to the less committed socket 1; job 2 (16 cores) no longer fits anywhere:
	// strict FIFO means job 3 waits behind it although it would fit.
	if len(d.Place) != 1 || d.Place[0] != (Placement{Job: 1, Socket: 1}) {
		t.Fatalf("placements %+v", d.Place)
	}
	if len(d.Allocate) != 0 || len(d.Probe) != 0 {
		t.Fatal("least-loaded must not use RDT")
	}
	// a 17-core job can never fit on a 16-core socket: rejected, the queue moves on
	d = s.Tick(&Observation{FreeCPUs: freeAll(m), Queue: []Job{{ID: 4, Cores: 17}, {ID: 5, Cores: 1}}})
	if len(d.Reject) != 1 || d.Reject[0].Job != 4 || len(d.Place) != 1 || d.Place[0].Job != 5 {
		t.Fatalf("reject %+v place %+v", d.Reject, d.Place)
	}
}

func dynCfg() Config {
	c := DefaultConfig()
	c.Implementation = "dynamic"
	c.RDT = true
	return c
}

func running(j Job, socket int, started time.Duration, last *Sample) Running {
	return Running{Job: j, Socket: socket, Started: started, Last: last}
}

func TestDynamicProbeLifecycle(t *testing.T) {
	m := icx(t)
	s, err := New("dynamic", Env{Machine: m, Config: dynCfg()})
	if err != nil {
		t.Fatal(err)
	}
	d := s.(*Dynamic)
	p := Job{ID: 1, Cores: 1, Priority: true, IPCETarget: 0.9}
	out := d.Tick(&Observation{Now: 0, FreeCPUs: freeAll(m), Queue: []Job{p}})
	if len(out.Place) != 1 || len(out.Probe) != 0 {
		t.Fatalf("t=0: %+v (probe only after warm-up)", out)
	}
	sock := out.Place[0].Socket
	run := []Running{running(p, sock, 0, nil)}
	out = d.Tick(&Observation{Now: 2 * time.Second, FreeCPUs: freeAll(m), Running: run})
	if len(out.Probe) != 0 {
		t.Fatal("probe before the 3 s warm-up")
	}
	out = d.Tick(&Observation{Now: 3 * time.Second, FreeCPUs: freeAll(m), Running: run})
	if len(out.Probe) != 1 {
		t.Fatalf("no probe after warm-up: %+v", out)
	}
	pr := out.Probe[0]
	// buffer = max_l3 4 ways + max_mem 20 %, best fit from way 0
	if pr.Buffer != 0x00f || pr.MaxMBA != 20 || len(out.Allocate) != 1 || out.Allocate[0].Mask != 0x00f {
		t.Fatalf("probe request %+v alloc %+v", pr, out.Allocate)
	}
	res := probe.Result{Combo: probe.Combo{Ways: 3, MBA: 10}, IPCE: 0.92, Met: true}
	out = d.Tick(&Observation{Now: 16 * time.Second, FreeCPUs: freeAll(m), Running: run,
		ProbeResults: []ProbeResult{{Job: 1, Result: res}}})
	if len(out.Allocate) != 1 || out.Allocate[0].Mask != 0x007 || out.Allocate[0].MBA != 10 {
		t.Fatalf("result allocation %+v", out.Allocate)
	}
	if d.acct.FreeWays(sock) != 8 || d.acct.FreeMBA(sock) != 80 {
		t.Fatalf("accountant after shrink: %d ways %d%%", d.acct.FreeWays(sock), d.acct.FreeMBA(sock))
	}
	// the job finishes: everything is relinquished
	d.Tick(&Observation{Now: 20 * time.Second, FreeCPUs: freeAll(m), Finished: []int{1}})
	if d.acct.FreeWays(sock) != 11 || d.acct.FreeMBA(sock) != 90 {
		t.Fatal("finished job kept its resources")
	}
}

func TestDynamicFailedProbeLeavesJobUnallocated(t *testing.T) {
	m := icx(t)
	d, _ := NewDynamic(Env{Machine: m, Config: dynCfg()})
	p := Job{ID: 7, Cores: 2, Priority: true, IPCETarget: 0.9}
	out := d.Tick(&Observation{Now: 0, FreeCPUs: freeAll(m), Queue: []Job{p}})
	run := []Running{running(p, out.Place[0].Socket, 0, nil)}
	d.Tick(&Observation{Now: 5 * time.Second, FreeCPUs: freeAll(m), Running: run})
	out = d.Tick(&Observation{Now: 6 * time.Second, FreeCPUs: freeAll(m), Running: run,
		ProbeResults: []ProbeResult{{Job: 7, Result: probe.Result{Err: "no IPCE samples"}}}})
	if len(out.Allocate) != 1 || out.Allocate[0].Mask != 0 || out.Allocate[0].Job != 7 {
		t.Fatalf("failed probe: %+v (want the job back in system/default)", out.Allocate)
	}
	if d.acct.FreeWays(0)+d.acct.FreeWays(1) != 22 {
		t.Fatal("buffer not released after a failed probe")
	}
	// the job keeps running: no rejection, no migration, and no new probe
	out = d.Tick(&Observation{Now: 30 * time.Second, FreeCPUs: freeAll(m), Running: run})
	if len(out.Reject)+len(out.Migrate)+len(out.Probe) != 0 {
		t.Fatalf("after failure: %+v", out)
	}
}

func TestDynamicConsolidatesThenBlocks(t *testing.T) {
	m := icx(t)
	d, _ := NewDynamic(Env{Machine: m, Config: dynCfg()})
	// fragment socket 0 by hand: groups at ways 0-2 and 5-7 → free 3-4, 8-10 (5 free, runs 2 and 3)
	d.acct.Allocate("job-100", 0, 3, 10)
	d.acct.Allocate("job-101", 0, 2, 10)
	d.acct.Allocate("job-102", 0, 3, 10)
	d.acct.Release("job-101")
	d.jobs[100] = &djob{Job: Job{ID: 100, Priority: true}, socket: 0, state: allocated}
	d.jobs[102] = &djob{Job: Job{ID: 102, Priority: true}, socket: 0, state: allocated}
	// socket 1 has no free cores, so the new priority job lands on socket 0
	free := freeAll(m)
	free[1] = nil
	p := Job{ID: 1, Cores: 1, Priority: true}
	run := []Running{running(Job{ID: 100, Priority: true}, 0, 0, nil), running(Job{ID: 102, Priority: true}, 0, 0, nil)}
	out := d.Tick(&Observation{Now: 0, FreeCPUs: free, Running: run, Queue: []Job{p}})
	if out.Place[0].Socket != 0 {
		t.Fatal("placement")
	}
	run = append(run, running(p, 0, 0, nil))
	out = d.Tick(&Observation{Now: 4 * time.Second, FreeCPUs: free, Running: run})
	if len(out.Probe) != 1 || out.ConsolidatedWays == 0 {
		t.Fatalf("expected consolidation then a probe: %+v", out)
	}
	if out.Allocate[0].Reason != "consolidate" || out.Allocate[0].Job != 102 || out.Allocate[0].Mask != 0x038 {
		t.Fatalf("moves %+v", out.Allocate)
	}
	if out.Probe[0].Buffer != 0x3c0 {
		t.Fatalf("buffer %#x, want 0x3c0 after packing", out.Probe[0].Buffer)
	}
	if err := d.acct.Check(); err != nil {
		t.Fatal(err)
	}
	// a second priority job on socket 0 finds 1 free way: its probe blocks the queue
	q := Job{ID: 2, Cores: 1, Priority: true}
	d.Tick(&Observation{Now: 5 * time.Second, FreeCPUs: free, Running: run, Queue: []Job{q}})
	run = append(run, running(q, 0, 5*time.Second, nil))
	out = d.Tick(&Observation{Now: 10 * time.Second, FreeCPUs: free, Running: run})
	if len(out.Probe) != 0 || len(d.qalloc) != 1 {
		t.Fatalf("infeasible probe must wait: %+v", out)
	}
}

func TestDynamicBatchLeastStallLoadAndRebalance(t *testing.T) {
	m := icx(t)
	cfg := dynCfg()
	d, _ := NewDynamic(Env{Machine: m, Config: cfg})
	free := freeAll(m)
	// three batch jobs arrive together: with no data each counts 100, so they alternate
	out := d.Tick(&Observation{Now: 0, FreeCPUs: free, Queue: []Job{{ID: 1, Cores: 1}, {ID: 2, Cores: 1}, {ID: 3, Cores: 1}}})
	if len(out.Place) != 3 || out.Place[0].Socket == out.Place[1].Socket || out.Place[2].Socket != out.Place[0].Socket {
		t.Fatalf("placements %+v", out.Place)
	}
	s0 := out.Place[0].Socket
	s1 := 1 - s0
	heavy := &Sample{StallsTotal: 100, StallsL3Miss: 60, Cycles: 200} // 60 % L3-miss stalls
	light := &Sample{StallsTotal: 100, StallsL3Miss: 5, Cycles: 200}
	run := []Running{
		running(Job{ID: 1, Cores: 1}, s0, 0, heavy),
		running(Job{ID: 2, Cores: 1}, s1, 0, light),
		running(Job{ID: 3, Cores: 1}, s0, 0, heavy),
	}
	// after the 3 s warm-up the loads are 120 vs 5: move the youngest of s0 (job 3; same
	// age as job 1, so the higher ID) to s1 → 60 vs 65, gain 110
	out = d.Tick(&Observation{Now: 3 * time.Second, FreeCPUs: free, Running: run})
	if len(out.Migrate) != 1 || out.Migrate[0] != (Migration{Job: 3, Socket: s1}) {
		t.Fatalf("rebalance %+v", out.Migrate)
	}
	// a new batch job goes to the socket with the least stall load (s0: 60 < s1: 65)
	run[2].Socket = s1
	out = d.Tick(&Observation{Now: 4 * time.Second, FreeCPUs: free, Running: run, Queue: []Job{{ID: 4, Cores: 2}}})
	if len(out.Place) != 1 || out.Place[0].Socket != s0 {
		t.Fatalf("batch placement %+v", out.Place)
	}
}

func TestRegistry(t *testing.T) {
	names := Names()
	for _, want := range []string{"default", "dynamic", "least-loaded"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("%s not registered: %v", want, names)
		}
	}
	if _, err := New("nope", Env{Machine: icx(t)}); err == nil {
		t.Error("unknown scheduler accepted")
	}
	cfg := dynCfg()
	cfg.Options = map[string]any{"foo": 1}
	if _, err := New("dynamic", Env{Machine: icx(t), Config: cfg}); err == nil {
		t.Error("unknown option accepted")
	}
}

func TestDynamicDefragmentAfterRelease(t *testing.T) {
	m := icx(t)
	for _, defrag := range []bool{false, true} {
		cfg := dynCfg()
		cfg.Defragment = defrag
		d, _ := NewDynamic(Env{Machine: m, Config: cfg})
		d.acct.Allocate("job-1", 0, 2, 10) // 0x003
		d.acct.Allocate("job-2", 0, 2, 10) // 0x00c
		d.jobs[1] = &djob{Job: Job{ID: 1, Priority: true}, socket: 0, state: allocated}
		d.jobs[2] = &djob{Job: Job{ID: 2, Priority: true}, socket: 0, state: allocated}
		out := d.Tick(&Observation{Now: time.Second, FreeCPUs: freeAll(m), Finished: []int{1},
			Running: []Running{running(Job{ID: 2, Priority: true}, 0, 0, nil)}})
		moved := len(out.Allocate) == 1 && out.Allocate[0].Job == 2 && out.Allocate[0].Mask == 0x003
		if moved != defrag {
			t.Fatalf("defragment=%v: %+v", defrag, out.Allocate)
		}
		if defrag && (d.acct.FreeMask(0) != 0x7fc || out.ConsolidatedWays != 2) {
			t.Fatalf("free %#x, lost %d", d.acct.FreeMask(0), out.ConsolidatedWays)
		}
	}
}

func TestDynamicGreedyUsesTheAccountant(t *testing.T) {
	m := icx(t)
	cfg := dynCfg()
	cfg.Probe.Greedy = true
	d, _ := NewDynamic(Env{Machine: m, Config: cfg})
	p := Job{ID: 1, Cores: 1, Priority: true, IPCETarget: 0.9}
	out := d.Tick(&Observation{Now: 0, FreeCPUs: freeAll(m), Queue: []Job{p}})
	s := out.Place[0].Socket
	// the socket's bandwidth is nearly all committed: 60 % held by another group
	d.acct.Allocate("job-99", s, 1, 60)
	d.jobs[99] = &djob{Job: Job{ID: 99, Priority: true}, socket: s, state: allocated}
	run := []Running{running(p, s, 0, nil), running(Job{ID: 99, Priority: true}, s, 0, nil)}
	out = d.Tick(&Observation{Now: 3 * time.Second, FreeCPUs: freeAll(m), Running: run})
	if len(out.Probe) != 1 {
		t.Fatalf("%+v", out)
	}
	segs := []probe.Segment{
		{Combo: probe.Combo{Ways: 2, MBA: 20}, IPCE: 0.91},
		{Combo: probe.Combo{Ways: 3, MBA: 10}, IPCE: 0.92},
		{Combo: probe.Combo{Ways: 4, MBA: 10}, IPCE: 0.93},
	}
	res := probe.Result{Combo: probe.Combo{Ways: 2, MBA: 20}, IPCE: 0.91, Met: true, Target: 0.9, Segments: segs}
	out = d.Tick(&Observation{Now: 16 * time.Second, FreeCPUs: freeAll(m), Running: run,
		ProbeResults: []ProbeResult{{Job: 1, Result: res}}})
	// free: 10 ways, 30 % MBA (buffer included): 2/10+20/30 = 0.87 > 3/10+10/30 = 0.63
	if len(out.Allocate) != 1 || bits.OnesCount64(out.Allocate[0].Mask) != 3 || out.Allocate[0].MBA != 10 {
		t.Fatalf("greedy picked %+v", out.Allocate)
	}
}
