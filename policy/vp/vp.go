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

// knows reports whether id is a workload of the controller.
func (c *Controller) knows(id string) bool { _, ok := c.ws[id]; return ok }

// Step feeds counter deltas up to now; once a period has elapsed it decides.
func (c *Controller) Step(now time.Duration, samples []Sample) (Decision, bool, error) {
	if err := ctlsched.CheckSamples("vp", samples, c.knows, func(s Sample) (string, time.Duration, []float64) {
		return s.ID, s.Interval, []float64{s.Instructions, s.Cycles, s.L2Misses, s.LLCMisses, s.MemBytes}
	}); err != nil {
		return Decision{}, false, err
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
