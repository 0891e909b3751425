// Package lfocplus is the online part of LFOC+ (Saez et al.; ../shared/research/seed001.md
// §1.4): the sampling mode that measures one application's slowdown and LLCMPKC curves by
// growing a private partition while every other application shares the rest, the
// classification of the sampled curves (policy.ClassifyCurves, LFOC+ Table 1), the fairness
// mode that re-runs the partitioning algorithm (policy.LFOCPlus) every 500 ms, and the phase
// detection that sends an application back to sampling. It is a pure, deterministic state
// machine for one LLC domain: counter deltas in, masks out.
//
// # Choices the paper leaves open (seed001.md §1.4 [gap]), decided here
//
//   - Sampling intervals are counted in the sampled application's retired instructions
//     (SamplingInstructions, 10M as in the paper); after every resize one interval is
//     discarded (SettleIntervals) so that the partition's contents follow its new size.
//     The samples given to a Step are taken under the previous decision, so at most one size
//     is measured per Step and what remains of a sample after a resize is dropped.
//   - Growth starts at 1 way and goes +1 per interval, up to Ways−1 while other applications
//     need the rest (Ways when alone).
//   - Early stop ("a very low number of LLC misses"): LLCMPKC below EarlyStopLLCMPKC (0.5).
//   - Curve entries beyond an early stop hold the last measured value (flat).
//   - The phase detector's running average is the mean LLCMPKC of the last PhaseWindow
//     fairness intervals (FairnessInstructions, 100M instructions each; window 4).
//   - Occupancy is compared with the critical size in ways: occupancy bytes / bytes per way.
//   - The detector runs in fairness mode only, and its window starts afresh after every
//     sampling mode: the sampling layout squeezes the other applications.
//   - The triggers are edge-triggered: a condition that already holds in the first full
//     window after the application's own sampling belongs to the measured phase (for example a
//     light application that misses more than 10 LLCMPKC in the 1-way streaming partition it
//     was put in); only a condition that appears later re-samples. Level triggers re-sample
//     such an application forever.
//   - An application removed while it is being sampled leaves sampling mode at once; masks are
//     laid out with dcat.Layout (contiguous, fewest moved ways), the clusters keyed by their
//     first application so that a cluster keeps its place when its membership is stable.
package lfocplus

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"colo/metric"
	"colo/policy"
	"colo/policy/ctlsched"
	"colo/policy/dcat"
)

// Options are the parameters of LFOC+ online.
type Options struct {
	// Ways of the LLC domain (11 on the paper's Skylake-SP) and bytes per way.
	Ways        int
	BytesPerWay float64
	// Period of the partitioning algorithm in fairness mode (500 ms).
	Period time.Duration
	// SamplingInstructions per sampling interval (10M) and FairnessInstructions per
	// fairness-mode monitoring interval (100M).
	SamplingInstructions, FairnessInstructions float64
	// WarmupIntervals discarded for a new application (3 sampling intervals).
	WarmupIntervals int
	// SettleIntervals discarded after each resize of the sampling partition (1).
	SettleIntervals int
	// EarlyStopLLCMPKC ends sampling once the sampled partition misses less than this (0.5).
	EarlyStopLLCMPKC float64
	// HighLLCMPKC (10) and LowLLCMPKC (30 % of it, 3) are the phase-detection thresholds.
	HighLLCMPKC, LowLLCMPKC float64
	// PhaseWindow is the number of fairness intervals in the running LLCMPKC average (4).
	PhaseWindow int
	// Thresholds classify the sampled curves (LFOC+ Table 1); Params are LFOC+'s constants.
	Thresholds policy.Thresholds
	Params     policy.LFOCParams
	// Partition is the partitioning algorithm; nil (the default) is LFOC+ (policy.LFOCPlus)
	// through the controller's own policy.LFOCPlanner, which allocates nothing per decision
	// and keeps the pair curves until an application is re-sampled. Set it for LFOC.
	Partition func(classes []policy.Class, curves []policy.AppCurves, ways int, p policy.LFOCParams) ([]policy.Cluster, error)
}

// DefaultOptions are the paper's values for an LLC of the given ways and way size.
func DefaultOptions(ways int, bytesPerWay float64) Options {
	return Options{
		Ways: ways, BytesPerWay: bytesPerWay,
		Period:               500 * time.Millisecond,
		SamplingInstructions: 10e6, FairnessInstructions: 100e6,
		WarmupIntervals: 3, SettleIntervals: 1,
		EarlyStopLLCMPKC: 0.5,
		HighLLCMPKC:      10, LowLLCMPKC: 3,
		PhaseWindow: 4,
		Thresholds:  policy.PaperThresholds(),
		Params:      policy.DefaultLFOCParams(),
	}
}

// Validate rejects options outside their meaning.
func (o Options) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf("lfoc+: "+f, a...)) }
	if o.Ways < 2 || o.Ways > 64 {
		bad("ways = %d: need 2..64 (a sampling partition and the rest)", o.Ways)
	}
	if !(o.BytesPerWay > 0) {
		bad("bytes_per_way = %v: must be positive", o.BytesPerWay)
	}
	if o.Period <= 0 {
		bad("period = %v: must be positive (the paper uses 500ms)", o.Period)
	}
	if !(o.SamplingInstructions > 0) || !(o.FairnessInstructions > 0) {
		bad("sampling/fairness instructions %v/%v: must be positive", o.SamplingInstructions, o.FairnessInstructions)
	}
	if o.WarmupIntervals < 0 || o.SettleIntervals < 0 {
		bad("warm-up %d / settle %d intervals: must not be negative", o.WarmupIntervals, o.SettleIntervals)
	}
	if !(o.EarlyStopLLCMPKC >= 0) {
		bad("early_stop_llcmpkc = %v: must not be negative", o.EarlyStopLLCMPKC)
	}
	if !(o.LowLLCMPKC >= 0 && o.HighLLCMPKC > o.LowLLCMPKC) {
		bad("phase thresholds low %v / high %v: need 0 ≤ low < high (paper: 3/10)", o.LowLLCMPKC, o.HighLLCMPKC)
	}
	if o.PhaseWindow < 1 {
		bad("phase_window = %d: need at least 1 interval", o.PhaseWindow)
	}
	if err := o.Thresholds.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Sample is one application's counter deltas since its previous sample.
type Sample struct {
	ID           string
	Instructions float64
	Cycles       float64
	LLCMisses    float64
	// OccupancyBytes is the LLC occupancy at the end of the interval (CMT).
	OccupancyBytes float64
}

// take removes the first win instructions from the counts accumulated over the current
// interval and returns their cycles and LLC misses (in proportion: the counts of a sample
// that straddles two intervals are split by its instructions).
func (x *Sample) take(win float64) (cycles, misses float64) {
	frac := win / x.Instructions
	cycles, misses = x.Cycles*frac, x.LLCMisses*frac
	x.Instructions -= win
	x.Cycles -= cycles
	x.LLCMisses -= misses
	return cycles, misses
}

// LLCMPKC is LLC misses per kilo-cycle, LFOC+'s contentiousness metric (seed001.md §1.2).
func LLCMPKC(misses, cycles float64) float64 {
	if cycles <= 0 {
		return 0
	}
	return misses / cycles * 1000
}

// Mode is the controller's mode.
type Mode int

const (
	Fairness Mode = iota
	Sampling
)

func (m Mode) String() string {
	if m == Sampling {
		return "sampling"
	}
	return "fairness"
}

type app struct {
	id    string
	class policy.Class
	// curves from the last sampling (nil before)
	slow, mpkc []float64
	critical   int // ways at which S first drops below the sensitive threshold
	warm       int // warm-up intervals left
	queued     bool
	// interval accumulation
	acc     Sample
	occ     float64
	history []float64 // LLCMPKC of the last fairness intervals
	mask    uint64
	// armed: the detector has seen a full window since the last sampling; held: its
	// condition held in the previous window.
	armed, held bool
}

type sampler struct {
	id     string
	k      int // current size of the sampling partition
	settle int
	ipc    []float64 // by ways−1, NaN when not measured
	mpkc   []float64
}

// Event is something the controller did, for logs and tests.
type Event struct {
	At   time.Duration
	Kind string // "sample-start", "sample-step", "sample-end", "phase", "partition"
	ID   string
	Text string
}

// Decision is the masks to apply.
type Decision struct {
	At    time.Duration
	Mode  Mode
	Masks map[string]uint64
	// Changed reports whether any mask changed; MovedWays is the repacking cost.
	Changed   bool
	MovedWays int
	Events    []Event
}

// Controller is one LFOC+ instance. Not safe for concurrent use.
type Controller struct {
	opt      Options
	apps     map[string]*app
	ids      []string
	mode     Mode
	list     []string // sampling list (FIFO)
	cur      *sampler
	lastPart time.Duration
	started  bool
	dirty    bool
	events   []Event
	now      time.Duration
	// SamplingActivations counts sampling-mode entries (one per sampled application).
	SamplingActivations int
	// Partitionings counts runs of the partitioning algorithm.
	Partitionings int
	// decision buffers: the planner, classes and curves of the last decision, and the
	// curves of applications not sampled yet (flat).
	plan    policy.LFOCPlanner
	classes []policy.Class
	curves  []policy.AppCurves
	flat    policy.AppCurves
}

// New validates the options.
func New(opt Options) (*Controller, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	return &Controller{opt: opt, apps: map[string]*app{}}, nil
}

// Add starts tracking a new application: class unknown, warm-up, then sampling.
func (c *Controller) Add(id string) error {
	if id == "" {
		return errors.New("lfoc+: an application needs a non-empty id")
	}
	if _, ok := c.apps[id]; ok {
		return fmt.Errorf("lfoc+: application %q is already tracked", id)
	}
	c.apps[id] = &app{id: id, class: policy.Unknown, warm: c.opt.WarmupIntervals}
	c.ids = append(c.ids, id)
	sort.Strings(c.ids)
	c.dirty = true
	return nil
}

// Remove forgets an application (it finished); sampling it is abandoned.
func (c *Controller) Remove(id string) error {
	if _, ok := c.apps[id]; !ok {
		return fmt.Errorf("lfoc+: no application %q", id)
	}
	delete(c.apps, id)
	for i, x := range c.ids {
		if x == id {
			c.ids = append(c.ids[:i], c.ids[i+1:]...)
			break
		}
	}
	for i, x := range c.list {
		if x == id {
			c.list = append(c.list[:i], c.list[i+1:]...)
			break
		}
	}
	if c.cur != nil && c.cur.id == id {
		c.cur = nil
		c.mode = Fairness
	}
	c.dirty = true
	return nil
}

// Class returns an application's class and its sampled curves (nil before sampling).
func (c *Controller) Class(id string) (policy.Class, []float64, []float64, bool) {
	a, ok := c.apps[id]
	if !ok {
		return 0, nil, nil, false
	}
	return a.class, a.slow, a.mpkc, true
}

// Mode returns the current mode.
func (c *Controller) Mode() Mode { return c.mode }

func (c *Controller) event(kind, id, f string, a ...any) {
	c.events = append(c.events, Event{At: c.now, Kind: kind, ID: id, Text: fmt.Sprintf(f, a...)})
}

// Step feeds counter deltas up to now and returns a decision when the masks must change
// (sampling steps, the end of sampling, the 500 ms partitioning, arrivals and departures).
func (c *Controller) Step(now time.Duration, samples []Sample) (Decision, bool, error) {
	known := func(id string) bool { _, ok := c.apps[id]; return ok }
	if err := ctlsched.CheckSamples("lfoc+", samples, known, func(s Sample) (string, time.Duration, []float64) {
		return s.ID, 0, []float64{s.Instructions, s.Cycles, s.LLCMisses, s.OccupancyBytes}
	}); err != nil {
		return Decision{}, false, err
	}
	c.now = now
	if !c.started {
		c.started = true
		c.lastPart = now
	}
	resize := false
	for _, s := range samples {
		a := c.apps[s.ID]
		a.acc.Instructions += s.Instructions
		a.acc.Cycles += s.Cycles
		a.acc.LLCMisses += s.LLCMisses
		a.occ = s.OccupancyBytes
		if c.cur != nil && c.cur.id == s.ID {
			for a.acc.Instructions >= c.opt.SamplingInstructions {
				if c.samplingInterval(a) {
					// The rest of this sample ran at the old size: drop it, the next
					// samples come under the new partition.
					resize = true
					a.acc = Sample{ID: a.id}
					break
				}
			}
			continue
		}
		win := c.opt.FairnessInstructions
		if a.warm > 0 {
			win = c.opt.SamplingInstructions
		}
		for a.acc.Instructions >= win {
			c.interval(a, win)
			if a.warm == 0 {
				win = c.opt.FairnessInstructions
			}
		}
	}
	if c.cur == nil && len(c.list) > 0 {
		c.startSampling()
		resize = true
	}
	part := false
	if c.mode == Fairness && (now-c.lastPart >= c.opt.Period || c.dirty) {
		part = true
		c.lastPart = now
	}
	if !resize && !part && !c.dirty {
		return Decision{}, false, nil
	}
	d, err := c.layout(now)
	if err != nil {
		return Decision{}, false, err
	}
	c.dirty = false
	return d, true, nil
}

// interval closes one monitoring interval of an application outside sampling: warm-up,
// then the phase detector.
func (c *Controller) interval(a *app, win float64) {
	cyc, miss := a.acc.take(win)
	if a.warm > 0 {
		a.warm--
		if a.warm == 0 {
			c.enqueue(a, "warm-up done")
		}
		return
	}
	if c.mode == Sampling {
		// The sampling layout squeezes everybody else: not a phase of this application.
		a.history = nil
		return
	}
	a.history = append(a.history, LLCMPKC(miss, cyc))
	if len(a.history) > c.opt.PhaseWindow {
		a.history = a.history[len(a.history)-c.opt.PhaseWindow:]
	}
	if len(a.history) < c.opt.PhaseWindow || a.queued || a.slow == nil {
		return
	}
	avg := 0.0
	for _, v := range a.history {
		avg += v
	}
	avg /= float64(len(a.history))
	occWays := a.occ / c.opt.BytesPerWay
	why := ""
	switch a.class {
	case policy.Light:
		if avg > c.opt.HighLLCMPKC {
			why = fmt.Sprintf("light app misses %.1f LLCMPKC > %.1f", avg, c.opt.HighLLCMPKC)
		}
	case policy.Streaming:
		if avg < c.opt.LowLLCMPKC {
			why = fmt.Sprintf("streaming app misses %.1f LLCMPKC < %.1f", avg, c.opt.LowLLCMPKC)
		}
	case policy.Sensitive:
		crit := float64(a.critical)
		if avg < c.opt.LowLLCMPKC && occWays < crit {
			why = fmt.Sprintf("sensitive app quiet (%.1f LLCMPKC) below its critical size (%.1f < %d ways)", avg, occWays, a.critical)
		} else if avg > c.opt.HighLLCMPKC && occWays > crit {
			why = fmt.Sprintf("sensitive app misses %.1f LLCMPKC above its critical size (%.1f > %d ways)", avg, occWays, a.critical)
		}
	}
	// Edge-triggered: a condition that already held in the first full window after the
	// application's sampling describes the phase that sampling measured, not a new one.
	fire := why != "" && a.armed && !a.held
	a.held, a.armed = why != "", true
	if fire {
		a.armed = false // re-armed by its next sampling's first window
	}
	if fire {
		c.event("phase", a.id, "%s", why)
		c.enqueue(a, why)
	}
}

func (c *Controller) enqueue(a *app, why string) {
	if a.queued {
		return
	}
	a.queued = true
	a.history = nil
	c.list = append(c.list, a.id)
}

func (c *Controller) maxK() int {
	if len(c.apps) > 1 {
		return c.opt.Ways - 1
	}
	return c.opt.Ways
}

func (c *Controller) startSampling() {
	id := c.list[0]
	c.list = c.list[1:]
	a := c.apps[id]
	a.queued = false
	a.acc = Sample{ID: id}
	n := c.opt.Ways
	s := &sampler{id: id, k: 1, settle: c.opt.SettleIntervals, ipc: make([]float64, n), mpkc: make([]float64, n)}
	for i := range s.ipc {
		s.ipc[i], s.mpkc[i] = math.NaN(), math.NaN()
	}
	c.cur = s
	c.mode = Sampling
	c.SamplingActivations++
	c.event("sample-start", id, "sampling partition 1 way")
}

// samplingInterval closes one sampling interval of the sampled application; it reports
// whether the partition must be resized.
func (c *Controller) samplingInterval(a *app) bool {
	s := c.cur
	win := c.opt.SamplingInstructions
	cyc, miss := a.acc.take(win)
	if s.settle > 0 {
		s.settle--
		return false
	}
	s.ipc[s.k-1] = metric.IPC(win, cyc)
	s.mpkc[s.k-1] = LLCMPKC(miss, cyc)
	c.event("sample-step", a.id, "%d ways: IPC %.3f, LLCMPKC %.2f", s.k, s.ipc[s.k-1], s.mpkc[s.k-1])
	if s.mpkc[s.k-1] < c.opt.EarlyStopLLCMPKC || s.k >= c.maxK() {
		c.endSampling(a)
		return true
	}
	s.k++
	s.settle = c.opt.SettleIntervals
	return true
}

// SampledCurves turns the measured IPC and LLCMPKC by ways (NaN where not measured) into
// full curves: entries beyond the last measurement hold it, the slowdown is
// S(w) = max observed IPC / IPC(w) (seed001.md §1.4 step 5).
func SampledCurves(ipc, mpkc []float64) (slowdown, llcmpkc []float64) {
	n := len(ipc)
	slowdown, llcmpkc = make([]float64, n), make([]float64, n)
	maxIPC := 0.0
	last := -1
	for i := range ipc {
		if !math.IsNaN(ipc[i]) {
			maxIPC = math.Max(maxIPC, ipc[i])
			last = i
		}
	}
	if last < 0 {
		for i := range slowdown {
			slowdown[i] = 1
		}
		return slowdown, llcmpkc
	}
	for i := range ipc {
		j := min(i, last)
		for j > 0 && math.IsNaN(ipc[j]) {
			j--
		}
		slowdown[i] = metric.Slowdown(maxIPC, ipc[j])
		llcmpkc[i] = mpkc[j]
	}
	return slowdown, llcmpkc
}

// CriticalSize is the smallest way count whose slowdown is below thr (1.05); the curve's
// length when none is.
func CriticalSize(slowdown []float64, thr float64) int {
	for i, s := range slowdown {
		if s < thr {
			return i + 1
		}
	}
	return len(slowdown)
}

func (c *Controller) endSampling(a *app) {
	s := c.cur
	a.slow, a.mpkc = SampledCurves(s.ipc, s.mpkc)
	old := a.class
	a.class = policy.ClassifyCurves(a.slow, a.mpkc, c.opt.Thresholds)
	a.critical = CriticalSize(a.slow, c.opt.Thresholds.SensitiveSlowdown)
	a.history = nil
	a.armed, a.held = false, false
	a.acc = Sample{ID: a.id}
	c.event("sample-end", a.id, "%d ways sampled: %v (was %v), critical size %d", s.k, a.class, old, a.critical)
	c.cur = nil
	if len(c.list) == 0 {
		c.mode = Fairness
		c.dirty = true // partition at once to undo the sampling layout
	}
}

// clusters computes the layout's groups: in sampling mode the sampled application alone and
// everybody else; in fairness mode the partitioning algorithm's clusters.
func (c *Controller) clusters() ([][]string, []int, error) {
	if c.cur != nil {
		var rest []string
		for _, id := range c.ids {
			if id != c.cur.id {
				rest = append(rest, id)
			}
		}
		if len(rest) == 0 {
			return [][]string{{c.cur.id}}, []int{c.cur.k}, nil
		}
		return [][]string{{c.cur.id}, rest}, []int{c.cur.k, c.opt.Ways - c.cur.k}, nil
	}
	if len(c.ids) == 0 {
		return nil, nil, nil
	}
	if c.flat.Slowdown == nil {
		c.flat = policy.AppCurves{Slowdown: make([]float64, c.opt.Ways), LLCMPKC: make([]float64, c.opt.Ways)}
		for k := range c.flat.Slowdown {
			c.flat.Slowdown[k] = 1
		}
	}
	classes, curves := c.classes[:0], c.curves[:0]
	for _, id := range c.ids {
		a := c.apps[id]
		classes = append(classes, a.class)
		if a.slow != nil {
			curves = append(curves, policy.AppCurves{Slowdown: a.slow, LLCMPKC: a.mpkc})
		} else {
			curves = append(curves, c.flat)
		}
	}
	c.classes, c.curves = classes, curves
	var cl []policy.Cluster
	var err error
	if c.opt.Partition == nil {
		cl, err = c.plan.Plan(true, classes, curves, c.opt.Ways, c.opt.Params)
	} else {
		cl, err = c.opt.Partition(classes, curves, c.opt.Ways, c.opt.Params)
	}
	if err != nil {
		return nil, nil, err
	}
	c.Partitionings++
	groups := make([][]string, 0, len(cl))
	ways := make([]int, 0, len(cl))
	for _, k := range cl {
		if len(k.Apps) == 0 {
			continue
		}
		var g []string
		for _, i := range k.Apps {
			g = append(g, c.ids[i])
		}
		sort.Strings(g)
		groups = append(groups, g)
		ways = append(ways, k.Ways)
	}
	return groups, ways, nil
}

func (c *Controller) layout(now time.Duration) (Decision, error) {
	groups, ways, err := c.clusters()
	if err != nil {
		return Decision{}, err
	}
	ps := make([]dcat.Placement, len(groups))
	for i, g := range groups {
		ps[i] = dcat.Placement{ID: strings.Join(g, ","), Ways: ways[i], Old: c.apps[g[0]].mask}
	}
	// Two clusters led by apps sharing a mask: only the first keeps it as its old place.
	seen := map[uint64]bool{}
	for i := range ps {
		if seen[ps[i].Old] {
			ps[i].Old = 0
		}
		seen[ps[i].Old] = true
	}
	masks, moved, err := dcat.Layout(ps, c.opt.Ways, 0, false)
	if err != nil {
		return Decision{}, fmt.Errorf("lfoc+: laying out %v: %w", ways, err)
	}
	d := Decision{At: now, Mode: c.mode, Masks: map[string]uint64{}, MovedWays: moved}
	for i, g := range groups {
		m := masks[ps[i].ID]
		for _, id := range g {
			if c.apps[id].mask != m {
				d.Changed = true
			}
			c.apps[id].mask = m
			d.Masks[id] = m
		}
	}
	if c.mode == Fairness && c.cur == nil {
		c.event("partition", "", "%d clusters %v ways %v", len(groups), groups, ways)
	}
	d.Events, c.events = c.events, nil
	return d, nil
}
