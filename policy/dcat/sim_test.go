package dcat

import (
	"fmt"
	"testing"
	"time"

	"colo/internal/machinetest"
	"colo/internal/simtest"
	"colo/machine"
	"colo/sim"
)

// srig drives a controller on the simulated machine: one CLOS per tenant on socket 0, the
// sim stepped every 100 ms, the controller fed the counter deltas (with the sim's retired
// loads as dCat's l1_ref).
type srig struct {
	t     *testing.T
	m     *sim.Machine
	c     *Controller
	p     *machine.Profile
	ids   map[string]sim.ID
	clos  map[string]int
	core  map[string]int
	wls   map[string]sim.Workload
	ways  map[string]int
	hist  map[string][]int
	st    map[string][]State
	moved int
}

func newSimRig(t *testing.T, machineName string, opt Options) *srig {
	t.Helper()
	p := machinetest.Get(t, machineName)
	m := simtest.New(t, p)
	c, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	return &srig{t: t, m: m, c: c, p: p, ids: map[string]sim.ID{}, clos: map[string]int{}, core: map[string]int{},
		wls: map[string]sim.Workload{}, ways: map[string]int{}, hist: map[string][]int{}, st: map[string][]State{}}
}

// admit adds a tenant with its baseline; start (now or later) runs its workload.
func (r *srig) admit(id string, baseline int) {
	r.t.Helper()
	if err := r.c.Add(id, baseline); err != nil {
		r.t.Fatal(err)
	}
	r.clos[id] = len(r.clos) + 1
	r.core[id] = len(r.core)
	r.apply(r.decide(nil))
}

func (r *srig) start(id string, w sim.Workload) {
	r.t.Helper()
	r.ids[id] = simtest.Start(r.t, r.m, w, []int{r.core[id]}, r.clos[id])
}

// lookbusy admits a lookbusy VM per id with baseline ways and starts it.
func (r *srig) lookbusy(baseline int, ids ...string) {
	r.t.Helper()
	for _, id := range ids {
		r.admit(id, baseline)
		r.start(id, sim.Lookbusy())
	}
}

func (r *srig) stop(id string) {
	r.t.Helper()
	if err := r.m.RemoveWorkload(r.ids[id]); err != nil {
		r.t.Fatal(err)
	}
	delete(r.ids, id)
}

func (r *srig) decide(ss []Sample) (Decision, bool) {
	r.t.Helper()
	return step(r.t, r.c, r.m.Now(), ss)
}

func (r *srig) apply(d Decision, ok bool) {
	r.t.Helper()
	if !ok {
		return
	}
	checkMasks(r.t, d, r.c.opt)
	if err := r.m.SetCLOS(0, []uint64{d.HostMask}, nil); err != nil {
		r.t.Fatal(err)
	}
	for _, a := range d.Allocs {
		if err := r.m.SetCLOS(r.clos[a.ID], []uint64{a.Mask}, nil); err != nil {
			r.t.Fatal(err)
		}
		r.ways[a.ID] = a.Ways
	}
	r.moved += d.MovedWays
}

// second runs one second of virtual time (10 sim steps) and one control period.
func (r *srig) second() Decision {
	r.t.Helper()
	acc := simtest.Sum(r.m, 10, 100*time.Millisecond)
	var ss []Sample
	for _, id := range r.c.ids {
		s := Sample{ID: id}
		if sid, ok := r.ids[id]; ok {
			if k, ok := acc[sid]; ok {
				s = Sample{ID: id, Instructions: float64(k.Instructions), Cycles: float64(k.Cycles), Loads: float64(k.L1References),
					LLCRefs: float64(k.LLCReferences), LLCMisses: float64(k.LLCMisses)}
			}
		}
		ss = append(ss, s)
	}
	d, ok := r.decide(ss)
	if !ok {
		r.t.Fatal("no decision after a full period")
	}
	r.apply(d, ok)
	for _, id := range r.c.ids {
		st, _ := r.c.State(id)
		r.hist[id] = append(r.hist[id], r.ways[id])
		r.st[id] = append(r.st[id], st)
	}
	return d
}

func (r *srig) state(id string) State { s, _ := r.c.State(id); return s }

// Fig. 7(a) on the simulated Xeon E5-2697 v4: an idle VM holds 1 way; when its MLR-8MB job
// starts it reclaims its 3-way baseline at once, grows a way per period while IPC improves,
// and becomes a Keeper; when the job stops it donates again; when the job (the same phase)
// restarts it gets its best size at once.
func TestSimIdleDonatesAndReclaims(t *testing.T) {
	r := newSimRig(t, "bdw-2697v4", DefaultOptions(20))
	r.admit("vm", 3)
	r.admit("bg", 3)
	r.start("bg", sim.Lookbusy())
	for i := 0; i < 3; i++ {
		r.second()
	}
	if r.ways["vm"] != 1 || r.state("vm") != Donor || r.ways["bg"] != 1 {
		t.Fatalf("idle VM %d ways (%v), lookbusy %d ways: want 1 way each", r.ways["vm"], r.state("vm"), r.ways["bg"])
	}
	r.start("vm", sim.MLR(8<<20))
	d := r.second()
	if d.Ways("vm") != 3 || r.state("vm") != Reclaim {
		t.Fatalf("job start: %d ways %v, want the 3-way baseline at once", d.Ways("vm"), r.state("vm"))
	}
	for i := 0; i < 20; i++ {
		r.second()
	}
	best := r.ways["vm"]
	grow := r.hist["vm"][3:]
	t.Logf("MLR-8MB ways per second from its start: %v, states %v", grow, r.st["vm"][3:])
	if r.state("vm") != Keeper || best <= 3 {
		t.Fatalf("MLR-8MB should settle as a Keeper above its baseline: %d ways %v", best, r.state("vm"))
	}
	for i := 2; i < len(grow); i++ {
		if grow[i] < grow[i-1] || grow[i]-grow[i-1] > 1 {
			t.Fatalf("first-run growth must be +1 way per period: %v", grow)
		}
	}
	r.stop("vm")
	r.second()
	if r.ways["vm"] != 1 || r.state("vm") != Donor {
		t.Fatalf("job stop: %d ways %v, want 1 way Donor", r.ways["vm"], r.state("vm"))
	}
	r.second()
	r.start("vm", sim.MLR(8<<20))
	d = r.second()
	if d.Ways("vm") != best {
		t.Fatalf("job restart: %d ways, want its best size %d at once", d.Ways("vm"), best)
	}
}

// Fig. 13/15 on the simulated machine: MLOAD-60MB and MLR-16MB (baseline 3) with five
// lookbusy VMs (baseline 2, donating down to 1 way) on 20 ways. Both grow a way per period;
// the pool runs dry while MLR is still a Receiver; MLOAD (Unknown) takes the last way, then,
// without gain and without a way to grow into, becomes Streaming at 1 way — and MLR takes the
// released ways.
func TestSimStreamingReleasesToReceiver(t *testing.T) {
	r := newSimRig(t, "bdw-2697v4", DefaultOptions(20))
	r.lookbusy(2, "lb1", "lb2", "lb3", "lb4", "lb5")
	r.admit("mload", 3)
	r.admit("mlr", 3)
	r.start("mload", sim.MLOAD(60<<20))
	r.start("mlr", sim.MLR(16<<20))
	streamAt := -1
	for i := 0; i < 15; i++ {
		r.second()
		if r.state("mload") == Streaming && streamAt < 0 {
			streamAt = i
		}
	}
	t.Logf("MLOAD ways %v states %v", r.hist["mload"], r.st["mload"])
	t.Logf("MLR   ways %v states %v", r.hist["mlr"], r.st["mlr"])
	if streamAt < 1 {
		t.Fatal("MLOAD-60MB never became Streaming after growing")
	}
	before := r.hist["mlr"][streamAt-1]
	used := before + r.hist["mload"][streamAt-1] + 5
	if used != 20 {
		t.Fatalf("the pool should be dry before MLOAD streams: %d of 20 ways used", used)
	}
	if r.hist["mload"][streamAt] != 1 || r.st["mlr"][streamAt-1] != Receiver {
		t.Fatalf("MLOAD should drop to 1 way while MLR is still a Receiver")
	}
	if r.hist["mlr"][streamAt] <= before || r.ways["mlr"] <= before {
		t.Fatalf("MLR should take the released ways: %d before, %v after", before, r.hist["mlr"][streamAt:])
	}
}

// Fig. 13 on the simulated machine: MLOAD-60MB alone (baseline 3) grows with flat IPC to 3×
// its baseline, 9 ways, is classified Streaming and drops to 1 way, and stays there.
func TestSimStreamingAtThreeTimesBaseline(t *testing.T) {
	r := newSimRig(t, "bdw-2697v4", DefaultOptions(20))
	r.admit("mload", 3)
	r.start("mload", sim.MLOAD(60<<20))
	for i := 0; i < 12; i++ {
		r.second()
	}
	h := r.hist["mload"]
	t.Logf("MLOAD ways %v states %v", h, r.st["mload"])
	at := -1
	for i, s := range r.st["mload"] {
		if s == Streaming {
			at = i
			break
		}
	}
	if at < 1 || h[at-1] != 9 || h[at] != 1 || r.ways["mload"] != 1 {
		t.Fatalf("want growth to 9 ways, then Streaming at 1: %v %v", h, r.st["mload"])
	}
	for _, s := range r.st["mload"][:at] {
		if s != Unknown {
			t.Fatalf("with flat IPC MLOAD must stay Unknown while growing: %v", r.st["mload"])
		}
	}
}

// A workload alternating between MLR-8MB and MLR-2MB phases (different loads per
// instruction: the 2 MB one is driven with a different instruction mix) returns to each
// phase's best size at once once both are in its table.
func TestSimRepeatedPhaseJumpsToBest(t *testing.T) {
	r := newSimRig(t, "bdw-2697v4", DefaultOptions(20))
	r.admit("w", 2)
	big := sim.MLR(8 << 20)
	idle := sim.Lookbusy()
	w := sim.Workload{Name: "mlr-phases", Loop: true, Phases: []sim.Phase{
		{Model: big.Phases[0].Model, Duration: 15 * time.Second},
		{Model: idle.Phases[0].Model, Duration: 5 * time.Second},
	}}
	r.start("w", w)
	for i := 0; i < 60; i++ {
		r.second()
	}
	h := r.hist["w"]
	t.Logf("ways per second: %v", h)
	// Each MLR phase starts at t = 20k s; the first run grows from the baseline, later runs
	// start at the best size of the first.
	best := h[14]
	if best <= 2 {
		t.Fatalf("first MLR phase never grew: %v", h)
	}
	for _, start := range []int{20, 40} {
		if h[start] != best {
			t.Fatalf("MLR phase restarting at %d s got %d ways, want its best %d at once: %v", start, h[start], best, h)
		}
	}
	for _, idleAt := range []int{16, 36, 56} {
		if h[idleAt] != 1 {
			t.Fatalf("lookbusy phase at %d s holds %d ways: %v", idleAt, h[idleAt], h)
		}
	}
}

// Fig. 14 on the simulated machine: MLR-8MB and MLR-12MB (baseline 2) and four lookbusy VMs
// (baseline 1) on the 20-way LLC; the MLRs grow until their miss rates fall under 3 %; four
// more VMs start with one way each, leaving 12 ways for the two MLRs. Max-performance must
// pick the split with the highest sum of measured normalised IPC (checked here by brute
// force over the controller's own tables), and beat the even split.
//
// The paper's answer is 8/4 because its MLR-8MB needed 8 ways (seed003.md §3.3); the
// simulator's MLR-8MB reaches a 3 % miss rate at 6 ways and its MLR-12MB at 7 on this
// machine (conflict-miss model sim.UsableBytes), so the optimum on sim is another split —
// the 8/4 outcome itself is TestTwoMLRMaxPerformance, on models calibrated to the paper.
// The split is also checked against the simulator's steady-state tables (each MLR alone at
// 2..12 ways, settled): 5/7 is their best split too (Σ 6.02 normalised IPC; 8/4 gives less).
func TestSimTwoMLRMaxPerformance(t *testing.T) {
	opt := DefaultOptions(20)
	opt.Policy = MaxPerformance
	r := newSimRig(t, "bdw-2697v4", opt)
	r.lookbusy(1, "lb1", "lb2", "lb3", "lb4")
	r.admit("mlr8", 2)
	r.admit("mlr12", 2)
	r.start("mlr8", sim.MLR(8<<20))
	r.start("mlr12", sim.MLR(12<<20))
	for i := 0; i < 16; i++ {
		r.second()
	}
	t.Logf("growth: mlr8 %v\n        mlr12 %v", r.hist["mlr8"], r.hist["mlr12"])
	t8, t12 := r.c.Table("mlr8"), r.c.Table("mlr12")
	a0, b0 := r.ways["mlr8"], r.ways["mlr12"]
	if a0+b0 <= 12 {
		t.Fatalf("the MLRs should hold more than 12 ways before the newcomers: %d + %d", r.ways["mlr8"], r.ways["mlr12"])
	}
	r.lookbusy(1, "lb5", "lb6", "lb7", "lb8")
	a, b := r.ways["mlr8"], r.ways["mlr12"]
	best, ba, bb := -1.0, 0, 0
	for x, vx := range t8 {
		for y, vy := range t12 {
			if x+y <= 12 && x >= 2 && y >= 2 && x <= a0 && y <= b0 && vx+vy > best { // never grown by the search
				best, ba, bb = vx+vy, x, y
			}
		}
	}
	t.Logf("tables mlr8 %v\n       mlr12 %v\nmax-performance with 12 ways: mlr8 %d, mlr12 %d (brute force %d/%d, Σ %.3f; even 6/6 Σ %.3f)",
		t8, t12, a, b, ba, bb, best, t8[6]+t12[6])
	if a+b != 12 || t8[a]+t12[b] < best-1e-9 {
		t.Fatalf("max-performance chose %d/%d (Σ %.3f), the best measured split is %d/%d (Σ %.3f)", a, b, t8[a]+t12[b], ba, bb, best)
	}
	if e8, ok8 := t8[6]; ok8 {
		if e12, ok12 := t12[6]; ok12 && t8[a]+t12[b] < e8+e12-1e-9 {
			t.Fatalf("max-performance %d/%d is worse than the even split", a, b)
		}
	}
	for i := 0; i < 5; i++ {
		r.second()
	}
	if r.ways["mlr8"] != a || r.ways["mlr12"] != b {
		t.Fatalf("not stable: mlr8 %d, mlr12 %d", r.ways["mlr8"], r.ways["mlr12"])
	}
	// The simulator's own steady-state tables (each MLR alone in k ways, lines settled), not
	// the controller's 1-second measurements taken while the partition filled: the best
	// split of 12 ways by the sum of IPC normalised to the baseline (2 ways).
	s8, s12 := soloTable(t, r.p, sim.MLR(8<<20), 12), soloTable(t, r.p, sim.MLR(12<<20), 12)
	sb, sa, sbb := -1.0, 0, 0
	for x := 2; x <= 10; x++ {
		if v := s8[x]/s8[2] + s12[12-x]/s12[2]; v > sb {
			sb, sa, sbb = v, x, 12-x
		}
	}
	t.Logf("steady-state normalised IPC, mlr8 %v\n                             mlr12 %v\nbest split %d/%d Σ %.3f; dCat's %d/%d Σ %.3f",
		norm(s8), norm(s12), sa, sbb, sb, a, b, s8[a]/s8[2]+s12[b]/s12[2])
	if got := s8[a]/s8[2] + s12[b]/s12[2]; got < sb-1e-9 {
		t.Fatalf("dCat's %d/%d (Σ %.3f) is not the simulator's best split %d/%d (Σ %.3f)", a, b, got, sa, sbb, sb)
	}
}

// soloTable is a workload's steady-state IPC alone on socket 0 of p in its lowest k ways,
// for k = 1..maxWays (index k).
func soloTable(t *testing.T, p *machine.Profile, w sim.Workload, maxWays int) []float64 {
	t.Helper()
	out := make([]float64, maxWays+1)
	for k := 1; k <= maxWays; k++ {
		c := simtest.Alone(t, p, w, k, 100)
		out[k] = float64(c.Instructions) / float64(c.Cycles)
	}
	return out
}

func norm(v []float64) []string {
	var out []string
	for k := 2; k < len(v); k++ {
		out = append(out, fmt.Sprintf("%d:%.2f", k, v[k]/v[2]))
	}
	return out
}
