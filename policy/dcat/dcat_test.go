package dcat

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The paper's worked example (seed003.md §1.6): 10 ways; A and B with baseline 2 grow evenly
// to 5 ways each; C starts and reclaims its 2-way baseline; A and B now share 8 ways and the
// max-performance search over their tables gives A = 3, B = 5 (A+B = 1.05 + 1.25 = 2.3; the
// alternatives are 4/4 = 2.28, 5/3 = 2.22; 2/6 was never measured).
//
// The tables are the paper's; A's marginal gains (5 %, 2.9 %, 3.7 %) are below the paper's 5 %
// growth threshold, so, as in the paper's narrative ("even growth brings each to 5 ways"), the
// growth threshold here is 2 %.
func workedExample(t *testing.T, pol Policy) (*rig, Decision) {
	opt := DefaultOptions(10)
	opt.IPCGainThreshold = 0.02
	opt.Policy = pol
	r := newRig(t, opt)
	tA := map[int]float64{2: 1, 3: 1.05, 4: 1.08, 5: 1.12}
	tB := map[int]float64{2: 1, 3: 1.1, 4: 1.2, 5: 1.25}
	high := constant(0.2)
	r.add("A", 2, app{ipc: table(0.8, tA), miss: high, loadsPI: 0.3, refsPI: 0.1})
	r.add("B", 2, app{ipc: table(0.6, tB), miss: high, loadsPI: 0.3, refsPI: 0.1})
	for i := 0; i < 6; i++ {
		r.period()
	}
	if r.ways["A"] != 5 || r.ways["B"] != 5 {
		t.Fatalf("even growth should reach A=5 B=5, got A=%d B=%d", r.ways["A"], r.ways["B"])
	}
	for id, want := range map[string]map[int]float64{"A": tA, "B": tB} {
		got := r.c.Table(id)
		for k, v := range want {
			if math.Abs(got[k]-v) > 1e-12 {
				t.Fatalf("%s table[%d] = %v, want %v (table %v)", id, k, got[k], v, got)
			}
		}
	}
	r.now += 300 * time.Millisecond
	if err := r.c.Add("C", 2); err != nil {
		t.Fatal(err)
	}
	r.apps["C"] = app{ipc: constant(1), miss: high, loadsPI: 0.3, refsPI: 0.1}
	d, ok := r.step(nil)
	if !ok {
		t.Fatal("admitting C must decide at once (Reclaim has the highest priority)")
	}
	r.apply(d, ok)
	return r, d
}

func TestWorkedExampleMaxPerformance(t *testing.T) {
	r, d := workedExample(t, MaxPerformance)
	if d.Ways("A") != 3 || d.Ways("B") != 5 || d.Ways("C") != 2 {
		t.Fatalf("max-performance after C reclaims: A=%d B=%d C=%d, want 3/5/2", d.Ways("A"), d.Ways("B"), d.Ways("C"))
	}
	sum := r.c.Table("A")[3] + r.c.Table("B")[5]
	if math.Abs(sum-2.3) > 1e-9 {
		t.Fatalf("aggregate normalised IPC of A and B = %v, want 2.3", sum)
	}
	if s, _ := r.c.State("C"); s != Reclaim {
		t.Fatalf("C state %v, want Reclaim", s)
	}
	// B keeps its ways in place; A shrinks in place; C takes the freed run: nothing moves.
	if d.MovedWays != 0 {
		t.Fatalf("moved ways %d, want 0 (shrink in place)", d.MovedWays)
	}
	// And the allocation is stable afterwards: the pool is empty.
	for i := 0; i < 3; i++ {
		d = r.period()
	}
	if d.Ways("A") != 3 || d.Ways("B") != 5 || d.Ways("C") < 2 {
		t.Fatalf("after 3 more periods A=%d B=%d C=%d", d.Ways("A"), d.Ways("B"), d.Ways("C"))
	}
}

func TestWorkedExampleMaxFairness(t *testing.T) {
	_, d := workedExample(t, MaxFairness)
	if d.Ways("A") != 4 || d.Ways("B") != 4 || d.Ways("C") != 2 {
		t.Fatalf("max-fairness after C reclaims: A=%d B=%d C=%d, want 4/4/2", d.Ways("A"), d.Ways("B"), d.Ways("C"))
	}
}

// BestSizes against exhaustive search on the worked example's alternatives.
func TestBestSizesWorkedExample(t *testing.T) {
	a := []SizeValue{{2, 1}, {3, 1.05}, {4, 1.08}, {5, 1.12}}
	b := []SizeValue{{2, 1}, {3, 1.1}, {4, 1.2}, {5, 1.25}}
	got := BestSizes([][]SizeValue{a, b}, 8)
	if a[got[0]].Ways != 3 || b[got[1]].Ways != 5 {
		t.Fatalf("BestSizes = A%d B%d, want A3 B5", a[got[0]].Ways, b[got[1]].Ways)
	}
	for budget, want := range map[int][2]int{4: {2, 2}, 5: {2, 3}, 6: {2, 4}, 9: {4, 5}, 10: {5, 5}, 7: {3, 4}} {
		got := BestSizes([][]SizeValue{a, b}, budget)
		if a[got[0]].Ways != want[0] || b[got[1]].Ways != want[1] {
			t.Errorf("budget %d: A%d B%d, want A%d B%d", budget, a[got[0]].Ways, b[got[1]].Ways, want[0], want[1])
		}
	}
	if BestSizes([][]SizeValue{a, b}, 3) != nil {
		t.Fatal("budget below the baselines must be infeasible")
	}
}

// Table 1 of the paper: 6 ways is the preferred size.
func TestPreferredTable1(t *testing.T) {
	t1 := map[int]float64{2: 0.9, 3: 1.0, 4: 1.15, 5: 1.25, 6: 1.3, 7: 1.3, 8: 1.3}
	if p := Preferred(t1, 0.01); p != 6 {
		t.Fatalf("Preferred(Table 1) = %d, want 6", p)
	}
	if p := Preferred(nil, 0.01); p != 0 {
		t.Fatalf("Preferred(empty) = %d, want 0", p)
	}
}

func TestPhaseChangedTenPercent(t *testing.T) {
	cases := []struct {
		ref, sig float64
		want     bool
	}{
		{0.40, 0.43, false}, {0.40, 0.44, false}, {0.40, 0.4401, true}, {0.40, 0.359, true},
		{0.40, 0.37, false}, {0, 0, false}, {0, 0.01, true},
	}
	for _, c := range cases {
		if got := PhaseChanged(c.ref, c.sig, 0.10); got != c.want {
			t.Errorf("PhaseChanged(%v, %v) = %v, want %v", c.ref, c.sig, got, c.want)
		}
	}
}

// Fig. 7(a): an idle VM donates down to 1 way; when its memory-intensive job starts, it gets
// its baseline at once (Reclaim), then +1 way per round while IPC improves, stops (Keeper);
// when the job stops it donates again; when the same phase returns it jumps straight to the
// best size from its table.
func TestTimelineNonStreaming(t *testing.T) {
	opt := DefaultOptions(20)
	r := newRig(t, opt)
	job := mlr(8, 2.25, 0.5)
	idle := app{}
	r.add("vm", 3, idle)
	r.add("bg", 3, app{idleSpin: true, ipc: constant(1)})
	r.period()
	if r.ways["vm"] != 1 || r.state("vm") != Donor {
		t.Fatalf("idle VM: %d ways %v, want 1 way Donor", r.ways["vm"], r.state("vm"))
	}
	if r.ways["bg"] != 1 || r.state("bg") != Donor {
		t.Fatalf("lookbusy VM: %d ways %v, want 1 way Donor", r.ways["bg"], r.state("bg"))
	}
	r.period()
	// t1: the job starts.
	r.apps["vm"] = job
	d := r.period()
	if d.Ways("vm") != 3 || r.state("vm") != Reclaim {
		t.Fatalf("job start: %d ways %v, want baseline 3 at once (Reclaim)", d.Ways("vm"), r.state("vm"))
	}
	var grown []int
	for i := 0; i < 20; i++ {
		d = r.period()
		grown = append(grown, d.Ways("vm"))
	}
	best := d.Ways("vm")
	if r.state("vm") != Keeper {
		t.Fatalf("after growth the job should be a Keeper, got %v (ways %v)", r.state("vm"), grown)
	}
	for i := 1; i < len(grown); i++ {
		if grown[i]-grown[i-1] > 1 || grown[i] < grown[i-1] {
			t.Fatalf("first-run growth must be +1 way per round and never shrink: %v", grown)
		}
	}
	if best <= 3 || best >= 20 {
		t.Fatalf("preferred size %d should be above the baseline and below the cache", best)
	}
	// The model's miss rate 1 − 0.5·2.25·w/8 first drops below the 3 % threshold at
	// w = 7 (1.6 %; 9.7 % at 6 ways): growth stops there.
	if best != 7 {
		t.Errorf("growth stopped at %d ways, the model's miss rate crosses 3 %% at 7", best)
	}
	// t3: the job stops.
	r.apps["vm"] = idle
	d = r.period()
	if d.Ways("vm") != 1 || r.state("vm") != Donor {
		t.Fatalf("job stop: %d ways %v, want 1 way Donor", d.Ways("vm"), r.state("vm"))
	}
	r.period()
	// t4: the same phase again: straight to the best size.
	r.apps["vm"] = job
	d = r.period()
	if d.Ways("vm") != best {
		t.Fatalf("repeated phase got %d ways, want its best size %d at once", d.Ways("vm"), best)
	}
	if r.c.Phases("vm") != 1 {
		t.Fatalf("the repeated job should match its known phase, have %d phases", r.c.Phases("vm"))
	}
}

// Fig. 13 / Fig. 7(b) and Fig. 15: a streaming workload grows with flat IPC up to 3× its
// baseline, is classified Streaming and drops to 1 way; a Receiver then takes the ways.
func TestTimelineStreaming(t *testing.T) {
	opt := DefaultOptions(20)
	r := newRig(t, opt)
	r.add("mload", 3, mload())
	var seq []int
	var states []State
	for i := 0; i < 10; i++ {
		d := r.period()
		seq = append(seq, d.Ways("mload"))
		states = append(states, r.state("mload"))
		if r.state("mload") == Streaming {
			break
		}
	}
	n := len(seq)
	if states[n-1] != Streaming || seq[n-1] != 1 {
		t.Fatalf("MLOAD never became Streaming at 1 way: ways %v states %v", seq, states)
	}
	if seq[n-2] != 9 {
		t.Fatalf("MLOAD should reach 3× baseline = 9 ways before Streaming: %v", seq)
	}
	for _, s := range states[:n-1] {
		if s != Unknown {
			t.Fatalf("while growing with flat IPC MLOAD must stay Unknown: %v", states)
		}
	}
	// Stays at 1 way.
	for i := 0; i < 3; i++ {
		if d := r.period(); d.Ways("mload") != 1 {
			t.Fatalf("Streaming workload regrew to %d", d.Ways("mload"))
		}
	}
}

// Fig. 15: MLR-8MB and MLOAD-60MB with 5 lookbusy VMs on 20 ways, baselines 3 (MLR, MLOAD)
// and 2 (lookbusy; the paper's 7×3 over-commits, see seed003.md §3.3). Both grow; when the
// pool runs dry MLOAD (Unknown) outranks MLR (Receiver), then, unable to grow without gain,
// it becomes Streaming and releases its ways, one of which MLR takes.
func TestTimelineStreamingReleasesToReceiver(t *testing.T) {
	opt := DefaultOptions(20)
	r := newRig(t, opt)
	for _, id := range []string{"lb1", "lb2", "lb3", "lb4", "lb5"} {
		r.add(id, 2, app{idleSpin: true, ipc: constant(1)})
	}
	// A slower-knee MLR: still gaining when the pool runs dry.
	r.add("mlr", 3, mlr(8, 2.25, 0.45))
	r.add("mload", 3, mload())
	var streamAt = -1
	for i := 0; i < 15; i++ {
		d := r.period()
		if r.state("mload") == Streaming && streamAt < 0 {
			streamAt = i
			if d.Ways("mload") != 1 {
				t.Fatalf("Streaming MLOAD holds %d ways", d.Ways("mload"))
			}
		}
	}
	if streamAt < 0 {
		t.Fatal("MLOAD never became Streaming")
	}
	if r.ways["mlr"] < 8 {
		t.Fatalf("MLR should end at its preferred size (≥ 8 ways), got %d", r.ways["mlr"])
	}
}

// Repeated phases: a workload alternating between two phases of different loads per
// instruction and different best sizes jumps to each phase's best size once it is known.
func TestRepeatedPhasesJumpToBest(t *testing.T) {
	opt := DefaultOptions(20)
	r := newRig(t, opt)
	small := mlr(4, 2.25, 0.5) // knee at 4 ways
	small.loadsPI = 0.2
	big := mlr(10, 2.25, 0.5) // knee at 9 ways
	big.loadsPI = 0.6
	r.add("w", 2, small)
	bestOf := map[string]int{}
	for round := 0; round < 3; round++ {
		for _, ph := range []struct {
			name string
			a    app
		}{{"small", small}, {"big", big}} {
			r.apps["w"] = ph.a
			d := r.period()
			if round > 0 && d.Ways("w") != bestOf[ph.name] {
				t.Fatalf("round %d phase %s: %d ways on re-entry, want its best %d", round, ph.name, d.Ways("w"), bestOf[ph.name])
			}
			for i := 0; i < 12; i++ {
				d = r.period()
			}
			if round == 0 {
				bestOf[ph.name] = d.Ways("w")
			} else if d.Ways("w") != bestOf[ph.name] {
				t.Fatalf("round %d phase %s settled at %d, first run at %d", round, ph.name, d.Ways("w"), bestOf[ph.name])
			}
		}
	}
	if bestOf["small"] >= bestOf["big"] {
		t.Fatalf("best sizes small=%d big=%d: the bigger working set must need more ways", bestOf["small"], bestOf["big"])
	}
	if r.c.Phases("w") != 2 {
		t.Fatalf("%d phases, want 2", r.c.Phases("w"))
	}
}

// Fig. 14: MLR-8MB and MLR-12MB (baseline 2) grow evenly with 4 lookbusy VMs (baseline 1) to
// 8 ways each; then 4 more VMs start with one way each, leaving 12 ways for the two MLRs, and
// max-performance gives 8 to MLR-8MB and 4 to MLR-12MB.
func TestTwoMLRMaxPerformance(t *testing.T) {
	opt := DefaultOptions(20)
	opt.Policy = MaxPerformance
	r := newRig(t, opt)
	for i := 1; i <= 4; i++ {
		r.add("lb"+string(rune('0'+i)), 1, app{idleSpin: true, ipc: constant(1)})
	}
	r.add("mlr8", 2, mlr(8, 2.25, 0.45))
	r.add("mlr12", 2, mlr(12, 2.25, 0.45))
	for i := 0; i < 14; i++ {
		r.period()
	}
	if r.ways["mlr8"] != 8 || r.ways["mlr12"] != 8 {
		t.Fatalf("before the newcomers: mlr8=%d mlr12=%d, want 8/8 (8+8+4 = 20)", r.ways["mlr8"], r.ways["mlr12"])
	}
	r.now += 100 * time.Millisecond
	for i := 5; i <= 8; i++ {
		id := "lb" + string(rune('0'+i))
		if err := r.c.Add(id, 1); err != nil {
			t.Fatal(err)
		}
		r.apps[id] = app{idleSpin: true, ipc: constant(1)}
	}
	d, ok := r.step(nil)
	r.apply(d, ok)
	if d.Ways("mlr8") != 8 || d.Ways("mlr12") != 4 {
		t.Fatalf("max-performance with 12 ways: mlr8=%d mlr12=%d, want 8/4", d.Ways("mlr8"), d.Ways("mlr12"))
	}
	for i := 0; i < 5; i++ {
		d = r.period()
	}
	if d.Ways("mlr8") != 8 || d.Ways("mlr12") != 4 {
		t.Fatalf("not stable: mlr8=%d mlr12=%d", d.Ways("mlr8"), d.Ways("mlr12"))
	}
}

// Guard against Keeper/Donor oscillation: a workload with a low miss rate at its baseline
// shrinks one way per period while the table shows no loss, gets the way back when a shrink
// costs more than the IPC threshold, and then stays put.
func TestDonorStopsWhereShrinkHurts(t *testing.T) {
	opt := DefaultOptions(10)
	r := newRig(t, opt)
	// IPC flat down to 3 ways, 20 % lower at 2; miss rate always low.
	r.add("w", 5, app{ipc: table(1, map[int]float64{1: 0.7, 2: 0.8, 3: 1, 10: 1}), miss: constant(0.01), loadsPI: 0.3, refsPI: 0.05})
	var seq []int
	for i := 0; i < 10; i++ {
		seq = append(seq, r.period().Ways("w"))
	}
	want := []int{4, 3, 2, 3, 3, 3, 3, 3, 3, 3}
	for i := range want {
		if seq[i] != want[i] {
			t.Fatalf("ways per period %v, want %v", seq, want)
		}
	}
	if r.state("w") != Keeper {
		t.Fatalf("state %v, want Keeper", r.state("w"))
	}
}

// Baseline guarantee: a Donor below its baseline whose miss rate rises (no phase change) goes
// straight back to the baseline.
func TestBelowBaselineMissRiseReclaims(t *testing.T) {
	opt := DefaultOptions(10)
	r := newRig(t, opt)
	low := app{ipc: constant(1), miss: constant(0.01), loadsPI: 0.3, refsPI: 0.05}
	r.add("w", 4, low)
	r.period()
	r.period()
	if r.ways["w"] != 2 {
		t.Fatalf("donor should be at 2, at %d", r.ways["w"])
	}
	hi := low
	hi.miss = constant(0.2)
	r.apps["w"] = hi
	if d := r.period(); d.Ways("w") != 4 || r.state("w") != Reclaim {
		t.Fatalf("below baseline with high misses: %d ways %v, want 4 Reclaim", d.Ways("w"), r.state("w"))
	}
}

func TestAdmission(t *testing.T) {
	c, err := New(DefaultOptions(10))
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Add("a", 4))
	must(t, c.Add("b", 4))
	for _, tc := range []struct {
		id   string
		b    int
		frag string
	}{
		{"c", 3, "over-commit"},
		{"d", 0, "outside 1..10"},
		{"e", 11, "outside 1..10"},
		{"a", 1, "already admitted"},
		{"", 1, "non-empty"},
	} {
		err := c.Add(tc.id, tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.frag) {
			t.Errorf("Add(%q, %d) = %v, want an error mentioning %q", tc.id, tc.b, err, tc.frag)
		}
	}
	must(t, c.Add("c", 2))
	// Host ways count against admission.
	o := DefaultOptions(10)
	o.HostWays = 2
	c2, _ := New(o)
	must(t, c2.Add("a", 8))
	if err := c2.Add("b", 1); err == nil {
		t.Fatal("baselines 8+1 with 2 host ways of 10 must be rejected")
	}
	// Classes of service.
	o = DefaultOptions(20)
	o.MaxCLOS = 3
	c3, _ := New(o)
	must(t, c3.Add("a", 1))
	must(t, c3.Add("b", 1))
	if err := c3.Add("c", 1); err == nil || !strings.Contains(err.Error(), "class of service") {
		t.Fatalf("third tenant with 3 CLOS: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	mut := []struct {
		name string
		f    func(*Options)
	}{
		{"period", func(o *Options) { o.Period = 0 }},
		{"miss_rate_threshold", func(o *Options) { o.MissRateThreshold = -0.1 }},
		{"ipc_gain_threshold", func(o *Options) { o.IPCGainThreshold = math.NaN() }},
		{"phase_threshold", func(o *Options) { o.PhaseThreshold = 0 }},
		{"streaming_factor", func(o *Options) { o.StreamingFactor = 0.5 }},
		{"min_ways", func(o *Options) { o.MinWays = 0 }},
		{"host_ways", func(o *Options) { o.HostWays = 20 }},
		{"llc_ref_rate", func(o *Options) { o.LLCRefRate = -1 }},
		{"ways", func(o *Options) { o.Ways = 65 }},
	}
	for _, m := range mut {
		o := DefaultOptions(20)
		m.f(&o)
		if _, err := New(o); err == nil || !strings.Contains(err.Error(), m.name) {
			t.Errorf("%s: got %v, want an error naming it", m.name, err)
		}
	}
	if err := DefaultOptions(20).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestStepRejectsBadSamples(t *testing.T) {
	c, _ := New(DefaultOptions(10))
	_ = c.Add("a", 2)
	if _, _, err := c.Step(0, []Sample{{ID: "zz", Instructions: 1}}); err == nil {
		t.Fatal("unknown workload accepted")
	}
	if _, _, err := c.Step(0, []Sample{{ID: "a", Instructions: -1}}); err == nil {
		t.Fatal("negative counter accepted")
	}
}

// Host ways: the default class gets the top run and tenants never touch it.
func TestHostWaysReserved(t *testing.T) {
	o := DefaultOptions(10)
	o.HostWays = 2
	r := newRig(t, o)
	r.add("m", 2, mload())
	r.add("x", 2, mlr(20, 1, 1))
	var d Decision
	for i := 0; i < 10; i++ {
		d = r.period()
	}
	if d.HostMask != 0x300 {
		t.Fatalf("host mask %#x, want 0x300", d.HostMask)
	}
}

// Determinism: the same inputs give the same decisions.
func TestDeterministic(t *testing.T) {
	run := func() []Decision {
		opt := DefaultOptions(20)
		r := newRig(t, opt)
		r.add("a", 3, mlr(8, 2.25, 0.5))
		r.add("b", 3, mload())
		r.add("c", 2, mlr(12, 2.25, 0.5))
		for i := 0; i < 20; i++ {
			r.period()
		}
		return r.log
	}
	a, b := run(), run()
	if len(a) != len(b) {
		t.Fatal("different number of decisions")
	}
	for i := range a {
		for j := range a[i].Allocs {
			if a[i].Allocs[j] != b[i].Allocs[j] {
				t.Fatalf("decision %d differs: %+v vs %+v", i, a[i].Allocs[j], b[i].Allocs[j])
			}
		}
	}
}

// Static CAT: every workload keeps its baseline whatever its counters say.
func TestStaticKeepsBaselines(t *testing.T) {
	opt := DefaultOptions(20)
	opt.Static = true
	r := newRig(t, opt)
	r.add("idle", 3, app{})
	r.add("stream", 4, mload())
	r.add("mlr", 5, mlr(8, 2.25, 0.5))
	for i := 0; i < 15; i++ {
		d := r.period()
		if d.Ways("idle") != 3 || d.Ways("stream") != 4 || d.Ways("mlr") != 5 {
			t.Fatalf("static CAT changed an allocation: %+v", d.Allocs)
		}
	}
}

// A tenant's next job (Remove, then Add with the same id) keeps the tenant's tables: a known
// phase gets its best size at its first period instead of growing from the baseline again.
func TestReturningTenantKeepsTables(t *testing.T) {
	r := newRig(t, DefaultOptions(20))
	job := mlr(8, 2.25, 0.5)
	r.add("vm", 3, job)
	for i := 0; i < 12; i++ {
		r.period()
	}
	best := r.ways["vm"]
	if best <= 4 {
		t.Fatalf("first job settled at %d ways", best)
	}
	if err := r.c.Remove("vm"); err != nil {
		t.Fatal(err)
	}
	delete(r.apps, "vm")
	r.period()
	r.add("vm", 3, job)
	if r.ways["vm"] != 3 {
		t.Fatalf("admitted at %d ways, want the baseline 3", r.ways["vm"])
	}
	if d := r.period(); d.Ways("vm") != best {
		t.Fatalf("returning tenant got %d ways at its first period, want its best %d", d.Ways("vm"), best)
	}
}

// Sparse masks (AMD): the Fig. 15 timeline with non-contiguous masks never moves a way.
func TestSparseNeverMoves(t *testing.T) {
	opt := DefaultOptions(20)
	opt.Sparse = true
	r := newRig(t, opt)
	for _, id := range []string{"lb1", "lb2", "lb3", "lb4", "lb5"} {
		r.add(id, 2, app{idleSpin: true, ipc: constant(1)})
	}
	r.add("mlr", 3, mlr(8, 2.25, 0.45))
	r.add("mload", 3, mload())
	for i := 0; i < 12; i++ {
		if d := r.period(); d.MovedWays != 0 {
			t.Fatalf("period %d moved %d ways with sparse masks", i, d.MovedWays)
		}
	}
	if r.ways["mlr"] != 8 || r.ways["mload"] != 1 {
		t.Fatalf("mlr %d mload %d, want 8 and 1 as with contiguous masks", r.ways["mlr"], r.ways["mload"])
	}
}

// Rates use the time the samples cover: a workload making 5M LLC references/s, seen through
// one 100 ms sample per 1 s period, is not taken for idle (0.5M refs per period).
func TestSampleIntervalRates(t *testing.T) {
	for _, withInterval := range []bool{false, true} {
		c, _ := New(DefaultOptions(20))
		_ = c.Add("w", 3)
		_, _, _ = c.Step(0, nil)
		a := app{ipc: constant(1), miss: constant(0.2), loadsPI: 0.3, refsPI: 0.0025}
		var d Decision
		for i := 1; i <= 2; i++ {
			s := a.sample("w", 3, 0.1) // 100 ms of counters
			if withInterval {
				s.Interval = 100 * time.Millisecond
			}
			d, _, _ = c.Step(time.Duration(i)*time.Second, []Sample{s})
		}
		st, _ := c.State("w")
		if withInterval && (st == Donor || d.Ways("w") < 3) {
			t.Fatalf("with the interval given, 5M refs/s is not idle: %v, %d ways", st, d.Ways("w"))
		}
		if !withInterval && st != Donor {
			t.Fatalf("without the interval the rate is 0.5M refs/s, below llc_ref_rate: expected Donor, got %v", st)
		}
	}
}

// must fails the test on an error.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
