// Package guard protects priority tenants' targets (a latency SLO, or an IPCE target) from
// noisy neighbours: a pure, deterministic controller fed one observation per tenant and
// period.
//
//   - Growth (Heracles, ISCA'15): while every victim on a socket holds its target with
//     slack (badness below 1 − GrowSlack for GrowEvery periods), the best-effort tenant
//     throttled last gets one step back.
//   - Blame (CPI2, EuroSys'13): when a victim's badness passes 1 − Slack, each best-effort
//     neighbour on its socket is scored by the Pearson correlation of the victim's CPI
//     with the neighbour's memory bandwidth (MBM), LLC occupancy and CPU over the last
//     Window periods (metric.Pearson), each weighted by the neighbour's share of that
//     resource on the socket now (a perfect correlation of a tenant that uses nothing
//     blames nothing); the best of the three is its score. A tenant that was not running
//     counts as using nothing.
//   - Throttle ladder: the most likely antagonist climbs MBA, then ways, then CPU quota.
//     A broken target (badness > 1) takes the rung to its floor at once, as Heracles
//     disables best-effort work on a violation; a target in the slack zone halves it.
//     Growth gives back one additive step (MBAStep, one way, QuotaStep) of one rung,
//     round robin over the rungs the tenant climbed, the tenant throttled last first.
//   - Repercussion window (Merlin, seed004.md): Repercussion periods after an action, it
//     is judged on what followed: a throttle is kept if the victim's CPI fell by MinGain,
//     else undone and that rung marked useless
//     for the tenant (the next blame climbs its next rung; with every rung useless the
//     tenant is left alone for a Window); a growth step that pushed a victim past
//     1 − Slack is undone and growth paused.
//
// Badness is latency/SLO (or target/IPCE): 1 is the target's edge. Every action carries
// its evidence (Action.Evidence).
package guard

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"colo/metric"
)

// Rung is one step kind of the throttle ladder.
type Rung string

// The rungs, in the order they are climbed.
const (
	MBA   Rung = "mba"
	Ways  Rung = "ways"
	Quota Rung = "quota"
)

// Kinds of actions.
const (
	KindThrottle = "throttle"
	KindUndo     = "undo"
	KindKeep     = "keep"
	KindGrow     = "grow"
)

// Options are the guard's parameters. DefaultOptions gives each default's reason.
type Options struct {
	// Window is how many periods blame correlates over (default 10: CPI2 correlates over
	// a few minutes of 1-per-10 s CPI samples; ten 1 s periods hold an antagonist's
	// arrival and a victim's reaction with room for a phase).
	Window int
	// Repercussion is how many periods an action is left to act before it is judged
	// (default 3: MBA and quota act within a period; a CAT change takes one or two to
	// refill the cache).
	Repercussion int
	// Slack: act when a victim's badness exceeds 1 − Slack (default 0.1: before the SLO
	// is broken, as Heracles keeps a margin).
	Slack float64
	// GrowSlack: grow when every victim is below 1 − GrowSlack (default 0.3: Heracles
	// grows best-effort work only while the slack exceeds 10 %; a p99 is steep near
	// saturation — an M/M/1 tail is ∝ 1/(μ − λ), so at 0.9 × SLO a 3 % loss of service
	// rate breaks the SLO, at 0.7 × SLO it takes about 10 % — so the guard grows only
	// with that margin), for GrowEvery periods (default 3: one repercussion window of
	// calm).
	GrowSlack float64
	GrowEvery int
	// MinGain is the relative fall of the victim's CPI a throttle must buy to be kept
	// (default 0.05, a few times the counters' period-to-period noise).
	MinGain float64
	// MinScore is the blame score (correlation × share) below which nobody is blamed
	// (default 0.2: a neighbour must explain a fair part of the victim's trouble, e.g. a
	// correlation of 0.5 with 40 % of a resource; noise correlates small tenants too).
	MinScore float64
	// MBAMax/MBAFloor/MBAStep: the MBA range and step (default: the machine's range, two
	// grid steps per rung).
	MBAMax, MBAFloor, MBAStep int
	// WaysMax is the cache's ways; WaysFloor the fewest a throttled tenant keeps (default 2).
	WaysMax, WaysFloor int
	// QuotaStep and QuotaFloor (default 0.2 and 0.2).
	QuotaStep, QuotaFloor float64
	// Skip lists rungs the platform cannot actuate (no MBA, no CPU quota, no CAT).
	Skip []Rung
}

// DefaultOptions are the defaults above for a cache of ways ways and an MBA range
// (mbaMax 0: no MBA).
func DefaultOptions(ways, mbaMin, mbaMax, mbaGran int) Options {
	o := Options{Window: 10, Repercussion: 3, Slack: 0.1, GrowSlack: 0.3, GrowEvery: 3, MinGain: 0.05, MinScore: 0.2,
		MBAMax: mbaMax, MBAFloor: mbaMin, MBAStep: 2 * max(mbaGran, 1), WaysMax: ways, WaysFloor: min(2, ways),
		QuotaStep: 0.2, QuotaFloor: 0.2}
	if mbaMax <= 0 {
		o.Skip = append(o.Skip, MBA)
	}
	return o
}

// Validate checks the options.
func (o Options) Validate() error {
	switch {
	case o.Window < 3 || o.Window > 1000:
		return fmt.Errorf("guard: window %d: want 3..1000 periods", o.Window)
	case o.Repercussion < 1:
		return fmt.Errorf("guard: repercussion %d: want ≥ 1 period", o.Repercussion)
	case !(o.Slack >= 0 && o.Slack < 1) || !(o.GrowSlack > o.Slack && o.GrowSlack < 1):
		return fmt.Errorf("guard: slack %v and grow_slack %v: want 0 ≤ slack < grow_slack < 1", o.Slack, o.GrowSlack)
	case o.GrowEvery < 1:
		return fmt.Errorf("guard: grow_every %d: want ≥ 1", o.GrowEvery)
	case !(o.MinScore >= 0 && o.MinScore < 1):
		return fmt.Errorf("guard: min_score %v: want [0, 1)", o.MinScore)
	case !(o.MinGain >= 0 && o.MinGain < 1):
		return fmt.Errorf("guard: min_gain %v: want [0, 1)", o.MinGain)
	case !(o.QuotaFloor > 0 && o.QuotaFloor <= 1) || !(o.QuotaStep > 0):
		return fmt.Errorf("guard: quota_floor %v and quota_step %v: want a floor in (0, 1] and a step > 0", o.QuotaFloor, o.QuotaStep)
	case o.WaysFloor < 1 || o.WaysFloor > o.WaysMax:
		return fmt.Errorf("guard: ways_floor %d: want 1..%d", o.WaysFloor, o.WaysMax)
	case !slices.Contains(o.Skip, MBA) && (o.MBAStep < 1 || o.MBAFloor < 1 || o.MBAFloor > o.MBAMax):
		return fmt.Errorf("guard: MBA floor %d step %d of max %d", o.MBAFloor, o.MBAStep, o.MBAMax)
	}
	return nil
}

// Tenant is what the guard knows of a tenant.
type Tenant struct {
	Socket   int
	Priority bool
	// SLOms (a latency target) or IPCETarget (a fraction); a priority tenant with
	// neither is not guarded (it is not throttled either).
	SLOms, IPCETarget float64
}

// Obs is one tenant's period.
type Obs struct {
	ID string
	// LatencyMs (p99) and IPCE (fraction) of the period; CPI its cycles per instruction;
	// MBM in MB/s, Occupancy in bytes, CPU in cores used.
	LatencyMs, IPCE, CPI, MBM, Occupancy, CPU float64
}

// Knobs are a tenant's throttles: MBA value, ways (of the low end of the cache), CPU quota.
type Knobs struct {
	MBA   int
	Ways  int
	Quota float64
}

func (k Knobs) String() string {
	return fmt.Sprintf("MBA %d, %d ways, quota %.2f", k.MBA, k.Ways, k.Quota)
}

// Action is one decision and its evidence.
type Action struct {
	Kind   string
	Tenant string
	Victim string
	Rung   Rung
	From   Knobs
	To     Knobs
	// Score is the blame score of a throttle (the best correlation).
	Score    float64
	Evidence string
}

type tenant struct {
	id      string
	t       Tenant
	knobs   Knobs
	bad     []float64 // ring of badness (victims)
	cpi     []float64 // ring of CPI (victims)
	mbm     []float64
	occ     []float64
	cpu     []float64
	seen    bool   // observed this period
	coolTil int    // not blamed before this period
	history []Rung // rungs climbed, last on top (growth gives them back)
	useless []Rung // rungs whose throttle did not help the victim
	since   int    // period of its last throttle (growth order)
}

type pending struct {
	act    Action
	at     int
	before float64 // victim's badness in the period of the action
	cpi    float64 // victim's CPI in the period of the action
}

// Controller is the guard. It is not safe for concurrent use.
type Controller struct {
	o        Options
	ts       map[string]*tenant
	ids      []string // sorted
	period   int
	pend     *pending
	calm     []int     // periods of ample slack per socket
	calmOK   []bool    // per socket, this period
	vict     []*tenant // per socket, the worst victim this period
	growOff  int       // no growth before this period (after an undone growth)
	out      []Action
	scratch  []float64
	vscratch []float64
}

// New returns a guard with no tenants.
func New(o Options) (*Controller, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Controller{o: o, ts: map[string]*tenant{}, scratch: make([]float64, o.Window), vscratch: make([]float64, o.Window)}, nil
}

// Options returns the options.
func (c *Controller) Options() Options { return c.o }

// Add starts tracking a tenant, unthrottled; its history before now counts as idle.
func (c *Controller) Add(id string, t Tenant) error {
	if _, ok := c.ts[id]; ok {
		return fmt.Errorf("guard: tenant %q already added", id)
	}
	w := c.o.Window
	if t.Socket < 0 {
		return fmt.Errorf("guard: tenant %q on socket %d", id, t.Socket)
	}
	c.ts[id] = &tenant{id: id, t: t, knobs: c.full(), bad: make([]float64, w), cpi: make([]float64, w), mbm: make([]float64, w),
		occ: make([]float64, w), cpu: make([]float64, w)}
	c.ids = append(c.ids, id)
	sort.Strings(c.ids)
	for len(c.calm) <= t.Socket {
		c.calm, c.calmOK, c.vict = append(c.calm, 0), append(c.calmOK, false), append(c.vict, nil)
	}
	return nil
}

// Remove forgets a tenant (a pending action on it or for it is dropped).
func (c *Controller) Remove(id string) {
	if _, ok := c.ts[id]; !ok {
		return
	}
	delete(c.ts, id)
	c.ids = slices.DeleteFunc(c.ids, func(s string) bool { return s == id })
	if c.pend != nil && (c.pend.act.Tenant == id || c.pend.act.Victim == id) {
		c.pend = nil
	}
}

// Knobs returns a tenant's throttles.
func (c *Controller) Knobs(id string) (Knobs, bool) {
	t, ok := c.ts[id]
	if !ok {
		return Knobs{}, false
	}
	return t.knobs, true
}

func (c *Controller) full() Knobs { return Knobs{MBA: c.o.MBAMax, Ways: c.o.WaysMax, Quota: 1} }

func (c *Controller) guarded(t *tenant) bool {
	return t.t.Priority && (t.t.SLOms > 0 || t.t.IPCETarget > 0)
}

// badness of one observation: latency/SLO, or target/IPCE.
func badness(t Tenant, o Obs) float64 {
	if t.SLOms > 0 {
		return o.LatencyMs / t.SLOms
	}
	if t.IPCETarget > 0 {
		if o.IPCE <= 0 {
			return 10
		}
		return t.IPCETarget / o.IPCE
	}
	return 0
}

func (c *Controller) slot(p int) int { return p % c.o.Window }

// Step takes one period's observations and returns the period's actions (the slice is
// reused by the next Step).
func (c *Controller) Step(obs []Obs) []Action {
	c.out = c.out[:0]
	p := c.period
	for _, t := range c.ts {
		t.seen = false
	}
	for _, o := range obs {
		t, ok := c.ts[o.ID]
		if !ok {
			continue
		}
		i := c.slot(p)
		t.bad[i], t.cpi[i], t.mbm[i], t.occ[i], t.cpu[i] = badness(t.t, o), o.CPI, o.MBM, o.Occupancy, o.CPU
		t.seen = true
	}
	for _, id := range c.ids { // carry the last value of a tenant without a sample
		t := c.ts[id]
		if !t.seen && p > 0 {
			i, j := c.slot(p), c.slot(p-1)
			t.bad[i], t.cpi[i], t.mbm[i], t.occ[i], t.cpu[i] = t.bad[j], t.cpi[j], t.mbm[j], t.occ[j], t.cpu[j]
		}
	}
	c.period++
	if c.pend != nil {
		if p-c.pend.at < c.o.Repercussion {
			return c.out
		}
		if !c.judge(p) {
			return c.out
		}
	}
	// the worst victim
	var worst *tenant
	wb := 0.0
	for _, id := range c.ids {
		t := c.ts[id]
		if !c.guarded(t) || !t.seen {
			continue
		}
		if b := t.bad[c.slot(p)]; worst == nil || b > wb {
			worst, wb = t, b
		}
	}
	if worst == nil {
		return c.out
	}
	if wb > 1-c.o.Slack {
		clear(c.calm)
		c.blame(worst, p)
		return c.out
	}
	c.grow(p)
	return c.out
}

// mean of the last n values of a ring ending at period p.
func (c *Controller) mean(r []float64, p, n int) float64 {
	n = min(n, c.o.Window, p+1)
	s := 0.0
	for k := 0; k < n; k++ {
		s += r[c.slot(p-k)]
	}
	return s / float64(max(n, 1))
}

// series copies a ring into chronological order (the last min(Window, p+1) periods).
func (c *Controller) series(dst, r []float64, p int) []float64 {
	n := min(c.o.Window, p+1)
	dst = dst[:n]
	for k := 0; k < n; k++ {
		dst[k] = r[c.slot(p-n+1+k)]
	}
	return dst
}

func (c *Controller) blame(v *tenant, p int) {
	n := min(c.o.Window, p+1)
	vc := c.series(c.vscratch, v.cpi, p)
	var totals [3]float64
	for _, id := range c.ids {
		t := c.ts[id]
		if t.t.Socket == v.t.Socket && !t.t.Priority {
			for k, r := range c.signals(t) {
				totals[k] += math.Max(0, r[c.slot(p)])
			}
		}
	}
	var best *tenant
	bestScore := 0.0
	var bestEv string
	var bestRung Rung
	for _, id := range c.ids {
		t := c.ts[id]
		if t.t.Priority || t.t.Socket != v.t.Socket || p < t.coolTil || c.next(t) == "" {
			continue
		}
		score := 0.0
		var rung Rung
		var corr, share [3]float64
		for k, r := range c.signals(t) {
			x := metric.Pearson(vc, c.series(c.scratch, r, p))
			if math.IsNaN(x) {
				x = 0
			}
			corr[k] = x
			if totals[k] > 0 {
				share[k] = math.Max(0, r[c.slot(p)]) / totals[k]
			}
			if x*share[k] > score && c.usable(t, signalRung[k]) {
				rung = signalRung[k]
			}
			score = math.Max(score, x*share[k])
		}
		if rung == "" {
			rung = c.next(t)
		}
		if best == nil || score > bestScore {
			best, bestScore, bestRung = t, score, rung
			bestEv = fmt.Sprintf("corr(CPI, MBM)=%.2f × %.0f %%, corr(CPI, occupancy)=%.2f × %.0f %%, corr(CPI, CPU)=%.2f × %.0f %% of the socket's best-effort use",
				corr[0], 100*share[0], corr[1], 100*share[1], corr[2], 100*share[2])
		}
	}
	if best == nil || bestScore < c.o.MinScore || bestScore <= 0 {
		return
	}
	rung := bestRung
	from := best.knobs
	b := v.bad[c.slot(p)]
	c.cut(best, rung, b > 1)
	c.sync(best)
	best.since = p
	what := "latency"
	edge := fmt.Sprintf("p99 %.2f × SLO %.3g ms", b, v.t.SLOms)
	if v.t.SLOms <= 0 {
		what, edge = "IPCE", fmt.Sprintf("target/IPCE %.2f", b)
	}
	a := Action{Kind: KindThrottle, Tenant: best.id, Victim: v.id, Rung: rung, From: from, To: best.knobs, Score: bestScore,
		Evidence: fmt.Sprintf("victim %s %s (%s > %.2f); blamed over %d periods: %s", v.id, what, edge, 1-c.o.Slack, n, bestEv)}
	c.out = append(c.out, a)
	c.pend = &pending{act: a, at: p, before: b, cpi: v.cpi[c.slot(p)]}
}

// signalRung is the rung that acts on each signal: bandwidth (MBA), occupancy (ways), CPU
// (quota). The ladder starts at the rung of the signal that blamed the tenant, if it can
// still be climbed, else at its lowest usable rung.
var signalRung = [3]Rung{MBA, Ways, Quota}

// usable reports whether a tenant can climb rung r.
func (c *Controller) usable(t *tenant, r Rung) bool {
	if slices.Contains(c.o.Skip, r) || slices.Contains(t.useless, r) {
		return false
	}
	return c.throttledBelow(t, r)
}

// throttledBelow reports whether rung r of a tenant is above its floor.
func (c *Controller) throttledBelow(t *tenant, r Rung) bool {
	switch r {
	case MBA:
		return t.knobs.MBA > c.o.MBAFloor
	case Ways:
		return t.knobs.Ways > c.o.WaysFloor
	}
	return t.knobs.Quota > c.o.QuotaFloor+1e-9
}

// signals are a tenant's rings blame correlates with: MBM, occupancy, CPU.
func (c *Controller) signals(t *tenant) [3][]float64 { return [3][]float64{t.mbm, t.occ, t.cpu} }

// next is the lowest rung a tenant can still climb ("" at every floor).
func (c *Controller) next(t *tenant) Rung {
	for _, r := range []Rung{MBA, Ways, Quota} {
		if c.usable(t, r) {
			return r
		}
	}
	return ""
}

// cut throttles rung r of a tenant: to its floor when the target is broken, else by half.
func (c *Controller) cut(t *tenant, r Rung, broken bool) {
	k := &t.knobs
	switch r {
	case MBA:
		v := c.o.MBAFloor
		if !broken {
			g := max(c.o.MBAStep/2, 1)
			v = max(c.o.MBAFloor, (k.MBA/2)/g*g)
		}
		k.MBA = v
	case Ways:
		k.Ways = c.o.WaysFloor
		if !broken {
			k.Ways = max(c.o.WaysFloor, k.Ways/2)
		}
	case Quota:
		k.Quota = c.o.QuotaFloor
		if !broken {
			k.Quota = math.Max(c.o.QuotaFloor, math.Round(k.Quota*500)/1000)
		}
	}
}

// relax gives rung r of a tenant one additive step back.
func (c *Controller) relax(t *tenant, r Rung) {
	k := &t.knobs
	switch r {
	case MBA:
		k.MBA = min(c.o.MBAMax, k.MBA+c.o.MBAStep)
	case Ways:
		k.Ways = min(c.o.WaysMax, k.Ways+1)
	default:
		k.Quota = math.Min(1, math.Round((k.Quota+c.o.QuotaStep)*1000)/1000)
	}
}

// sync keeps a tenant's history the rungs it has below their maximum, in their order,
// newly throttled rungs at the back.
func (c *Controller) sync(t *tenant) {
	t.history = slices.DeleteFunc(t.history, func(r Rung) bool { return !c.throttled(t, r) })
	for _, r := range []Rung{MBA, Ways, Quota} {
		if c.throttled(t, r) && !slices.Contains(t.history, r) {
			t.history = append(t.history, r)
		}
	}
}

// judge ends the repercussion window of the pending action; it reports whether the guard
// may act again in this period (a kept throttle whose victim still needs help: the next
// blame need not wait another period).
func (c *Controller) judge(p int) bool {
	pd := c.pend
	c.pend = nil
	a := pd.act
	t, v := c.ts[a.Tenant], c.ts[a.Victim]
	if t == nil || v == nil {
		return false
	}
	after := c.mean(v.bad, p, c.o.Repercussion)
	cpi := c.mean(v.cpi, p, c.o.Repercussion)
	switch a.Kind {
	case KindThrottle:
		if cpi <= pd.cpi*(1-c.o.MinGain) {
			c.out = append(c.out, Action{Kind: KindKeep, Tenant: t.id, Victim: v.id, Rung: a.Rung, From: a.From, To: t.knobs,
				Evidence: fmt.Sprintf("victim %s badness %.2f → %.2f, CPI %.3g → %.3g over the repercussion window", v.id, pd.before, after, pd.cpi, cpi)})
			return true
		}
		from := t.knobs
		t.knobs = a.From
		c.sync(t)
		t.useless = append(t.useless, a.Rung)
		note := "its next rung is tried next"
		if c.next(t) == "" {
			t.useless, t.coolTil = t.useless[:0], p+c.o.Window
			note = fmt.Sprintf("%s is left alone for %d periods", t.id, c.o.Window)
		}
		c.out = append(c.out, Action{Kind: KindUndo, Tenant: t.id, Victim: v.id, Rung: a.Rung, From: from, To: t.knobs,
			Evidence: fmt.Sprintf("victim %s CPI %.3g → %.3g (badness %.2f → %.2f): gained less than %.0f %%; %s",
				v.id, pd.cpi, cpi, pd.before, after, 100*c.o.MinGain, note)})
		return true
	case KindGrow:
		if after <= 1-c.o.Slack {
			return false
		}
		from := t.knobs
		t.knobs = a.From
		c.sync(t)
		c.growOff = p + 3*c.o.GrowEvery
		c.out = append(c.out, Action{Kind: KindUndo, Tenant: t.id, Victim: v.id, Rung: a.Rung, From: from, To: t.knobs,
			Evidence: fmt.Sprintf("growth pushed victim %s badness to %.2f (> %.2f); no growth for %d periods",
				v.id, after, 1-c.o.Slack, 3*c.o.GrowEvery)})
	}
	return false
}

// grow gives the tenant throttled last on a calm socket one step back.
func (c *Controller) grow(p int) {
	if p < c.growOff {
		return
	}
	// a socket is calm when every guarded victim on it is below 1 − GrowSlack
	for s := range c.calmOK {
		c.calmOK[s], c.vict[s] = true, nil
	}
	for _, id := range c.ids {
		t := c.ts[id]
		if !c.guarded(t) {
			continue
		}
		s := t.t.Socket
		b := t.bad[c.slot(p)]
		if b >= 1-c.o.GrowSlack {
			c.calmOK[s] = false
		}
		if w := c.vict[s]; w == nil || b > w.bad[c.slot(p)] {
			c.vict[s] = t
		}
	}
	for s := range c.calmOK {
		if !c.calmOK[s] || c.vict[s] == nil {
			c.calm[s] = 0
			continue
		}
		c.calm[s]++
		if c.calm[s] < c.o.GrowEvery {
			continue
		}
		var pick *tenant
		for _, id := range c.ids {
			t := c.ts[id]
			if t.t.Socket == s && !t.t.Priority && len(t.history) > 0 && (pick == nil || t.since > pick.since) {
				pick = t
			}
		}
		if pick == nil {
			continue
		}
		c.calm[s] = 0
		// round robin over the rungs it climbed: the oldest first, then to the back
		rung := pick.history[0]
		from := pick.knobs
		c.relax(pick, rung)
		// to the back of the round
		copy(pick.history, pick.history[1:])
		pick.history[len(pick.history)-1] = rung
		c.sync(pick)
		pick.useless = pick.useless[:0]
		v := c.vict[s]
		a := Action{Kind: KindGrow, Tenant: pick.id, Victim: v.id, Rung: rung, From: from, To: pick.knobs,
			Evidence: fmt.Sprintf("victim %s badness %.2f < %.2f for %d periods: %s gets one %s step back",
				v.id, v.bad[c.slot(p)], 1-c.o.GrowSlack, c.o.GrowEvery, pick.id, rung)}
		c.out = append(c.out, a)
		c.pend = &pending{act: a, at: p, before: v.bad[c.slot(p)], cpi: v.cpi[c.slot(p)]}
		return
	}
}

// throttled reports whether a tenant's rung r is below its maximum.
func (c *Controller) throttled(t *tenant, r Rung) bool {
	switch r {
	case MBA:
		return t.knobs.MBA < c.o.MBAMax
	case Ways:
		return t.knobs.Ways < c.o.WaysMax
	}
	return t.knobs.Quota < 1
}
