package sched

import (
	"testing"
	"time"

	"colo/probe"
)

// ipceSample is a collector sample taken at `at` over `iv` whose IPCE is x.
func ipceSample(at, iv time.Duration, x float64) *Sample {
	return &Sample{At: at, Interval: iv, Cycles: 1000, StallsTotal: (1 - x) * 1000, StallsL3Miss: 100}
}

// allocatedJob takes priority job 1 through placement, probe buffer and a probe result
// (3 ways/10 %, met or not) that the scheduler takes at t = 16 s.
func allocatedJob(t *testing.T, cfg Config, met bool) (*Dynamic, Job, int) {
	t.Helper()
	m := icx(t)
	d, err := NewDynamic(Env{Machine: m, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	p := Job{ID: 1, Cores: 1, Priority: true, IPCETarget: 0.9}
	out := d.Tick(&Observation{Now: 0, FreeCPUs: freeAll(m), Queue: []Job{p}})
	sock := out.Place[0].Socket
	run := []Running{running(p, sock, 0, nil)}
	if out = d.Tick(&Observation{Now: 3 * time.Second, FreeCPUs: freeAll(m), Running: run}); len(out.Probe) != 1 {
		t.Fatalf("no first probe: %+v", out)
	}
	res := probe.Result{Combo: probe.Combo{Ways: 3, MBA: 10}, IPCE: 0.92, Met: met, Target: 0.9}
	if !met {
		res.Combo, res.IPCE = probe.Combo{Ways: 4, MBA: 20}, 0.5
	}
	out = d.Tick(&Observation{Now: 16 * time.Second, FreeCPUs: freeAll(m), Running: run,
		ProbeResults: []ProbeResult{{Job: 1, Result: res}}})
	if len(out.Allocate) != 1 || out.Allocate[0].Mask == 0 {
		t.Fatalf("no allocation from the result: %+v", out)
	}
	return d, p, sock
}

func TestDynamicReprobeAfterCooldown(t *testing.T) {
	cfg := dynCfg()
	cfg.Probe.CooldownT = 20 * time.Second // probe ended at 16 s: no new probe before 36 s
	d, p, sock := allocatedJob(t, cfg, true)
	m := icx(t)
	tick := func(now time.Duration, last *Sample) Decisions {
		return d.Tick(&Observation{Now: now, FreeCPUs: freeAll(m), Running: []Running{{Job: p, Socket: sock, Mask: 0x7, MBA: 10, Last: last}}})
	}
	// a sample that covers time before the allocation settled (the probe's low
	// segments) never triggers a re-probe, however low
	if out := tick(18*time.Second, ipceSample(18*time.Second, 6*time.Second, 0.3)); len(out.Probe) != 0 || d.Reprobes != 0 {
		t.Fatalf("re-probe on a sample from before the allocation: %+v", out)
	}
	// at target under its allocation: nothing to do
	if out := tick(23*time.Second, ipceSample(23*time.Second, 5*time.Second, 0.93)); len(out.Probe) != 0 {
		t.Fatalf("re-probe at target: %+v", out)
	}
	// below target (a phase change) but inside the cool-down: wait
	for _, now := range []time.Duration{29 * time.Second, 35 * time.Second} {
		if out := tick(now, ipceSample(now, 6*time.Second, 0.6)); len(out.Probe) != 0 {
			t.Fatalf("t=%v: re-probe inside the cool-down: %+v", now, out)
		}
	}
	// the cool-down has passed: a new probe, whose buffer counts the job's own 3 ways as free
	out := tick(36*time.Second, ipceSample(35*time.Second, 6*time.Second, 0.6))
	if len(out.Probe) != 1 || d.Reprobes != 1 {
		t.Fatalf("no re-probe after the cool-down: %+v", out)
	}
	if out.Probe[0].Buffer != 0x00f || out.Probe[0].MaxMBA != 20 || len(out.Allocate) != 1 || out.Allocate[0].Reason != "probe-buffer" {
		t.Fatalf("re-probe buffer %+v alloc %+v", out.Probe[0], out.Allocate)
	}
	if err := d.acct.Check(); err != nil || d.acct.FreeWays(sock) != 7 || d.acct.FreeMBA(sock) != 70 {
		t.Fatalf("accountant after re-probe: %v, %d ways %d%% free", err, d.acct.FreeWays(sock), d.acct.FreeMBA(sock))
	}
	// while it probes, no second re-probe
	if out := tick(37*time.Second, ipceSample(37*time.Second, 1*time.Second, 0.2)); len(out.Probe) != 0 {
		t.Fatalf("second probe during a probe: %+v", out)
	}
}

func TestDynamicNoReprobe(t *testing.T) {
	m := icx(t)
	for _, c := range []struct {
		name    string
		reprobe bool
		met     bool
	}{{"reprobe: false", false, true}, {"probe never met its threshold", true, false}} {
		cfg := dynCfg()
		cfg.Reprobe = c.reprobe
		d, p, sock := allocatedJob(t, cfg, c.met)
		for now := 20 * time.Second; now < 120*time.Second; now += 6 * time.Second {
			out := d.Tick(&Observation{Now: now, FreeCPUs: freeAll(m),
				Running: []Running{{Job: p, Socket: sock, Last: ipceSample(now, 6*time.Second, 0.4)}}})
			if len(out.Probe) != 0 {
				t.Fatalf("%s: re-probed at %v", c.name, now)
			}
		}
	}
}

// A priority job that fits on no socket makes room: the smallest batch jobs of the
// best-ranked socket move to the other one, and the job is admitted on the next tick.
func TestDynamicForceMoveForPriorityAdmission(t *testing.T) {
	m := icx(t)
	cfg := dynCfg()
	d, _ := NewDynamic(Env{Machine: m, Config: cfg})
	// socket 0: batch jobs of 1, 1, 4 and 8 cores (14 of 16 used, 2 free);
	// socket 1: a batch job of 15 cores (1 free). A 4-core priority job fits nowhere.
	batch := []Job{{ID: 1, Cores: 1}, {ID: 2, Cores: 4}, {ID: 3, Cores: 1}, {ID: 4, Cores: 8}, {ID: 5, Cores: 15}}
	sockets := []int{0, 0, 0, 0, 1}
	var run []Running
	for i, j := range batch {
		d.jobs[j.ID] = &djob{Job: j, socket: sockets[i], placed: time.Duration(i) * time.Second, load: 10}
		run = append(run, running(j, sockets[i], time.Duration(i)*time.Second, nil))
	}
	all := freeAll(m)
	free := [][]int{all[0][14:], all[1][15:]}
	p := Job{ID: 9, Cores: 4, Priority: true, IPCETarget: 0.9}
	out := d.Tick(&Observation{Now: 10 * time.Second, FreeCPUs: free, Running: run, Queue: []Job{p}})
	if len(out.Place) != 0 {
		t.Fatalf("placed without room: %+v", out.Place)
	}
	// socket 0 (ranked first: more free cores) needs 2 more cores, but socket 1 has room
	// for one 1-core job only; socket 1 needs 3 and its only job (15 cores) fits nowhere.
	// No half measures: nothing moves.
	if len(out.Migrate) != 0 {
		t.Fatalf("moves that cannot make room: %+v", out.Migrate)
	}
	// with 2 free cores on socket 1, the two 1-core jobs of socket 0 (the smallest,
	// youngest first: 3 then 1) move there
	free = [][]int{all[0][14:], all[1][14:]}
	out = d.Tick(&Observation{Now: 11 * time.Second, FreeCPUs: free, Running: run, Queue: []Job{p}})
	if len(out.Place) != 0 || len(out.Migrate) != 2 || out.Migrate[0] != (Migration{Job: 3, Socket: 1}) || out.Migrate[1] != (Migration{Job: 1, Socket: 1}) {
		t.Fatalf("forced moves %+v place %+v", out.Migrate, out.Place)
	}
	if d.ForcedMoves != 2 {
		t.Fatalf("ForcedMoves %d", d.ForcedMoves)
	}
	// next tick the moves have happened: the priority job is admitted on socket 0
	run[0].Socket, run[2].Socket = 1, 1
	free = [][]int{all[0][12:], nil}
	out = d.Tick(&Observation{Now: 12 * time.Second, FreeCPUs: free, Running: run, Queue: []Job{p}})
	if len(out.Place) != 1 || out.Place[0] != (Placement{Job: 9, Socket: 0}) || len(out.Migrate) != 0 {
		t.Fatalf("admission after the moves: place %+v migrate %+v", out.Place, out.Migrate)
	}
	// without the option, nothing moves
	cfg.ForceMove = false
	d2, _ := NewDynamic(Env{Machine: m, Config: cfg})
	for i, j := range batch {
		d2.jobs[j.ID] = &djob{Job: j, socket: sockets[i], load: 10}
	}
	out = d2.Tick(&Observation{Now: 11 * time.Second, FreeCPUs: [][]int{all[0][14:], all[1][14:]}, Running: run, Queue: []Job{p}})
	if len(out.Migrate) != 0 {
		t.Fatalf("force_move_for_priority_admission: false still moved %+v", out.Migrate)
	}
}

// Two probe buffers reserved in one tick: the second needs a consolidation that moves
// the first; the first probe's request must follow its buffer (else the run loop finds
// the buffer it was asked to probe in not applied and fails the probe).
func TestDynamicConsolidationMovesABufferReservedThisTick(t *testing.T) {
	m := icx(t)
	d, _ := NewDynamic(Env{Machine: m, Config: dynCfg()})
	// socket 0: groups at ways 0, 3 and 8; free runs 1-2, 4-7, 9-10
	for _, g := range []struct{ id, ways int }{{100, 1}, {101, 2}, {102, 1}, {103, 4}, {104, 1}} {
		if _, err := d.acct.Allocate(groupName(g.id), 0, g.ways, 0); err != nil {
			t.Fatal(err)
		}
	}
	d.acct.Release(groupName(101))
	d.acct.Release(groupName(103))
	var run []Running
	for _, id := range []int{100, 102, 104} {
		j := Job{ID: id, Cores: 1, Priority: true}
		d.jobs[id] = &djob{Job: j, socket: 0, state: allocated}
		run = append(run, running(j, 0, 0, nil))
	}
	free := freeAll(m)
	free[1] = nil // both new priority jobs land on socket 0
	a, b := Job{ID: 1, Cores: 1, Priority: true}, Job{ID: 2, Cores: 1, Priority: true}
	out := d.Tick(&Observation{Now: 0, FreeCPUs: free, Running: run, Queue: []Job{a, b}})
	if len(out.Place) != 2 {
		t.Fatalf("placements %+v", out.Place)
	}
	run = append(run, running(a, 0, 0, nil), running(b, 0, 0, nil))
	out = d.Tick(&Observation{Now: 3 * time.Second, FreeCPUs: free, Running: run})
	if len(out.Probe) != 2 || out.ConsolidatedWays == 0 {
		t.Fatalf("want two probes and a consolidation: %+v", out)
	}
	last := map[int]uint64{}
	for _, al := range out.Allocate {
		last[al.Job] = al.Mask
	}
	for _, pr := range out.Probe {
		g, _ := d.acct.Group(groupName(pr.Job))
		if pr.Buffer != g.Mask || pr.Buffer != last[pr.Job] {
			t.Fatalf("job %d probes buffer %#x, but holds %#x (last allocation %#x)", pr.Job, pr.Buffer, g.Mask, last[pr.Job])
		}
	}
	if g, _ := d.acct.Group(groupName(1)); g.Mask != 0x3c {
		t.Fatalf("job 1's buffer %#x, want 0x3c after packing", g.Mask)
	}
	if err := d.acct.Check(); err != nil {
		t.Fatal(err)
	}
}
