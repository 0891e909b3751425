package vp

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"colo/internal/machinetest"
	"colo/machine"
	"colo/profile"
)

func TestClassifyBounds(t *testing.T) {
	th := DefaultThresholds()
	cases := []struct {
		mpki, mf float64
		want     State
	}{
		{1, 0.1, 0}, {3, 0.1, 1}, {20, 0.1, 2},
		{1, 0.3, 3}, {3, 0.3, 4}, {20, 0.3, 5},
		{1, 0.9, 6}, {3, 0.9, 7}, {20, 0.9, 8},
		{2, 0.25, 4}, {15, 0.6, 5}, {15, 0.61, 8},
	}
	for _, c := range cases {
		if got := th.Classify(c.mpki, c.mf); got != c.want {
			t.Errorf("Classify(%v, %v) = %v, want %v", c.mpki, c.mf, got, c.want)
		}
	}
	// The thesis's examples (seed004.md §2.2–2.3): Mcf S1 cache-sensitive → S4 under
	// interference; Stream and Milc S8 memory-sensitive; Matrix-Multiply S2 cache- but not
	// memory-sensitive; Voldemort S5 memory-sensitive.
	if s := State(1); !s.CacheSensitive() || s.MemorySensitive() {
		t.Error("S1 (Mcf) must be cache- and not memory-sensitive")
	}
	if s := State(2); !s.CacheSensitive() || s.MemorySensitive() {
		t.Error("S2 (Matrix-Multiply) must be cache- and not memory-sensitive")
	}
	for _, s := range []State{5, 8} {
		if !s.MemorySensitive() || s.CacheSensitive() {
			t.Errorf("%v must be memory- and not cache-sensitive", s)
		}
	}
	for _, s := range []State{0, 3, 6} {
		if s.Intensive() || s.CacheSensitive() || s.MemorySensitive() {
			t.Errorf("Pug %v must be insensitive and not intensive", s)
		}
	}
}

func TestThresholdsAndOptionsValidate(t *testing.T) {
	m := machinetest.Get(t, "icx-4314-2s")
	for name, mut := range map[string]func(*Options){
		"L3 MPKI":         func(o *Options) { o.MPKILow = -1 },
		"MF bounds":       func(o *Options) { o.MFHigh = 0.1 },
		"period":          func(o *Options) { o.Period = 0 },
		"hurt_threshold":  func(o *Options) { o.HurtThreshold = -0.1 },
		"window":          func(o *Options) { o.Window = 0 },
		"confine_ways":    func(o *Options) { o.ConfineWays = 12 },
		"mba_floor":       func(o *Options) { o.MBAFloor = 5 },
		"saturation":      func(o *Options) { o.Saturation = 0 },
		"quota":           func(o *Options) { o.QuotaFloor = 0 },
		"phase_threshold": func(o *Options) { o.PhaseThreshold = 0 },
		"saturation_exit": func(o *Options) { o.SaturationExit = 1.5 },
		"relax_after":     func(o *Options) { o.RelaxAfter = -1 },
	} {
		o := DefaultOptions(m)
		mut(&o)
		if _, err := New(m, o); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := New(m, DefaultOptions(m)); err != nil {
		t.Fatal(err)
	}
}

// papp is a test workload model on a socket: MF rises with unconfined streaming corunners in
// its LLC domain, IPC falls with MF and with the saturation of its socket's memory bandwidth.
type papp struct {
	ipc0      float64 // IPC alone
	l2mpki    float64 // L2 misses per kilo-instruction (private, phase signature)
	mf0       float64 // memory factor alone
	cacheSens float64 // MF added by a polluting corunner
	streaming bool    // pollutes the shared ways
	bwGBs     float64 // memory traffic at full quota and no throttle
	memSens   float64 // IPC loss per unit of socket saturation
	on        bool
}

type plant struct {
	m    *machine.Profile
	apps map[string]*papp
	cfg  map[string]Config
}

func (p *plant) bw(id string) float64 {
	a, c := p.apps[id], p.cfg[id]
	return a.bwGBs * float64(c.MBA) / 100 * c.Quota
}

func (p *plant) samples(dt float64) []Sample {
	peak := p.m.MemBWPerSocketMBps / 1000
	demand := map[int]float64{}
	for id, a := range p.apps {
		if a.on {
			demand[p.cfg[id].socket(p.m)] += p.bw(id)
		}
	}
	var out []Sample
	for _, id := range sortedIDs(p.apps) {
		a := p.apps[id]
		if !a.on {
			continue
		}
		c := p.cfg[id]
		pollution := 0.0
		for jd, b := range p.apps {
			if jd == id || !b.on || !b.streaming || p.cfg[jd].domain(p.m) != c.domain(p.m) {
				continue
			}
			if p.cfg[jd].Mask == p.m.FullMask() {
				pollution += 1
			} else {
				pollution += 0.1
			}
		}
		mf := math.Min(1, a.mf0+a.cacheSens*math.Min(1, pollution))
		sat := math.Min(1, math.Max(0, demand[c.socket(p.m)]/peak-0.8)/0.2)
		throttle := 1 + 2*(1-float64(c.MBA)/100)
		ipc := a.ipc0 / (1 + 2*(mf-a.mf0) + a.memSens*sat) / throttle
		cycles := 2.4e9 * dt * float64(len(c.Cores)) * c.Quota
		instr := ipc * cycles
		l2 := a.l2mpki * instr / 1000
		out = append(out, Sample{ID: id, Instructions: instr, Cycles: cycles, L2Misses: l2, LLCMisses: mf * l2,
			MemBytes: p.bw(id) * 1e9 * dt})
	}
	return out
}

func sortedIDs(m map[string]*papp) []string {
	var ids []string
	for k := range m {
		ids = append(ids, k)
	}
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			if ids[j] < ids[i] {
				ids[i], ids[j] = ids[j], ids[i]
			}
		}
	}
	return ids
}

type vrig struct {
	t    *testing.T
	c    *Controller
	p    *plant
	now  time.Duration
	acts []string // the actions of the periods run by run
}

// newController is a controller for p with the default options changed by opt (if not nil).
func newController(t *testing.T, p *machine.Profile, opt func(*Options)) *Controller {
	t.Helper()
	o := DefaultOptions(p)
	if opt != nil {
		opt(&o)
	}
	c, err := New(p, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newVRig(t *testing.T, opt func(*Options)) *vrig {
	m := machinetest.Get(t, "icx-4314-2s")
	c := newController(t, m, opt)
	return &vrig{t: t, c: c, p: &plant{m: m, apps: map[string]*papp{}, cfg: map[string]Config{}}}
}

func (r *vrig) add(id string, cores []int, a *papp) {
	r.t.Helper()
	if err := r.c.Add(id, 1, cores); err != nil {
		r.t.Fatal(err)
	}
	r.p.apps[id] = a
}

// period runs one period and returns the decision, applying its configurations to the plant.
func (r *vrig) period() Decision {
	r.t.Helper()
	r.now += time.Second
	d, ok, err := r.c.Step(r.now, r.p.samples(1))
	if err != nil || !ok {
		r.t.Fatalf("step: ok=%v err=%v", ok, err)
	}
	for _, c := range d.Configs {
		r.p.cfg[c.ID] = c
	}
	return d
}

// addVictimAndStreamer adds a cache-sensitive victim V (cores 0-1, running) and a
// streaming aggressor X (cores 2-3, 10 GB/s, not started).
func (r *vrig) addVictimAndStreamer() {
	r.add("V", []int{0, 1}, &papp{ipc0: 1, l2mpki: 20, mf0: 0.15, cacheSens: 0.35, bwGBs: 5, on: true})
	r.add("X", []int{2, 3}, &papp{ipc0: 0.5, l2mpki: 40, mf0: 0.95, streaming: true, bwGBs: 10})
}

// start takes the initial step and three calm periods.
func (r *vrig) start() {
	r.init()
	for i := 0; i < 3; i++ {
		r.period()
	}
}

// startStreaming starts the rig (start) and then the streaming aggressor X.
func (r *vrig) startStreaming() {
	r.start()
	r.p.apps["X"].on = true
}

// run runs n periods and appends their actions to r.acts.
func (r *vrig) run(n int) {
	for i := 0; i < n; i++ {
		r.acts = append(r.acts, actStrings(r.period())...)
	}
}

// wantActs requires the actions run has recorded since the last wantActs to be want
// (none when want is empty), then forgets them.
func (r *vrig) wantActs(what string, want ...string) {
	r.t.Helper()
	if fmt.Sprint(r.acts) != fmt.Sprint(want) {
		r.t.Fatalf("%s:\n got  %v\n want %v", what, r.acts, want)
	}
	r.acts = nil
}

func (r *vrig) init() {
	d, ok, err := r.c.Step(0, nil)
	if err != nil || !ok {
		r.t.Fatalf("init: %v %v", ok, err)
	}
	for _, c := range d.Configs {
		r.p.cfg[c.ID] = c
	}
}

// The ladder on the example of issue #8: a cache-sensitive victim V with a streaming aggressor
// X and a bandwidth hog H on socket 0, a memory-sensitive Y on socket 1.
//
//  1. X starts: V moves S1 → S4 (cache hurt). The cheapest action, confining X to 2 ways,
//     is sufficient; its window sees no repercussion; the episode closes.
//  2. H starts: socket 0 saturates, V is hurt through bandwidth. The ladder throttles with
//     MBA (H, then X, down to the floor), then CPU quota (H, then X), then moves H to socket 1.
//     The window catches Y hurt on socket 1 (repercussion); the move made the weighted
//     unfairness worse, so it is undone and excluded, and the next action is chosen: moving X,
//     whose traffic socket 1 absorbs. V recovers, Y stays unhurt.
//  3. Nobody is hurt any more: the kept throttles are relaxed one by one, each watched by a
//     window, and none is needed — everybody ends unthrottled (X's confinement went with its
//     move), nobody hurt.
func TestLadderSequence(t *testing.T) {
	r := newVRig(t, func(o *Options) { o.MBAFloor = 90; o.QuotaFloor = 0.9 })
	r.add("V", []int{0, 1}, &papp{ipc0: 1, l2mpki: 20, mf0: 0.15, cacheSens: 0.35, bwGBs: 5, memSens: 0.6, on: true})
	r.add("X", []int{2, 3}, &papp{ipc0: 0.5, l2mpki: 40, mf0: 0.95, streaming: true, bwGBs: 40, memSens: 0.2})
	r.add("H", []int{4, 5}, &papp{ipc0: 0.4, l2mpki: 60, mf0: 0.9, bwGBs: 90, memSens: 0.1})
	r.add("Y", []int{16, 17}, &papp{ipc0: 0.8, l2mpki: 40, mf0: 0.5, bwGBs: 50, memSens: 0.6, on: true})
	r.init()
	var acts []string
	record := func(d Decision) {
		acts = append(acts, actStrings(d)...)
	}
	for i := 0; i < 3; i++ {
		d := r.period()
		record(d)
	}
	if s := statusOf(r.period(), "V"); s.State != 1 {
		t.Fatalf("V alone should be S1 (Terrier, MF < 0.25), is %v", s.State)
	}
	if s := statusOf(r.period(), "Y"); s.State != 5 {
		t.Fatalf("Y should be S5 (Bulldog, MF 0.25–0.6), is %v", s.State)
	}
	if len(acts) != 0 {
		t.Fatalf("no hurt, no action: got %v", acts)
	}
	// 1. The streaming aggressor starts.
	r.p.apps["X"].on = true
	d := r.period()
	record(d)
	if s := statusOf(d, "V"); s.State != 4 || !s.Hurt {
		t.Fatalf("V with X should be hurt in S4, is %+v", s)
	}
	for i := 0; i < 4; i++ {
		record(r.period())
	}
	want1 := []string{"cat-confine X"}
	if fmt.Sprint(acts) != fmt.Sprint(want1) {
		t.Fatalf("cache episode: actions %v, want %v", acts, want1)
	}
	if c, _ := r.c.decisionCfg("X"); c.Mask != 0xc00 {
		t.Fatalf("X confined to %#x, want the top 2 ways 0xc00", c.Mask)
	}
	// 2. The bandwidth hog starts.
	acts = nil
	r.p.apps["H"].on = true
	peakWMU := 0.0
	for i := 0; i < 20; i++ {
		d := r.period()
		record(d)
		peakWMU = math.Max(peakWMU, d.WMU)
	}
	want2 := []string{
		"mba-step H", "mba-step X", "cpu-quota H", "cpu-quota X", "socket-move H",
		"undo socket-move H (repercussion on [Y])", "socket-move X",
	}
	if fmt.Sprint(acts[:min(len(acts), len(want2))]) != fmt.Sprint(want2) {
		t.Fatalf("bandwidth episode:\n got  %v\n want %v", acts, want2)
	}
	// 3. With X on socket 1 nobody is hurt: the throttles are relaxed, most recent first
	// among those whose socket has been calm for 5 periods (Y, hurt by H's undone move,
	// makes socket 1 calm later than socket 0), each watched for a window; none brings
	// the hurt back.
	acts = acts[len(want2):]
	for i := 0; i < 15; i++ {
		record(r.period())
	}
	want3 := []string{"relax cpu-quota H", "relax cpu-quota X", "relax mba-step X", "relax mba-step H"}
	if fmt.Sprint(acts) != fmt.Sprint(want3) {
		t.Fatalf("relaxation:\n got  %v\n want %v", acts, want3)
	}
	d = r.period()
	for _, id := range []string{"V", "Y", "H", "X"} {
		if s := statusOf(d, id); s.Hurt {
			t.Fatalf("%s hurt at the end: %+v", id, s)
		}
	}
	if c, _ := d.Config("X"); c.socket(r.p.m) != 1 || c.MBA != 100 || c.Quota != 1 {
		t.Fatalf("X should end on socket 1 unthrottled: %+v", c)
	}
	if c, _ := d.Config("H"); c.socket(r.p.m) != 0 || c.MBA != 100 || c.Quota != 1 {
		t.Fatalf("H's move was undone and its throttles relaxed: %+v", c)
	}
	if !(d.WMU < 1.1 && d.WMU < peakWMU/2) || d.PE <= 0 {
		t.Fatalf("final WMU %v (peak %v) PE %v", d.WMU, peakWMU, d.PE)
	}
	if len(r.c.kept) != 0 {
		t.Fatalf("throttles still kept: %+v", r.c.kept)
	}
}

func actStrings(d Decision) []string {
	var out []string
	rel := func(a Action) string {
		if a.Relax {
			return "relax "
		}
		return ""
	}
	for _, u := range d.Undone {
		out = append(out, fmt.Sprintf("undo %s%v %s (repercussion on %v)", rel(u), u.Kind, u.Target, u.Repercussions))
	}
	for _, a := range d.Actions {
		out = append(out, fmt.Sprintf("%s%v %s", rel(a), a.Kind, a.Target))
	}
	return out
}

func (c *Controller) decisionCfg(id string) (Config, bool) {
	w, ok := c.ws[id]
	if !ok {
		return Config{}, false
	}
	return w.cfg, true
}

func statusOf(d Decision, id string) Status {
	for _, s := range d.Statuses {
		if s.ID == id {
			return s
		}
	}
	return Status{}
}

// Act only on observed hurt: a saturated socket whose workloads have run like this from the
// start is left alone.
func TestNoHurtNoAction(t *testing.T) {
	r := newVRig(t, nil)
	r.add("V", []int{0}, &papp{ipc0: 1, l2mpki: 20, mf0: 0.15, cacheSens: 0.35, bwGBs: 5, memSens: 0.6, on: true})
	r.add("H", []int{1}, &papp{ipc0: 0.4, l2mpki: 60, mf0: 0.9, bwGBs: 130, memSens: 0.1, on: true})
	r.add("X", []int{2}, &papp{ipc0: 0.5, l2mpki: 40, mf0: 0.95, streaming: true, bwGBs: 10, on: true})
	r.init()
	for i := 0; i < 10; i++ {
		if d := r.period(); len(d.Actions) > 0 {
			t.Fatalf("period %d: action %v without observed hurt", i, d.Actions)
		}
	}
}

func TestAddRejects(t *testing.T) {
	r := newVRig(t, nil)
	r.add("a", []int{0}, &papp{})
	for _, tc := range []struct {
		id    string
		cores []int
		frag  string
	}{
		{"a", []int{1}, "already"},
		{"b", []int{0}, "already used"},
		{"c", []int{99}, "outside"},
		{"d", []int{15, 16}, "spans"},
		{"e", nil, "at least one core"},
	} {
		if err := r.c.Add(tc.id, 1, tc.cores); err == nil || !strings.Contains(err.Error(), tc.frag) {
			t.Errorf("Add(%q, %v) = %v, want %q", tc.id, tc.cores, err, tc.frag)
		}
	}
}

// The 9-state classification of the dataset's 55 SPEC applications (Skylake-SP, 11 ways),
// alone with the whole LLC and squeezed to one way. L3 MPKI is llcmpki; MF is
// llcmpki/llcrpki (LLC references are the L2 misses). Anchors from the thesis: Milc is S8,
// Mcf (CPU2000, as on the thesis's Westmere) is S1 and moves down under cache pressure.
// Property: taking cache away never moves an application up a row or left a column.
func TestClassifyDataset(t *testing.T) {
	set, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	th := DefaultThresholds()
	count := map[State]int{}
	classify := func(tb *profile.Table, w int) State {
		mpki := tb.Value(profile.LLCMPKI, w)
		return th.Classify(mpki, MemoryFactor(mpki, tb.Value(profile.LLCRPKI, w)))
	}
	for _, name := range set.Names() {
		tb, _ := set.Get(name)
		full, one := classify(tb, set.Ways()), classify(tb, 1)
		count[full]++
		t.Logf("%-14s %v (1 way: %v)", name, full, one)
		if one.Row() < full.Row() || one.Col() < full.Col() {
			t.Errorf("%s: %v with the whole cache but %v with one way", name, full, one)
		}
	}
	t.Logf("states with the whole cache: %v", count)
	for name, want := range map[string]State{"milc06": 8, "mcf00": 1, "swim00": 8, "omnetpp06": 1, "povray06": 0} {
		tb, _ := set.Get(name)
		if got := classify(tb, set.Ways()); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	tb, _ := set.Get("mcf00")
	if s := classify(tb, 1); s.Row() <= 0 {
		t.Errorf("mcf00 with one way should move down from S1, is %v", s)
	}
	if len(set.Names()) != 55 {
		t.Errorf("%d apps, the data set has 55", len(set.Names()))
	}
}

// Core move: on a machine with SMT, an aggressor on the victim's sibling thread moves to a
// free core of the same LLC domain whose physical core the victim does not use.
func TestCoreMoveOffSiblings(t *testing.T) {
	base := machinetest.Get(t, "icx-4314-2s")
	m := *base
	m.ThreadsPerCore = 2 // logical CPUs 0..63; c and c+32 are siblings
	c, err := New(&m, DefaultOptions(&m))
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Add("v", 1, []int{0, 1}))
	must(t, c.Add("a", 1, []int{32, 2}))
	must(t, c.Add("o", 1, []int{3}))
	cfg, ok := c.apply(CoreMove, c.ws["a"], c.ws["v"])
	if !ok {
		t.Fatal("core move not applicable to an aggressor on the victim's sibling")
	}
	for _, k := range cfg.Cores {
		if k%32 == 0 || k%32 == 1 || k == 3 || m.DomainOfCore(k%32) != 0 {
			t.Fatalf("moved to %v: a sibling of the victim, a busy core or another domain", cfg.Cores)
		}
	}
	if cfg.Cores[0] != 2 && cfg.Cores[1] != 2 {
		t.Fatalf("the core that was not a sibling should stay: %v", cfg.Cores)
	}
	// Without SMT the rung does not apply.
	c2, _ := New(base, DefaultOptions(base))
	must(t, c2.Add("v", 1, []int{0}))
	must(t, c2.Add("a", 1, []int{1}))
	if _, ok := c2.apply(CoreMove, c2.ws["a"], c2.ws["v"]); ok {
		t.Fatal("core move applied without SMT siblings")
	}
}

// A victim whose ladder runs out is given up on (so that it does not block other victims'
// episodes) until its hurt clears: here every rung is skipped.
func TestExhaustedLadderDoesNotBlock(t *testing.T) {
	r := newVRig(t, func(o *Options) { o.Skip = []Kind{CATConfine, CPUQuota, CoreMove, SocketMove, MBAStep} })
	r.add("V", []int{0}, &papp{ipc0: 1, l2mpki: 20, mf0: 0.15, cacheSens: 0.35, bwGBs: 5, memSens: 0.6, on: true})
	r.add("X", []int{1}, &papp{ipc0: 0.5, l2mpki: 40, mf0: 0.95, streaming: true, bwGBs: 40})
	r.startStreaming()
	for i := 0; i < 3; i++ {
		r.period()
	}
	if !r.c.exhausted["V"] || r.c.ep != nil {
		t.Fatalf("with no rung left, V's episode should be given up: exhausted %v, episode %+v", r.c.exhausted, r.c.ep)
	}
	// V's hurt clears (the aggressor stops): V can be served again later.
	r.p.apps["X"].on = false
	r.period()
	if r.c.exhausted["V"] {
		t.Fatal("V still marked exhausted after its hurt cleared")
	}
}

// Relaxation with hysteresis, no ping-pong (seed004.md §5.1 item 7). A streaming X hurts V
// and is confined. While X keeps streaming, the confinement is relaxed once after 5 calm
// periods; the window sees V hurt again and the mask is restored at once and pinned: in
// the next 60 periods it is never relaxed again. X's phase change (its L2 behaviour moves)
// unpins it: one more attempt, hurt again, pinned again. When V leaves, the confinement is
// relaxed for good. Every relaxation steps back the most recent throttle.
func TestRelaxNoPingPong(t *testing.T) {
	r := newVRig(t, nil)
	r.addVictimAndStreamer()
	r.startStreaming()
	r.run(12)
	r.wantActs("confine, one relaxation, restored", "cat-confine X", "relax cat-confine X", "undo relax cat-confine X (repercussion on [V])")
	if c, _ := r.c.decisionCfg("X"); c.Mask != 0xc00 {
		t.Fatalf("the confinement should be restored: %#x", c.Mask)
	}
	r.run(60)
	r.wantActs("a pinned throttle must not be relaxed again while nothing changes")
	// X's phase changes (L2 MPKI 40 → 80): one new attempt, hurt again, pinned again.
	r.p.apps["X"].l2mpki = 80
	r.run(30)
	r.wantActs("after X's phase change", "relax cat-confine X", "undo relax cat-confine X (repercussion on [V])")
	// V leaves: the contention it suffered from is gone, the confinement goes for good.
	if err := r.c.Remove("V"); err != nil {
		t.Fatal(err)
	}
	delete(r.p.apps, "V")
	r.run(20)
	r.wantActs("after V left", "relax cat-confine X")
	if c, _ := r.c.decisionCfg("X"); c.Mask != r.p.m.FullMask() || len(r.c.kept) != 0 {
		t.Fatalf("X should have the full mask back and nothing kept: %#x %+v", c.Mask, r.c.kept)
	}
}

// A throttle the ladder takes again after a relaxation that looked fine in its window is
// pinned (the relaxation was premature): hurt that comes back after the window does not make
// the controller alternate between relaxing and re-taking the throttle.
func TestRelaxRetakenIsPinned(t *testing.T) {
	r := newVRig(t, nil)
	r.addVictimAndStreamer()
	r.startStreaming()
	r.run(4)
	// X pauses its streaming: the confinement is relaxed and the window sees no hurt.
	r.p.apps["X"].streaming = false
	r.run(10)
	// X streams again after the window: V is hurt, the ladder confines X again — pinned.
	r.p.apps["X"].streaming = true
	r.run(4)
	r.wantActs("confined, relaxed, confined again", "cat-confine X", "relax cat-confine X", "cat-confine X")
	if len(r.c.kept) != 1 || !r.c.kept[0].pinned {
		t.Fatalf("the re-taken confinement should be pinned: %+v", r.c.kept)
	}
	// The next pause is not answered by another relaxation.
	r.p.apps["X"].streaming = false
	r.run(30)
	r.wantActs("pinned, yet")
}

// An action undone for its repercussions is banned for its victim until the victim or the
// target changes phase or a workload leaves: when the victim's hurt clears for a moment and
// comes back, the next episode does not repeat the move (no move / move-back ping-pong).
// Only socket moves are allowed here; moving the streaming X to socket 1 hurts Y there.
func TestUndoneActionBanned(t *testing.T) {
	r := newVRig(t, func(o *Options) { o.Skip = []Kind{CATConfine, MBAStep, CPUQuota, CoreMove} })
	r.addVictimAndStreamer()
	r.add("Y", []int{16, 17}, &papp{ipc0: 1, l2mpki: 20, mf0: 0.15, cacheSens: 0.35, bwGBs: 5, on: true})
	r.startStreaming()
	r.run(4)
	want := []string{"socket-move X", "undo socket-move X (repercussion on [Y])"}
	r.wantActs("X moved, and moved back", want...)
	// X pauses for a period (V is fine, its exhausted mark clears), then streams again.
	r.p.apps["X"].on = false
	r.run(1)
	r.p.apps["X"].on = true
	r.acts = nil
	r.run(10)
	r.wantActs("the undone move was tried again")
	// X's phase changes: the ban is lifted and the move is tried (and undone) once more.
	r.p.apps["X"].l2mpki = 80
	r.run(6)
	r.wantActs("after X's phase change", want...)
}

// must fails the test on an error.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
