// Package dcat is the dCat dynamic cache controller (Xu et al., EuroSys '18;
// ../shared/research/seed003.md) as a pure, deterministic state machine for one LLC domain.
//
// Every workload has a baseline ("rightful") number of ways and is guaranteed at least the
// performance it has there. Each control period the controller reads per-workload counter
// deltas (instructions, cycles, loads, LLC references and misses), detects phase changes from
// loads per instruction, classifies every workload as Keeper, Donor, Unknown, Receiver,
// Streaming or Reclaim, and hands out ways: Reclaim first, then Unknown, then Receiver, from
// the pool of free ways; a Reclaim that finds the pool empty takes ways back from workloads
// above their baseline. A per-workload, per-phase table of normalised IPC by ways lets a
// known phase jump straight to its preferred size and drives the max-performance policy.
//
// The controller never reads a clock or a counter itself: Step is given the time and the
// counter deltas, and returns the decision (a contiguous, non-overlapping mask per workload,
// plus the number of ways whose lines a repacking loses). It runs unchanged on the simulator
// and on hardware.
//
// # Gaps the paper leaves, and what colo does (seed003.md §5)
//
//   - Keeper/Donor and Keeper/Unknown oscillation: the performance table is consulted before
//     every move. A workload is not shrunk (Donor) when the table shows one way less costs more
//     than IPCGainThreshold; a Donor whose last shrink cost more than that gets the way back
//     and becomes Keeper; a Keeper is not grown again (Unknown) when the table shows the next
//     way, or the last way it got, gained less than IPCGainThreshold.
//   - Baseline guarantee while below baseline: a workload below its baseline whose miss rate
//     rises above MissRateThreshold goes straight back to its baseline (Reclaim), without a
//     phase change.
//   - Victim order on Reclaim: only workloads above their baseline give ways back, never below
//     it. MaxFairness takes one way at a time from the workload furthest above its baseline
//     (ties: lowest ID). MaxPerformance re-solves the knapsack over the measured table entries
//     of the workloads above baseline (every baseline is a candidate size with normalised IPC
//     1), so that the ways taken back cost the least normalised IPC — the paper's A/B/C example.
//   - Baseline admission: Add rejects a baseline below MinWays or above the capacity, and a
//     workload whose baseline would make the baselines over-commit the capacity (Ways − HostWays)
//     or exceed the classes of service: an admission error, never a silent squeeze.
//   - Host class: HostWays reserves a run of ways at the top for the default class; 0 leaves
//     the default class on the full mask as in the paper.
//   - Streaming by exhaustion ("all the available cache is used"): an Unknown workload whose
//     last added way gained less than IPCGainThreshold and that cannot get a way because the
//     pool is empty becomes Streaming in the same round and its ways go to the Receivers
//     (the Fig. 15 timeline). A workload that has not yet measured a step is never called
//     Streaming for lack of ways.
//   - Idle phase: a period with no instruction or at most LLCRefRate references/s is idle; the
//     workload drops to MinWays (Donor) without going through Reclaim, and leaving the idle
//     phase is a phase change (Reclaim to the baseline, or to the preferred size of a known
//     phase).
//   - Phase matching: a new signature matches the known phase whose signature is closest and
//     within PhaseThreshold of it; the phase keeps the signature it was first seen with.
//   - Multi-core workloads: the caller sums the counters over the workload's cores, so IPC is
//     Σinstructions/Σcycles (the paper's "average" is unspecified).
package dcat

import (
	"fmt"
	"math"
	"sort"
	"time"

	"colo/metric"
	"colo/policy/ctlsched"
)

// State is a dCat workload category (seed003.md §1.5).
type State int

const (
	// Keeper would suffer with less cache but does not benefit from more. The start state.
	Keeper State = iota
	// Donor neither suffers from less cache nor benefits from more; it gives ways back.
	Donor
	// Unknown misses a lot; whether more cache helps is being measured (+1 way per round,
	// before Receivers).
	Unknown
	// Receiver benefits from more cache: +1 way per round while the pool has ways.
	Receiver
	// Streaming misses a lot without reuse: held at MinWays until the next phase change.
	Streaming
	// Reclaim returns to the baseline (or the preferred size of a known phase) at once.
	Reclaim
)

var stateNames = [...]string{"Keeper", "Donor", "Unknown", "Receiver", "Streaming", "Reclaim"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Sample is one workload's counter deltas since its previous sample, summed over its cores.
type Sample struct {
	ID           string
	Instructions float64 // retired instructions
	Cycles       float64 // unhalted core cycles
	Loads        float64 // l1_ref: retired loads (L1 hits + L1 misses), the phase signature's numerator
	LLCRefs      float64 // LLC references
	LLCMisses    float64 // LLC misses
	// Interval is the time the counts cover; 0 means "since the previous Step". Give it when
	// the samples cover less than the time between Steps (a collector sampling more often than
	// the scheduler ticks hands over only its latest sample), so that rates stay right.
	Interval time.Duration
}

// Alloc is one workload's allocation in a Decision.
type Alloc struct {
	ID       string
	Baseline int
	Ways     int
	Mask     uint64
	State    State
	// Phase is the index of the workload's current phase (-1: idle, or not yet observed).
	Phase int
}

// Transition records a state change decided in a period.
type Transition struct {
	ID       string
	From, To State
}

// Decision is what the controller wants applied after a period.
type Decision struct {
	At     time.Duration
	Allocs []Alloc // sorted by ID
	// HostMask is the default class's mask: the reserved HostWays, or every way when HostWays is 0.
	HostMask uint64
	// MovedWays is the number of ways whose lines the repacking of this decision loses
	// (see MovedWays); the simulator charges it, hardware simply pays it.
	MovedWays int
	// Changed reports whether any mask differs from the previous decision.
	Changed     bool
	Transitions []Transition
}

// Mask returns the mask decided for id (0 if absent).
func (d Decision) Mask(id string) uint64 {
	for _, a := range d.Allocs {
		if a.ID == id {
			return a.Mask
		}
	}
	return 0
}

// Ways returns the number of ways decided for id (0 if absent).
func (d Decision) Ways(id string) int {
	for _, a := range d.Allocs {
		if a.ID == id {
			return a.Ways
		}
	}
	return 0
}

const (
	noPhase   = -2 // not yet observed
	idlePhase = -1
)

type phase struct {
	sig   float64         // loads per instruction when first seen
	base  float64         // IPC at the baseline ways in this phase (0: not measured yet)
	table map[int]float64 // ways -> IPC / base
}

type workload struct {
	id       string
	baseline int
	ways     int
	mask     uint64
	state    State
	target   int
	noGain   bool // Unknown whose last measured added way gained < IPCGainThreshold
	phases   []*phase
	cur      int
	acc      Sample
	since    time.Duration // start of the accumulation window
	placed   bool
}

// Controller is a dCat instance for one LLC domain. It is not safe for concurrent use.
type Controller struct {
	opt     Options
	ws      map[string]*workload
	ids     []string // sorted
	last    time.Duration
	started bool
	pending bool
	// lastCount is the number of workloads in the previous decision (a removal is a change).
	lastCount int
	// retired keeps the phase tables of removed workloads by id.
	retired map[string][]*phase
}

// New validates the options and returns a controller with no workloads.
func New(opt Options) (*Controller, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	return &Controller{opt: opt, ws: map[string]*workload{}}, nil
}

// Options returns the controller's options.
func (c *Controller) Options() Options { return c.opt }

// Add admits a workload with the given baseline ways. It is placed at its baseline at the
// next Step, taking ways back from workloads above their baseline if the pool is short.
// Admission fails, changing nothing, if the baseline is outside MinWays..Capacity, if the sum
// of the baselines would exceed the capacity, or if the classes of service run out.
func (c *Controller) Add(id string, baseline int) error {
	if id == "" {
		return fmt.Errorf("dcat: a workload needs a non-empty id")
	}
	if _, ok := c.ws[id]; ok {
		return fmt.Errorf("dcat: workload %q is already admitted", id)
	}
	capa := c.opt.Capacity()
	if baseline < c.opt.MinWays || baseline > capa {
		return fmt.Errorf("dcat: workload %q baseline %d ways is outside %d..%d (the cache has %d ways, %d reserved for the host)",
			id, baseline, c.opt.MinWays, capa, c.opt.Ways, c.opt.HostWays)
	}
	sum := baseline
	for _, w := range c.ws {
		sum += w.baseline
	}
	if sum > capa {
		return fmt.Errorf("dcat: admitting %q (baseline %d) would commit %d baseline ways of %d: baselines must not over-commit the cache; lower a baseline or run it elsewhere",
			id, baseline, sum, capa)
	}
	if len(c.ws)+1 > c.opt.MaxCLOS-1 {
		return fmt.Errorf("dcat: admitting %q needs class of service %d but only %d exist (one is the default class)",
			id, len(c.ws)+2, c.opt.MaxCLOS)
	}
	if (len(c.ws)+1)*c.opt.MinWays > capa {
		return fmt.Errorf("dcat: %d workloads of at least %d way cannot share %d ways", len(c.ws)+1, c.opt.MinWays, capa)
	}
	w := &workload{id: id, baseline: baseline, state: Reclaim, target: baseline, cur: noPhase}
	if ph, ok := c.retired[id]; ok {
		w.phases = ph // a tenant that comes back keeps its performance tables
		delete(c.retired, id)
	}
	c.ws[id] = w
	c.ids = append(c.ids, id)
	sort.Strings(c.ids)
	c.pending = true
	return nil
}

// Remove takes a workload out; its ways return to the pool at the next Step. Its phase
// tables are kept: Add with the same id (the tenant's next job) starts from them, so a
// known phase gets its best size at once (Fig. 7a, t4).
func (c *Controller) Remove(id string) error {
	w, ok := c.ws[id]
	if !ok {
		return fmt.Errorf("dcat: no workload %q", id)
	}
	if len(w.phases) > 0 {
		if c.retired == nil {
			c.retired = map[string][]*phase{}
		}
		c.retired[id] = w.phases
	}
	delete(c.ws, id)
	for i, x := range c.ids {
		if x == id {
			c.ids = append(c.ids[:i], c.ids[i+1:]...)
			break
		}
	}
	c.pending = true
	return nil
}

// State returns a workload's current state.
func (c *Controller) State(id string) (State, bool) {
	w, ok := c.ws[id]
	if !ok {
		return 0, false
	}
	return w.state, true
}

// Table returns a copy of the performance table (ways -> normalised IPC) of the workload's
// current phase, and nil when it is idle or not yet observed.
func (c *Controller) Table(id string) map[int]float64 {
	w, ok := c.ws[id]
	if !ok || w.cur < 0 {
		return nil
	}
	out := map[int]float64{}
	for k, v := range w.phases[w.cur].table {
		out[k] = v
	}
	return out
}

// Phases returns the number of distinct (non-idle) phases seen for the workload.
func (c *Controller) Phases(id string) int {
	if w, ok := c.ws[id]; ok {
		return len(w.phases)
	}
	return 0
}

// knows reports whether id is a workload of the controller.
func (c *Controller) knows(id string) bool { _, ok := c.ws[id]; return ok }

// Step feeds counter deltas observed up to now. When a control period has elapsed since the
// last full decision, or a workload was added or removed, it decides and returns the
// decision with ok = true. Samples for unknown workloads or with negative counters are
// rejected before anything changes.
func (c *Controller) Step(now time.Duration, samples []Sample) (Decision, bool, error) {
	if err := ctlsched.CheckSamples("dcat", samples, c.knows, func(s Sample) (string, time.Duration, []float64) {
		return s.ID, s.Interval, []float64{s.Instructions, s.Cycles, s.Loads, s.LLCRefs, s.LLCMisses}
	}); err != nil {
		return Decision{}, false, err
	}
	if !c.started {
		c.started = true
		c.last = now
	}
	for _, s := range samples {
		w := c.ws[s.ID]
		if !w.placed {
			continue
		}
		w.acc.Instructions += s.Instructions
		w.acc.Cycles += s.Cycles
		w.acc.Loads += s.Loads
		w.acc.LLCRefs += s.LLCRefs
		w.acc.LLCMisses += s.LLCMisses
		w.acc.Interval += s.Interval
	}
	full := now-c.last >= c.opt.Period
	if !full && !c.pending {
		return Decision{}, false, nil
	}
	return c.decide(now, full), true, nil
}

func (c *Controller) decide(now time.Duration, full bool) Decision {
	before := make(map[string]State, len(c.ws))
	for _, id := range c.ids {
		before[id] = c.ws[id].state
	}
	if full && !c.opt.Static {
		for _, id := range c.ids {
			w := c.ws[id]
			if w.placed && now > w.since {
				c.observe(w, now)
			}
		}
		c.last = now
	}
	c.allocate()
	d := c.layout(now)
	for _, id := range c.ids {
		w := c.ws[id]
		if before[id] != w.state {
			d.Transitions = append(d.Transitions, Transition{ID: id, From: before[id], To: w.state})
		}
	}
	c.pending = false
	return d
}

func (w *workload) set(s State, target int) {
	w.state = s
	w.target = target
	if s != Unknown {
		w.noGain = false
	}
}

func (w *workload) resetAcc(now time.Duration) {
	w.acc = Sample{ID: w.id}
	w.since = now
}

// matchPhase returns the index of the known phase whose signature is closest to sig and
// within PhaseThreshold of it, or -1.
func (c *Controller) matchPhase(w *workload, sig float64) int {
	best, bestD := -1, math.Inf(1)
	for i, p := range w.phases {
		d := math.Abs(sig - p.sig)
		if d <= c.opt.PhaseThreshold*p.sig && d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// PhaseChanged reports whether the phase signature (loads per instruction, seed003.md §1.7)
// moved from ref to sig by more than the threshold: |sig − ref| > thr · ref. A reference of 0
// (a phase without loads) changes only when loads appear.
func PhaseChanged(ref, sig, thr float64) bool {
	return math.Abs(sig-ref) > thr*ref
}

// Preferred is the smallest measured size whose normalised IPC is within tol of the best
// measured one: min{w : T(w) ≥ (1 − tol) · max T} (seed003.md §1.6, Table 1: 6 ways). 0 for an
// empty table.
func Preferred(table map[int]float64, tol float64) int {
	best := math.Inf(-1)
	for _, v := range table {
		best = math.Max(best, v)
	}
	pref := 0
	for k, v := range table {
		if v >= (1-tol)*best && (pref == 0 || k < pref) {
			pref = k
		}
	}
	return pref
}

// observe runs the per-period steps 2–4 of the paper (statistics, phase detection,
// categorisation) for one workload with a full accumulation window.
func (c *Controller) observe(w *workload, now time.Duration) {
	s := w.acc
	dt := (now - w.since).Seconds()
	if s.Interval > 0 {
		dt = s.Interval.Seconds()
	}
	w.resetAcc(now)
	ipc := metric.IPC(s.Instructions, s.Cycles)
	idle := s.Instructions <= 0 || s.LLCRefs/dt <= c.opt.LLCRefRate
	sig := 0.0
	if !idle {
		sig = s.Loads / s.Instructions
	}
	minW := c.opt.MinWays
	switch {
	case w.cur == noPhase:
		if idle {
			w.cur = idlePhase
		} else if i := c.matchPhase(w, sig); i >= 0 {
			w.cur = i
			if p := Preferred(w.phases[i].table, c.opt.PreferredTolerance); p > 0 && w.phases[i].base > 0 && max(w.baseline, p) != w.ways {
				w.set(Reclaim, max(w.baseline, p)) // a returning tenant's known phase
				return
			}
		} else {
			w.phases = append(w.phases, &phase{sig: sig, table: map[int]float64{}})
			w.cur = len(w.phases) - 1
		}
	case idle && w.cur != idlePhase:
		w.cur = idlePhase
		w.set(Donor, minW)
		return
	case !idle && (w.cur == idlePhase || PhaseChanged(w.phases[w.cur].sig, sig, c.opt.PhaseThreshold)):
		target := w.baseline
		if i := c.matchPhase(w, sig); i >= 0 {
			w.cur = i
			if p := Preferred(w.phases[i].table, c.opt.PreferredTolerance); p > 0 && w.phases[i].base > 0 {
				target = max(w.baseline, p)
			}
		} else {
			w.phases = append(w.phases, &phase{sig: sig, table: map[int]float64{}})
			w.cur = len(w.phases) - 1
		}
		w.set(Reclaim, target)
		return
	}
	if idle {
		w.set(Donor, minW)
		return
	}
	p := w.phases[w.cur]
	if p.base == 0 {
		if w.ways != w.baseline {
			// Nothing to normalise against yet: measure the baseline first.
			w.set(Reclaim, w.baseline)
			return
		}
		p.base = ipc
	}
	if p.base > 0 && !math.IsNaN(ipc) {
		p.table[w.ways] = ipc / p.base
	}
	missRate := 0.0
	if s.LLCRefs > 0 {
		missRate = s.LLCMisses / s.LLCRefs
	}
	c.categorize(w, p.table, missRate)
}

// categorize is step 4, the state machine of seed003.md §1.5 with colo's table guards.
func (c *Controller) categorize(w *workload, t map[int]float64, missRate float64) {
	thr := c.opt.IPCGainThreshold
	minW := c.opt.MinWays
	n := w.ways
	cur, haveCur := t[n]
	gain := func() (float64, bool) {
		prev, ok := t[n-1]
		if !ok || !haveCur || prev <= 0 {
			return 0, false
		}
		return cur/prev - 1, true
	}
	if missRate <= c.opt.MissRateThreshold {
		switch w.state {
		case Streaming:
			w.set(Streaming, minW)
		case Receiver, Unknown:
			w.set(Keeper, n)
		default: // Keeper, Donor, Reclaim done
			if up, ok := t[n+1]; ok && haveCur && cur < up*(1-thr) {
				w.set(Keeper, n+1) // the last shrink cost too much: take the way back
				return
			}
			if n <= minW {
				w.set(Donor, minW)
				return
			}
			if down, ok := t[n-1]; ok && haveCur && down < cur*(1-thr) {
				w.set(Keeper, n) // the table says one way less hurts
				return
			}
			w.set(Donor, n-1)
		}
		return
	}
	if n < w.baseline && w.state != Streaming {
		w.set(Reclaim, w.baseline) // baseline guarantee
		return
	}
	switch w.state {
	case Streaming:
		w.set(Streaming, minW)
	case Keeper, Donor, Reclaim:
		if up, ok := t[n+1]; ok && haveCur && up < cur*(1+thr) {
			w.set(Keeper, n)
			return
		}
		if g, ok := gain(); ok && g < thr {
			w.set(Keeper, n)
			return
		}
		w.set(Unknown, n+1)
	case Unknown:
		g, ok := gain()
		switch {
		case ok && g >= thr:
			w.set(Receiver, n+1)
		case ok && float64(n) >= c.opt.StreamingFactor*float64(w.baseline):
			w.set(Streaming, minW)
		default:
			w.set(Unknown, n+1)
			w.noGain = ok
		}
	case Receiver:
		if g, ok := gain(); ok && g < thr {
			w.set(Keeper, n)
			return
		}
		w.set(Receiver, n+1)
	}
}
