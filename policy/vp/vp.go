// Package vp is the Virtual Platforms / Merlin mitigation controller (Tembey 2013;
// ../shared/research/seed004.md §2, §5.3) ported to current hardware, as a pure deterministic
// state machine.
//
// Every period it classifies each workload into the 9 intensity × reuse states (L3 MPKI and
// the memory factor MF = L3 misses / L2 misses), and acts only on observed hurt: a workload
// whose IPC fell more than HurtThreshold below its reference in the same phase. The hurt is a
// cache hurt when the workload also moved down a row, or its MF rose by more than MFRise
// (MF rose while its L2 behaviour, the phase, stayed the same), otherwise a bandwidth hurt when its memory domain is saturated.
// The response climbs a ladder of actions ordered by cost (seed004.md §5.1 item 3):
//
//	cache hurt:     CAT confine the aggressor → CPU quota → core move within the LLC domain → socket move
//	bandwidth hurt: MBA step on the aggressor → CPU quota → socket move
//
// taking the cheapest applicable action first, one action at a time. After each action a
// repercussion window of Window periods watches the other workloads of the domains the action
// touched; a workload that becomes hurt or moves down a row in the window is charged to the
// action. If the action caused such a repercussion and did not lower the weighted min-max
// unfairness (metric.WeightedMaxUnfairness) it is undone and banned for this victim until the
// victim or the target changes phase or a workload leaves (so that the next episode of the
// same victim does not retry it: no move and move back), and
// the next action is chosen. If the victim is still hurt the ladder continues; if not, the
// episode is closed.
//
// # Choices the thesis leaves open (seed004.md §2.5, §2.6, §5.3), decided here
//
//   - Which corunner acts as the aggressor: the intensive (Terrier or Bulldog) corunners of the
//     victim's LLC domain (cache) or socket (bandwidth) whose weight is not above the victim's,
//     ranked by LLC misses per second (cache) or memory bytes per second (bandwidth); ties by ID.
//     A higher-priority workload never absorbs hurt for a lower-priority one.
//   - Order of evaluation: one action in flight at a time; the victim with the largest
//     weighted degradation w·(1 − 1/S) is served first.
//   - Reference performance: the highest IPC seen in the workload's current phase; a phase is
//     a stretch with L2 misses per kilo-instruction within PhaseThreshold of its start (L2
//     behaviour is private to the core, so co-runners do not move it).
//   - CAT confinement: the aggressor's mask becomes the top ConfineWays ways of its domain;
//     everybody else keeps the full mask (VP does not partition, it isolates the aggressor).
//   - Socket move: to the socket with the most free cores that can hold the workload, lowest
//     cores first; its mask there is the full mask and it keeps its MBA and quota.
//   - The repercussion window, the hurt threshold and the floors are options (the thesis gives
//     none).
//   - Saturation hysteresis: a bandwidth episode opens when the socket's traffic exceeds
//     Saturation × its bandwidth and continues while its victim is hurt and the traffic
//     exceeds SaturationExit × that threshold, so that the contention left just below the
//     threshold is still acted on.
//
// # Relaxation (seed004.md §5.1 item 7: borrow/release ping-pong needs history or hysteresis)
//
// The thesis never gives a throttle back. Here the throttles (CAT confinement, MBA steps, CPU
// quota) taken and kept form a stack. When no episode and no window is open, and the victim
// of the most recent throttle and every workload of its target's socket have not been hurt
// for RelaxAfter periods, that throttle is relaxed — most recent first, one step (an MBA or
// quota step back, the mask before the confinement) — and a repercussion window watches the
// socket and the victim. A workload that becomes hurt or moves down a row in it brings the
// throttle back at once (the next window only waits for it to take effect), and the
// throttle is then pinned: it is not relaxed again until its
// victim or target changes phase or a workload of the target's socket leaves (a departure
// can remove the contention; an arrival cannot). A throttle the ladder takes again after it
// was relaxed is pinned the same way: the relaxation was premature. So a throttle is relaxed
// at most once per change of the conditions it was taken under — no ping-pong. Moves are
// not relaxed: the moved workload runs unthrottled where it is, and moving it back would
// cost its cache contents again.
package vp

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"colo/machine"
	"colo/metric"
	"colo/policy/ctlsched"
)

// Kind is a rung of the ladder, in increasing cost.
type Kind int

const (
	CATConfine Kind = iota // write a CAT mask: µs, no data moves
	MBAStep                // write an MBA value: µs
	CPUQuota               // lower the CPU quota by QuotaStep
	CoreMove               // move to other cores of the same LLC domain (off the victim's SMT siblings)
	SocketMove             // move to another socket: the LLC contents are lost
)

var kindNames = [...]string{"cat-confine", "mba-step", "cpu-quota", "core-move", "socket-move"}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// HurtKind is what a victim suffers from.
type HurtKind int

const (
	CacheHurt HurtKind = iota
	BandwidthHurt
)

func (h HurtKind) String() string {
	if h == CacheHurt {
		return "cache"
	}
	return "bandwidth"
}

// Options are the controller's parameters.
type Options struct {
	Thresholds
	// Period is the monitoring period (the VPM samples every 1 s, seed004.md §2.8).
	Period time.Duration
	// HurtThreshold: a slowdown against the phase reference above 1 + HurtThreshold is hurt
	// (10 %; the thesis says only "significant" hurt, seed004.md §2.3: colo's choice).
	HurtThreshold float64
	// PhaseThreshold: relative change of L2 MPKI that starts a new phase (50 %; colo's choice,
	// the thesis has no phase detector).
	PhaseThreshold float64
	// Window is the repercussion window in periods after each action (2; the thesis never
	// gives its length, seed004.md §2.6, §5: colo's choice).
	Window int
	// Saturation: a socket whose memory traffic exceeds this fraction of its bandwidth is
	// saturated (0.8 of machine.Profile.MemBWPerSocketMBps; the thesis's 100 L3 MPKI per node,
	// re-expressed in bytes as seed004.md §5.1 item 4 suggests).
	Saturation float64
	// ConfineWays is the size of the mask an aggressor is confined to (2; VP had no CAT, so
	// this rung is colo's RDT translation, seed004.md §5.1 item 1).
	ConfineWays int
	// MBAFloor is the lowest MBA value the ladder sets (the machine's minimum by default).
	MBAFloor int
	// QuotaStep and QuotaFloor: CPU quota is lowered by QuotaStep down to QuotaFloor
	// (10 % steps like the Xen credit-scheduler cap, seed004.md §1.3, §2.8; the floor 0.5 is
	// colo's choice).
	QuotaStep, QuotaFloor float64
	// Epsilon: an action with a repercussion is kept only if it lowers the weighted
	// min-max unfairness by more than Epsilon (0; Merlin's ε is not given, seed004.md §5).
	Epsilon float64
	// MFRise: a hurt workload outside the last row whose MF rose by more than this above the
	// lowest MF of its phase suffers from the cache even without a row change (0.05; seed004.md §5.3: "MF
	// rises while L2 MPKI stays flat" — the rows alone miss a rise inside one class).
	MFRise float64
	// SaturationExit: an open bandwidth episode continues while its victim is hurt and the
	// socket's traffic exceeds SaturationExit × Saturation × bandwidth (0.75; colo's choice).
	SaturationExit float64
	// RelaxAfter: a kept throttle is relaxed after its victim and its target's socket have
	// been free of hurt for this many periods (5; 0 never relaxes, as in the thesis).
	RelaxAfter int
	// Skip lists rungs the platform cannot actuate (e.g. CPU quota or moves inside a socket).
	Skip []Kind
}

// DefaultOptions returns the thesis's thresholds and colo's choices for the rest, for the
// given machine.
func DefaultOptions(m *machine.Profile) Options {
	o := Options{
		Thresholds:     DefaultThresholds(),
		Period:         time.Second,
		HurtThreshold:  0.10,
		PhaseThreshold: 0.5,
		Window:         2,
		Saturation:     0.8,
		ConfineWays:    2,
		QuotaStep:      0.1,
		QuotaFloor:     0.5,
		SaturationExit: 0.75,
		MFRise:         0.05,
		RelaxAfter:     5,
	}
	if m != nil && m.MBA != nil {
		o.MBAFloor = m.MBA.Min
	}
	return o
}

// Validate rejects options outside their meaning.
func (o Options) Validate(m *machine.Profile) error {
	errs := []error{o.Thresholds.Validate()}
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf("vp: "+f, a...)) }
	if o.Period <= 0 {
		bad("period = %v: must be positive (the thesis uses 1s)", o.Period)
	}
	if !(o.HurtThreshold > 0 && o.HurtThreshold < 1) {
		bad("hurt_threshold = %v: must be in (0, 1)", o.HurtThreshold)
	}
	if !(o.PhaseThreshold > 0) {
		bad("phase_threshold = %v: must be positive", o.PhaseThreshold)
	}
	if o.Window < 1 {
		bad("window = %d: the repercussion window needs at least 1 period", o.Window)
	}
	if !(o.Saturation > 0 && o.Saturation <= 1) {
		bad("saturation = %v: must be a fraction in (0, 1]", o.Saturation)
	}
	if !(o.QuotaStep > 0 && o.QuotaStep < 1) || !(o.QuotaFloor > 0 && o.QuotaFloor <= 1) {
		bad("quota step %v / floor %v: must be fractions in (0, 1)", o.QuotaStep, o.QuotaFloor)
	}
	if !(o.SaturationExit > 0 && o.SaturationExit <= 1) {
		bad("saturation_exit = %v: must be a fraction of saturation in (0, 1]", o.SaturationExit)
	}
	if !(o.MFRise > 0 && o.MFRise < 1) {
		bad("mf_rise = %v: must be in (0, 1)", o.MFRise)
	}
	if o.RelaxAfter < 0 {
		bad("relax_after = %d: must be ≥ 0 periods (0 never relaxes)", o.RelaxAfter)
	}
	if !(o.Epsilon >= 0) {
		bad("epsilon = %v: must be non-negative", o.Epsilon)
	}
	if m != nil {
		if o.ConfineWays < max(1, m.CAT.MinCBMBits) || o.ConfineWays >= m.LLC.Ways {
			bad("confine_ways = %d: must be in %d..%d on %s", o.ConfineWays, max(1, m.CAT.MinCBMBits), m.LLC.Ways-1, m.Name)
		}
		if m.MBA != nil && (o.MBAFloor < m.MBA.Min || o.MBAFloor > m.MBA.Max) {
			bad("mba_floor = %d: must be in %d..%d on %s", o.MBAFloor, m.MBA.Min, m.MBA.Max, m.Name)
		}
		if m.MemBWPerSocketMBps <= 0 {
			bad("machine %s has no memory bandwidth per socket; the saturation test needs it", m.Name)
		}
	}
	return errors.Join(errs...)
}

// Sample is one workload's counter deltas since its previous sample.
type Sample struct {
	ID           string
	Instructions float64
	Cycles       float64
	L2Misses     float64 // or LLC references where no L2-miss counter exists
	LLCMisses    float64
	MemBytes     float64 // memory traffic (MBM total bytes)
	// Interval is the time the counts cover; 0 means "since the previous period" (see
	// dcat.Sample.Interval).
	Interval time.Duration
}

// Config is a workload's placement and limits.
type Config struct {
	ID     string
	Weight float64
	Cores  []int   // logical CPUs, socket-major numbering
	Mask   uint64  // CAT mask in its LLC domain
	MBA    int     // MBA value (percent); 0 when the machine has no MBA
	Quota  float64 // CPU quota as a fraction of its cores
}

// Socket returns the socket of the workload's first core.
func (c Config) socket(m *machine.Profile) int { return m.SocketOfCore(c.Cores[0] % m.Cores()) }
func (c Config) domain(m *machine.Profile) int { return m.DomainOfCore(c.Cores[0] % m.Cores()) }

// Action is one rung taken.
type Action struct {
	At       time.Duration
	Kind     Kind
	Target   string
	Victim   string
	Hurt     HurtKind
	Before   Config
	After    Config
	Reverted bool // set on the copy reported when the action is undone
	// Relax marks the relaxation of an earlier throttle (Kind says which rung is stepped
	// back); reported Reverted when the hurt came back in its window.
	Relax bool
	// Repercussions are the workloads whose hurt the window charged to this action.
	Repercussions []string
}

func (a Action) String() string {
	s := fmt.Sprintf("%v %s for %s (%v)", a.Kind, a.Target, a.Victim, a.Hurt)
	if a.Relax {
		s = "relax " + s
	}
	if a.Reverted {
		s += " reverted"
	}
	return s
}

// Status is a workload's classification in a period.
type Status struct {
	ID       string
	State    State
	L3MPKI   float64
	MF       float64
	IPC      float64
	Slowdown float64 // reference IPC / IPC (1 when no reference yet)
	Hurt     bool
}

// Decision is the controller's output after a period.
type Decision struct {
	At      time.Duration
	Configs []Config // sorted by ID
	// Actions taken this period (at most one new action, possibly preceded by an undo).
	Actions []Action
	// Undone lists actions reverted this period because of their repercussions.
	Undone   []Action
	Statuses []Status
	// WMU is the weighted min-max unfairness of the estimated slowdowns; PE the platform
	// efficiency (Σ 1/S over the CPU used, in cores, relative to the machine's cores).
	WMU, PE float64
	// Changed reports whether any configuration changed.
	Changed bool
}

// Config returns the configuration of id.
func (d Decision) Config(id string) (Config, bool) {
	for _, c := range d.Configs {
		if c.ID == id {
			return c, true
		}
	}
	return Config{}, false
}

type workload struct {
	cfg       Config
	acc       Sample
	since     time.Duration
	state     State
	refState  State
	refMF     float64 // lowest MF in the phase
	refIPC    float64
	phaseL2   float64 // L2 MPKI at the start of the phase
	hasRef    bool
	ipc       float64
	l3mpki    float64
	mf        float64
	llcRate   float64 // LLC misses per second
	bwRate    float64 // bytes per second
	observed  bool
	hurtState bool
	quiet     int  // consecutive observed periods without hurt
	newPhase  bool // a new phase started this period
}

func (w *workload) slowdown() float64 {
	if !w.hasRef || w.ipc <= 0 || math.IsNaN(w.ipc) {
		return 1
	}
	return math.Max(1, w.refIPC/w.ipc)
}

type episode struct {
	victim   string
	hurt     HurtKind
	excluded map[[2]string]bool // (kind, target) undone for this episode
}

// kept is a throttle in force.
type kept struct {
	act    Action
	pinned bool // its relaxation brought hurt back (or it was re-taken after one)
}

type pending struct {
	act     Action
	k       *kept            // the throttle entry the action created (nil for moves)
	relax   *kept            // the throttle this window tests the relaxation of (act.Relax)
	settle  bool             // a restored throttle taking effect: the window only waits
	left    int              // periods left in the window
	before  map[string]bool  // hurt before the action
	rows    map[string]Reuse // rows before the action
	wmu     float64          // WMU before the action
	charged map[string]bool  // workloads charged so far
	watch   map[string]bool  // workloads the window watches
}

// Controller is a VP instance for one machine. It is not safe for concurrent use.
type Controller struct {
	m       *machine.Profile
	opt     Options
	ws      map[string]*workload
	ids     []string
	last    time.Duration
	started bool
	ep      *episode
	pend    *pending
	changed bool
	history []Action
	// exhausted holds victims whose ladder ran out, until they are no longer hurt.
	exhausted map[string]bool
	// kept holds the throttles in force, oldest first; relaxed the (kind, target) pairs
	// relaxed since their last change, whose re-taking pins the throttle.
	kept    []*kept
	relaxed map[[2]string]bool
	// acted holds the workloads an action targeted (their hurt is the controller's doing).
	acted map[string]bool
	// banned holds (victim, kind, target) actions undone for their repercussions, until the
	// victim or target changes phase or a workload leaves.
	banned map[[3]string]bool
}

// New validates the options against the machine.
func New(m *machine.Profile, opt Options) (*Controller, error) {
	if m == nil {
		return nil, errors.New("vp: a machine profile is required")
	}
	if err := opt.Validate(m); err != nil {
		return nil, err
	}
	return &Controller{m: m, opt: opt, ws: map[string]*workload{}, exhausted: map[string]bool{}, relaxed: map[[2]string]bool{},
		acted: map[string]bool{}, banned: map[[3]string]bool{}}, nil
}

// History returns every action taken so far, in order (undone ones marked Reverted).
func (c *Controller) History() []Action { return append([]Action(nil), c.history...) }

func (c *Controller) logicalCPUs() int { return c.m.Cores() * max(1, c.m.ThreadsPerCore) }

// Add admits a workload already placed on the given logical CPUs, with its priority weight
// (1 when 0). It starts with the full mask, no MBA throttle and a full quota.
func (c *Controller) Add(id string, weight float64, cores []int) error {
	if id == "" {
		return errors.New("vp: a workload needs a non-empty id")
	}
	if _, ok := c.ws[id]; ok {
		return fmt.Errorf("vp: workload %q is already admitted", id)
	}
	if len(cores) == 0 {
		return fmt.Errorf("vp: workload %q needs at least one core", id)
	}
	if weight < 0 || math.IsNaN(weight) {
		return fmt.Errorf("vp: workload %q weight %v must be positive", id, weight)
	}
	if weight == 0 {
		weight = 1
	}
	busy := c.busy()
	dom := -1
	for _, k := range cores {
		if k < 0 || k >= c.logicalCPUs() {
			return fmt.Errorf("vp: workload %q core %d is outside 0..%d of %s", id, k, c.logicalCPUs()-1, c.m.Name)
		}
		if o, ok := busy[k]; ok {
			return fmt.Errorf("vp: workload %q core %d is already used by %q", id, k, o)
		}
		d := c.m.DomainOfCore(k % c.m.Cores())
		if dom >= 0 && d != dom {
			return fmt.Errorf("vp: workload %q spans LLC domains %d and %d; place it inside one", id, dom, d)
		}
		dom = d
	}
	mba := 0
	if c.m.MBA != nil {
		mba = c.m.MBA.Max
	}
	cfg := Config{ID: id, Weight: weight, Cores: append([]int(nil), cores...), Mask: c.m.FullMask(), MBA: mba, Quota: 1}
	sort.Ints(cfg.Cores)
	c.ws[id] = &workload{cfg: cfg, acc: Sample{ID: id}}
	c.ids = append(c.ids, id)
	sort.Strings(c.ids)
	c.changed = true
	return nil
}

// Remove forgets a workload. An open episode or window that involves it is closed.
func (c *Controller) Remove(id string) error {
	if _, ok := c.ws[id]; !ok {
		return fmt.Errorf("vp: no workload %q", id)
	}
	sock := c.ws[id].cfg.socket(c.m)
	delete(c.ws, id)
	delete(c.acted, id)
	delete(c.exhausted, id)
	clear(c.banned) // a departure changes the contention every ban was decided under
	clear(c.exhausted)
	// a departure can remove the contention a pinned throttle was kept for
	var ks []*kept
	for _, k := range c.kept {
		if k.act.Target == id {
			continue
		}
		if t, ok := c.ws[k.act.Target]; ok && t.cfg.socket(c.m) == sock {
			c.unpin(k)
		}
		ks = append(ks, k)
	}
	c.kept = ks
	for i, x := range c.ids {
		if x == id {
			c.ids = append(c.ids[:i], c.ids[i+1:]...)
			break
		}
	}
	if c.ep != nil && c.ep.victim == id {
		c.ep, c.pend = nil, nil
	}
	if c.pend != nil && (c.pend.act.Target == id || c.pend.relax != nil && c.pend.act.Victim == id) {
		if c.pend.relax != nil { // the relaxation stands: that step is no longer kept
			c.drop(c.pend.relax)
		}
		c.pend = nil
	}
	c.changed = true
	return nil
}

func (c *Controller) busy() map[int]string {
	b := map[int]string{}
	for id, w := range c.ws {
		for _, k := range w.cfg.Cores {
			b[k] = id
		}
	}
	return b
}

// Step feeds counter deltas up to now; once a period has elapsed it decides.
func (c *Controller) Step(now time.Duration, samples []Sample) (Decision, bool, error) {
	for _, s := range samples {
		if _, ok := c.ws[s.ID]; !ok {
			return Decision{}, false, fmt.Errorf("vp: sample for unknown workload %q", s.ID)
		}
		if s.Interval < 0 || !ctlsched.ValidCounters(s.Instructions, s.Cycles, s.L2Misses, s.LLCMisses, s.MemBytes) {
			return Decision{}, false, fmt.Errorf("vp: sample for %q has a negative or NaN counter: %+v", s.ID, s)
		}
	}
	if !c.started {
		c.started = true
		c.last = now
		for _, w := range c.ws {
			w.since = now
		}
	}
	for _, s := range samples {
		a := &c.ws[s.ID].acc
		a.Instructions += s.Instructions
		a.Cycles += s.Cycles
		a.L2Misses += s.L2Misses
		a.LLCMisses += s.LLCMisses
		a.MemBytes += s.MemBytes
		a.Interval += s.Interval
	}
	if now-c.last < c.opt.Period {
		if c.changed {
			d := c.decision(now)
			c.changed = false
			return d, true, nil
		}
		return Decision{}, false, nil
	}
	c.last = now
	for _, id := range c.ids {
		c.observe(c.ws[id], now)
	}
	d := Decision{At: now}
	c.control(now, &d)
	out := c.decision(now)
	out.Actions, out.Undone = d.Actions, d.Undone
	out.Changed = out.Changed || len(d.Actions) > 0 || len(d.Undone) > 0
	c.changed = false
	return out, true, nil
}

func (c *Controller) observe(w *workload, now time.Duration) {
	s := w.acc
	dt := (now - w.since).Seconds()
	if s.Interval > 0 {
		dt = s.Interval.Seconds()
	}
	w.acc = Sample{ID: w.cfg.ID}
	w.since = now
	w.newPhase = false
	if s.Instructions <= 0 || s.Cycles <= 0 || dt <= 0 {
		w.observed = false
		return
	}
	w.observed = true
	w.ipc = metric.IPC(s.Instructions, s.Cycles)
	w.l3mpki = L3MPKI(s.LLCMisses, s.Instructions)
	w.mf = MemoryFactor(s.LLCMisses, s.L2Misses)
	w.llcRate = s.LLCMisses / dt
	w.bwRate = s.MemBytes / dt
	w.state = c.opt.Classify(w.l3mpki, w.mf)
	l2 := L3MPKI(s.L2Misses, s.Instructions) // same formula: misses per kilo-instruction
	if !w.hasRef || math.Abs(l2-w.phaseL2) > c.opt.PhaseThreshold*math.Max(w.phaseL2, 1e-9) {
		w.newPhase = w.hasRef
		w.hasRef, w.refIPC, w.refState, w.phaseL2, w.refMF = true, w.ipc, w.state, l2, w.mf
	} else {
		if w.ipc > w.refIPC {
			w.refIPC = w.ipc
		}
		if w.state.Row() < w.refState.Row() {
			w.refState = w.state
		}
		w.refMF = math.Min(w.refMF, w.mf)
	}
	w.hurtState = w.slowdown() > 1+c.opt.HurtThreshold
	if w.hurtState {
		w.quiet = 0
	} else {
		w.quiet++
	}
}

func (c *Controller) socketBW(sock int) float64 {
	bw := 0.0
	for _, w := range c.ws {
		if w.observed && w.cfg.socket(c.m) == sock {
			bw += w.bwRate
		}
	}
	return bw
}

func (c *Controller) saturated(sock int) bool {
	return c.socketBW(sock) > c.opt.Saturation*c.m.MemBWPerSocketMBps*1e6
}

// hurtKind says what hurts w, or false when it is not hurt (or the hurt has no cause this
// controller can act on).
func (c *Controller) hurtKind(w *workload) (HurtKind, bool) {
	if !w.observed || !w.hurtState {
		return 0, false
	}
	// a workload of the last row (S6–S8) reuses nothing: it cannot lose cache (§2.3)
	if w.state.Row() > w.refState.Row() || (w.refState.Row() < HighMF && w.mf > w.refMF+c.opt.MFRise) {
		return CacheHurt, true
	}
	sock := w.cfg.socket(c.m)
	if c.saturated(sock) {
		return BandwidthHurt, true
	}
	// hysteresis: the open bandwidth episode of this victim goes on below the threshold
	if c.ep != nil && c.ep.victim == w.cfg.ID && c.ep.hurt == BandwidthHurt &&
		c.socketBW(sock) > c.opt.SaturationExit*c.opt.Saturation*c.m.MemBWPerSocketMBps*1e6 {
		return BandwidthHurt, true
	}
	return 0, false
}

func (c *Controller) wmu() float64 {
	var s, wt []float64
	for _, id := range c.ids {
		w := c.ws[id]
		if w.observed {
			s = append(s, w.slowdown())
			wt = append(wt, w.cfg.Weight)
		}
	}
	if len(s) == 0 {
		return 0
	}
	return metric.WeightedMaxUnfairness(s, wt)
}

// control runs the repercussion window, the ladder and the relaxation of kept throttles.
func (c *Controller) control(now time.Duration, d *Decision) {
	// a phase change of a throttle's victim or target changes the conditions it was kept
	// under, and those of a banned action
	for b := range c.banned {
		for _, id := range []string{b[0], b[2]} {
			if w, ok := c.ws[id]; ok && w.newPhase {
				delete(c.banned, b)
			}
		}
	}
	for _, w := range c.ws {
		if w.newPhase {
			clear(c.exhausted) // the ladders that ran out may have new options
			break
		}
	}
	for _, k := range c.kept {
		for _, id := range []string{k.act.Target, k.act.Victim} {
			if w, ok := c.ws[id]; ok && w.newPhase {
				c.unpin(k)
			}
		}
	}
	if p := c.pend; p != nil && p.settle {
		p.left--
		if p.left > 0 {
			return
		}
		c.pend = nil
	} else if p != nil && p.relax != nil {
		if c.relaxWindow(p, d) {
			return
		}
	} else if p != nil {
		c.charge(p, false)
		p.left--
		if p.left > 0 {
			return
		}
		c.pend = nil
		if len(p.charged) > 0 && !(c.wmu() < p.wmu-c.opt.Epsilon) {
			undo := p.act
			undo.Reverted = true
			undo.Repercussions = sortedKeys(p.charged)
			if t, ok := c.ws[undo.Target]; ok {
				t.cfg = undo.Before
			}
			c.drop(p.k)
			c.ep.excluded[[2]string{undo.Kind.String(), undo.Target}] = true
			c.banned[[3]string{undo.Victim, undo.Kind.String(), undo.Target}] = true
			d.Undone = append(d.Undone, undo)
			c.history = append(c.history, undo)
		}
	}
	for id := range c.exhausted {
		if w, ok := c.ws[id]; !ok || !w.hurtState {
			delete(c.exhausted, id)
		}
	}
	// Episode: continue while its victim is hurt; otherwise close it and look for a new one.
	if c.ep != nil {
		v, ok := c.ws[c.ep.victim]
		if !ok {
			c.ep = nil
		} else if hk, hurt := c.hurtKind(v); !hurt && len(d.Undone) == 0 {
			c.ep = nil
		} else if hurt {
			c.ep.hurt = hk
		}
	}
	if c.ep == nil {
		var best *workload
		var bestHK HurtKind
		bestD := 0.0
		for _, id := range c.ids {
			w := c.ws[id]
			hk, hurt := c.hurtKind(w)
			if !hurt || c.exhausted[id] {
				continue
			}
			dg := w.cfg.Weight * (1 - 1/w.slowdown())
			if best == nil || dg > bestD {
				best, bestHK, bestD = w, hk, dg
			}
		}
		if best == nil {
			c.relax(now, d)
			return
		}
		c.ep = &episode{victim: best.cfg.ID, hurt: bestHK, excluded: map[[2]string]bool{}}
	}
	act, ok := c.choose(c.ep)
	if !ok {
		// Nothing left on the ladder for this victim: give up on it until its hurt clears,
		// so that other victims are served.
		c.exhausted[c.ep.victim] = true
		c.ep = nil
		return
	}
	act.At = now
	c.ws[act.Target].cfg = act.After
	d.Actions = append(d.Actions, act)
	c.history = append(c.history, act)
	c.acted[act.Target] = true
	p := c.newPending(act)
	if throttle(act.Kind) {
		// a throttle taken again after its relaxation is pinned: the relaxation was premature
		p.k = &kept{act: act, pinned: c.relaxed[keyOf(act)]}
		c.kept = append(c.kept, p.k)
	}
	socks := map[int]bool{act.Before.socket(c.m): true, act.After.socket(c.m): true}
	for _, id := range c.ids {
		if socks[c.ws[id].cfg.socket(c.m)] {
			p.watch[id] = true
		}
	}
	c.pend = p
}

func (c *Controller) newPending(act Action) *pending {
	p := &pending{act: act, left: c.opt.Window, before: map[string]bool{}, rows: map[string]Reuse{},
		wmu: c.wmu(), charged: map[string]bool{}, watch: map[string]bool{}}
	for _, id := range c.ids {
		w := c.ws[id]
		p.before[id] = w.hurtState
		p.rows[id] = w.state.Row()
	}
	return p
}

// charge records the watched workloads that became hurt or moved down a row since the
// window opened. The action's target is never charged, nor its victim unless withVictim.
func (c *Controller) charge(p *pending, withVictim bool) {
	for id := range p.watch {
		w, ok := c.ws[id]
		if !ok || id == p.act.Target || (id == p.act.Victim && !withVictim) || !w.observed {
			continue
		}
		if (w.hurtState && !p.before[id]) || w.state.Row() > p.rows[id] {
			p.charged[id] = true
		}
	}
}

func throttle(k Kind) bool { return k == CATConfine || k == MBAStep || k == CPUQuota }

func keyOf(a Action) [2]string { return [2]string{a.Kind.String(), a.Target} }

func (c *Controller) unpin(k *kept) {
	k.pinned = false
	delete(c.relaxed, keyOf(k.act))
}

// drop forgets a kept throttle.
func (c *Controller) drop(k *kept) {
	for i, x := range c.kept {
		if x == k {
			c.kept = append(c.kept[:i], c.kept[i+1:]...)
			return
		}
	}
}

// relaxWindow runs one period of a relaxation's window; it reports whether the period ends
// here (window still open, or the relaxation just reverted).
func (c *Controller) relaxWindow(p *pending, d *Decision) bool {
	c.charge(p, true)
	p.left--
	if len(p.charged) > 0 {
		// the hurt is back: restore the throttle at once and keep it until conditions change
		c.pend = nil
		undo := p.act
		undo.Reverted = true
		undo.Repercussions = sortedKeys(p.charged)
		if t, ok := c.ws[undo.Target]; ok {
			setRung(undo.Kind, &t.cfg, undo.Before)
		}
		// every step of this throttle is needed: the older steps of the same rung on the
		// same target are pinned too (else the next relaxation would step the same setting)
		for _, k := range c.kept {
			if keyOf(k.act) == keyOf(undo) {
				k.pinned = true
			}
		}
		d.Undone = append(d.Undone, undo)
		c.history = append(c.history, undo)
		// the restored throttle takes a window to act (lines refill) before the ladder may
		// read the victim's hurt as a new episode
		c.pend = &pending{act: undo, left: c.opt.Window, settle: true}
		return true
	}
	if p.left > 0 {
		return true
	}
	c.pend = nil
	c.drop(p.relax)
	c.relaxed[keyOf(p.act)] = true
	return false
}

// setRung copies the setting of rung k from src into dst.
func setRung(k Kind, dst *Config, src Config) {
	switch k {
	case CATConfine:
		dst.Mask = src.Mask
	case MBAStep:
		dst.MBA = src.MBA
	case CPUQuota:
		dst.Quota = src.Quota
	}
}

// relax steps back the most recent kept throttle that is not pinned and whose victim and
// target socket have been calm for RelaxAfter periods, and opens its window.
func (c *Controller) relax(now time.Duration, d *Decision) {
	if c.opt.RelaxAfter == 0 || c.pend != nil {
		return
	}
	for i := len(c.kept) - 1; i >= 0; i-- {
		k := c.kept[i]
		t, ok := c.ws[k.act.Target]
		if !ok || k.pinned || !c.calm(k, t) {
			continue
		}
		after, ok := c.stepBack(k, t)
		if !ok { // nothing left to relax (e.g. a move reset the mask)
			c.drop(k)
			continue
		}
		act := Action{At: now, Kind: k.act.Kind, Target: t.cfg.ID, Victim: k.act.Victim, Hurt: k.act.Hurt,
			Relax: true, Before: cloneCfg(t.cfg), After: after}
		t.cfg = after
		d.Actions = append(d.Actions, act)
		c.history = append(c.history, act)
		p := c.newPending(act)
		p.relax = k
		sock := t.cfg.socket(c.m)
		for _, id := range c.ids {
			if c.ws[id].cfg.socket(c.m) == sock || id == k.act.Victim {
				p.watch[id] = true
			}
		}
		c.pend = p
		return
	}
}

// calm: the throttle's victim and every workload of its target's socket have gone
// RelaxAfter periods without hurt. Workloads the controller acted on are left out: their
// hurt is its own doing (a throttled target is slower than its best by design).
func (c *Controller) calm(k *kept, t *workload) bool {
	sock := t.cfg.socket(c.m)
	for _, id := range c.ids {
		w := c.ws[id]
		if id != k.act.Victim && (w.cfg.socket(c.m) != sock || c.acted[id]) {
			continue
		}
		if w.observed && w.quiet < c.opt.RelaxAfter {
			return false
		}
	}
	return true
}

// stepBack is the target's configuration with the throttle k stepped back one step.
func (c *Controller) stepBack(k *kept, t *workload) (Config, bool) {
	cfg := cloneCfg(t.cfg)
	switch k.act.Kind {
	case CATConfine:
		if cfg.Mask != k.act.After.Mask {
			return cfg, false
		}
		cfg.Mask = k.act.Before.Mask
	case MBAStep:
		if c.m.MBA == nil || cfg.MBA >= c.m.MBA.Max {
			return cfg, false
		}
		cfg.MBA = min(c.m.MBA.Max, cfg.MBA+c.m.MBA.Gran)
	case CPUQuota:
		if cfg.Quota >= 1 {
			return cfg, false
		}
		cfg.Quota = math.Min(1, math.Round((cfg.Quota+c.opt.QuotaStep)*1000)/1000)
	default:
		return cfg, false
	}
	return cfg, true
}

// aggressors ranks the candidate aggressors of an episode.
func (c *Controller) aggressors(ep *episode) []*workload {
	v := c.ws[ep.victim]
	var out []*workload
	for _, id := range c.ids {
		w := c.ws[id]
		if id == ep.victim || !w.observed || !w.state.Intensive() || w.cfg.Weight > v.cfg.Weight {
			continue
		}
		if ep.hurt == CacheHurt && w.cfg.domain(c.m) != v.cfg.domain(c.m) {
			continue
		}
		if ep.hurt == BandwidthHurt && w.cfg.socket(c.m) != v.cfg.socket(c.m) {
			continue
		}
		out = append(out, w)
	}
	key := func(w *workload) float64 {
		if ep.hurt == CacheHurt {
			return w.llcRate
		}
		return w.bwRate
	}
	sort.SliceStable(out, func(i, j int) bool { return key(out[i]) > key(out[j]) })
	return out
}

func (c *Controller) ladder(h HurtKind) []Kind {
	all := []Kind{MBAStep, CPUQuota, SocketMove}
	if h == CacheHurt {
		all = []Kind{CATConfine, CPUQuota, CoreMove, SocketMove}
	}
	out := all[:0:0]
	for _, k := range all {
		skip := false
		for _, s := range c.opt.Skip {
			skip = skip || s == k
		}
		if !skip {
			out = append(out, k)
		}
	}
	return out
}

// SetCores records where a workload actually runs (the platform may pick other cores than
// the controller proposed for a move). The cores must lie in one LLC domain.
func (c *Controller) SetCores(id string, cores []int) error {
	w, ok := c.ws[id]
	if !ok {
		return fmt.Errorf("vp: no workload %q", id)
	}
	if len(cores) == 0 {
		return fmt.Errorf("vp: workload %q needs at least one core", id)
	}
	dom := c.m.DomainOfCore(cores[0] % c.m.Cores())
	for _, k := range cores {
		if k < 0 || k >= c.logicalCPUs() || c.m.DomainOfCore(k%c.m.Cores()) != dom {
			return fmt.Errorf("vp: workload %q cores %v are not inside one LLC domain of %s", id, cores, c.m.Name)
		}
	}
	if w.cfg.domain(c.m) != dom {
		w.cfg.Mask = c.m.FullMask()
	}
	w.cfg.Cores = append([]int(nil), cores...)
	sort.Ints(w.cfg.Cores)
	return nil
}

// choose returns the cheapest applicable action of the episode.
func (c *Controller) choose(ep *episode) (Action, bool) {
	ag := c.aggressors(ep)
	for _, k := range c.ladder(ep.hurt) {
		for _, a := range ag {
			if ep.excluded[[2]string{k.String(), a.cfg.ID}] || c.banned[[3]string{ep.victim, k.String(), a.cfg.ID}] {
				continue
			}
			if after, ok := c.apply(k, a, c.ws[ep.victim]); ok {
				return Action{Kind: k, Target: a.cfg.ID, Victim: ep.victim, Hurt: ep.hurt, Before: cloneCfg(a.cfg), After: after}, true
			}
		}
	}
	return Action{}, false
}

func cloneCfg(c Config) Config {
	c.Cores = append([]int(nil), c.Cores...)
	return c
}

// apply computes the configuration of a after rung k, or false if k does not apply.
func (c *Controller) apply(k Kind, a, v *workload) (Config, bool) {
	cfg := cloneCfg(a.cfg)
	ways := c.m.LLC.Ways
	switch k {
	case CATConfine:
		m := ((uint64(1) << uint(c.opt.ConfineWays)) - 1) << uint(ways-c.opt.ConfineWays)
		if cfg.Mask == m {
			return cfg, false
		}
		cfg.Mask = m
	case MBAStep:
		if c.m.MBA == nil || cfg.MBA-c.m.MBA.Gran < c.opt.MBAFloor {
			return cfg, false
		}
		cfg.MBA -= c.m.MBA.Gran
	case CPUQuota:
		q := math.Round((cfg.Quota-c.opt.QuotaStep)*1000) / 1000
		if q < c.opt.QuotaFloor-1e-9 {
			return cfg, false
		}
		cfg.Quota = q
	case CoreMove:
		// Only useful when the aggressor runs on SMT siblings of the victim's cores.
		n := c.m.Cores()
		if c.m.ThreadsPerCore < 2 {
			return cfg, false
		}
		vphys := map[int]bool{}
		for _, x := range v.cfg.Cores {
			vphys[x%n] = true
		}
		busy := c.busy()
		dom := cfg.domain(c.m)
		moved := false
		for i, x := range cfg.Cores {
			if !vphys[x%n] {
				continue
			}
			found := false
			for y := 0; y < c.logicalCPUs() && !found; y++ {
				if _, used := busy[y]; used || c.m.DomainOfCore(y%n) != dom || vphys[y%n] {
					continue
				}
				busy[y] = cfg.ID
				cfg.Cores[i] = y
				found, moved = true, true
			}
			if !found {
				return a.cfg, false
			}
		}
		if !moved {
			return cfg, false
		}
		sort.Ints(cfg.Cores)
	case SocketMove:
		busy := c.busy()
		cur := cfg.socket(c.m)
		per := c.m.CoresPerSocket
		best, bestFree := -1, 0
		for s := 0; s < c.m.Sockets; s++ {
			if s == cur {
				continue
			}
			free := 0
			for x := s * per; x < (s+1)*per; x++ {
				if _, used := busy[x]; !used {
					free++
				}
			}
			if free >= len(cfg.Cores) && free > bestFree {
				best, bestFree = s, free
			}
		}
		if best < 0 {
			return cfg, false
		}
		var nc []int
		for x := best * per; x < (best+1)*per && len(nc) < len(cfg.Cores); x++ {
			if _, used := busy[x]; !used {
				nc = append(nc, x)
			}
		}
		cfg.Cores = nc
		cfg.Mask = c.m.FullMask()
	default:
		return cfg, false
	}
	return cfg, true
}

func (c *Controller) decision(now time.Duration) Decision {
	d := Decision{At: now, Changed: c.changed}
	var s []float64
	used := 0.0
	for _, id := range c.ids {
		w := c.ws[id]
		d.Configs = append(d.Configs, cloneCfg(w.cfg))
		st := Status{ID: id, State: w.state, L3MPKI: w.l3mpki, MF: w.mf, IPC: w.ipc, Slowdown: w.slowdown(), Hurt: w.hurtState}
		if w.observed {
			d.Statuses = append(d.Statuses, st)
			s = append(s, w.slowdown())
			used += float64(len(w.cfg.Cores)) * w.cfg.Quota
		}
	}
	d.WMU = c.wmu()
	if len(s) > 0 {
		d.PE = metric.PlatformEfficiency(s, used, float64(c.logicalCPUs()))
	}
	return d
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
