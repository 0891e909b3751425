// Package mbps turns a requested memory bandwidth in MB/s into a platform's MBA setting
// from MBM feedback: a pure, deterministic closed loop fed one observation per period.
//
// MBA does not throttle in MB/s. On Intel the value is a percentage of a delay that is not
// linear in bandwidth (intel-cmt-cat issue 277: a tenant capped at "4000 MB/s" measured at
// 13.6 GB/s); on AMD it is an absolute limit in 1/8 GB/s per L3 domain (CCD); only an
// mba_MBps mount takes MB/s, through the kernel's own controller. A Controller searches
// the platform's grid of values for the request:
//
//   - a cap first drops from unthrottled to the lowest value and climbs from there, so
//     that it does not overshoot while it searches (intel-cmt-cat issue 285: caps that
//     let through several times the limit for seconds);
//   - it brackets the request between the highest value seen to give less (lo) and the
//     lowest seen to give at least the request (hi), and takes the next value by regula
//     falsi between them (proportionally, a/r, while one side is unknown), always strictly
//     inside the bracket, so the search ends in at most log steps and never oscillates;
//   - when the bracket is one grid step wide (Intel's 10 % steps are coarse), it stays on
//     hi and trims the rest with a CPU quota (Options.Quota), q ← q·r/a, the secant step
//     of a bandwidth that scales with the CPU time the tenant gets;
//   - within the dead band Options.Band of the request it changes nothing (hysteresis);
//   - a change of the achieved bandwidth by more than Options.Phase at an unchanged
//     setting is a phase change: what was learned is dropped and the search restarts.
//
// It says what it achieved: converged, settling, demand-below-request (unthrottled, the
// tenant uses less than it may), floor (the lowest value and quota still give more) or
// coarse (no quota to trim with and no grid value close enough).
package mbps

import (
	"fmt"
	"math"

	"colo/machine"
)

// State is what a Controller reports about its request.
type State string

// The states of a request.
const (
	// Off: no request; the group is unthrottled.
	Off State = "off"
	// Settling: searching.
	Settling State = "settling"
	// Converged: the achieved bandwidth is within Band of the request.
	Converged State = "converged"
	// DemandBelow: unthrottled, the tenant uses less than it is allowed.
	DemandBelow State = "demand-below-request"
	// Floor: at the lowest MBA value (and quota) the tenant still gets more.
	Floor State = "floor"
	// Coarse: no grid value is within Band and there is no quota to trim with.
	Coarse State = "coarse"
)

// Options tune a Controller.
type Options struct {
	// Band is the dead band, a fraction of the request: inside it nothing changes.
	// Default 0.03, well inside the 8 % the kernel's MBA selftest accepts between MBM and
	// the memory controller's count, so that measurement noise of a few percent does not
	// move the setting and a converged request is still inside the selftest's bar.
	Band float64
	// Phase is the relative change of the achieved bandwidth at an unchanged setting that
	// counts as a phase change (default 0.15: five times the dead band, above the period-
	// to-period noise of MBM on a steady stream).
	Phase float64
	// Quota allows trimming with a CPU quota when the MBA grid is too coarse.
	Quota bool
	// MinQuota is the lowest quota used (default 0.05).
	MinQuota float64
}

// DefaultOptions are the defaults above, with quota trimming on.
func DefaultOptions() Options { return Options{Band: 0.03, Phase: 0.15, Quota: true, MinQuota: 0.05} }

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Band <= 0 {
		o.Band = d.Band
	}
	if o.Phase <= 0 {
		o.Phase = d.Phase
	}
	if o.MinQuota <= 0 {
		o.MinQuota = d.MinQuota
	}
	return o
}

// Decision is a Controller's output for one period.
type Decision struct {
	// Value is the MBA value to write (in the platform's unit); Quota the CPU quota (1: none).
	Value int
	Quota float64
	State State
	// Requested and Achieved are in MB/s (Achieved is the observation the decision follows).
	Requested, Achieved float64
	// Changed is true when Value or Quota differ from the previous period's.
	Changed bool
}

// Controller is the loop of one group on one L3 domain. It is not safe for concurrent use
// and allocates nothing per period.
type Controller struct {
	unit         machine.MBAUnit
	min, max, gr int
	opt          Options
	req          float64
	value        int
	quota        float64
	lo, hi       int     // bracket: values seen to give < req (lo) and ≥ req (hi); -1 unknown
	loA, hiA     float64 // the bandwidth seen there (per unit quota)
	prevA        float64 // achieved in the previous period at the current setting; < 0 after a change
	lastState    State
	flat         bool // the last step down from hi did not lower the bandwidth
}

// New returns a controller for a platform's MBA capability, unthrottled and without a request.
func New(mba machine.MBA, opt Options) (*Controller, error) {
	switch mba.Unit {
	case machine.MBAPercent, machine.MBAEighthGBps, machine.MBAMBps:
	default:
		return nil, fmt.Errorf("mbps: unknown MBA unit %q", mba.Unit)
	}
	if mba.Min <= 0 || mba.Max < mba.Min {
		return nil, fmt.Errorf("mbps: MBA range %d..%d", mba.Min, mba.Max)
	}
	g := max(mba.Gran, 1)
	c := &Controller{unit: mba.Unit, min: mba.Min, max: mba.Max, gr: g, opt: opt.withDefaults()}
	c.reset()
	c.value, c.quota, c.lastState = c.max, 1, Off
	return c, nil
}

func (c *Controller) reset() {
	c.lo, c.hi, c.loA, c.hiA, c.prevA, c.flat = -1, -1, 0, 0, -1, false
}

// Request sets the requested bandwidth in MB/s (≤ 0: none, unthrottle). A new request
// restarts the search from the current setting.
func (c *Controller) Request(mbps float64) {
	if mbps == c.req {
		return
	}
	c.req = mbps
	c.reset()
	if mbps <= 0 {
		c.value, c.quota = c.max, 1
		return
	}
	c.quota = 1
}

// Requested is the current request in MB/s.
func (c *Controller) Requested() float64 { return c.req }

// Setting is the current MBA value and CPU quota.
func (c *Controller) Setting() (value int, quota float64) { return c.value, c.quota }

// unlimited reports whether value v does not throttle (Intel 100 %, AMD's maximum; an
// mba_MBps value always throttles at itself).
func (c *Controller) unlimited(v int) bool { return v >= c.max && c.unit != machine.MBAMBps }

// clamp puts v on the grid (rounding up) within min..max.
func (c *Controller) clamp(v int) int {
	if v <= c.min {
		return c.min
	}
	if v >= c.max {
		return c.max
	}
	if r := (v - c.min) % c.gr; r != 0 {
		v += c.gr - r
	}
	return min(v, c.max)
}

// Observe takes the bandwidth achieved (MBM, MB/s) during the last period at the current
// setting and returns the setting for the next one.
func (c *Controller) Observe(achieved float64) (d Decision) {
	d = Decision{Requested: c.req, Achieved: achieved}
	v0, q0 := c.value, c.quota
	defer func() {
		d.Value, d.Quota = c.value, c.quota
		d.Changed = c.value != v0 || c.quota != q0
		if d.Changed {
			c.prevA = -1
		}
		c.lastState = d.State
	}()
	if c.req <= 0 || !(achieved >= 0) {
		if c.req <= 0 {
			c.value, c.quota = c.max, 1
			d.State = Off
		} else {
			d.State = c.lastState
		}
		return d
	}
	r := c.req
	// phase change: the same setting gives a different bandwidth.
	if c.prevA > 0 && math.Abs(achieved-c.prevA) > c.opt.Phase*c.prevA {
		c.reset()
	}
	c.prevA = achieved
	perQ := achieved / c.quota // bandwidth at this value with the full CPU
	band := c.opt.Band * r
	if math.Abs(achieved-r) <= band {
		d.State = Converged
		c.learn(perQ, r)
		return d
	}
	if achieved < r {
		if c.quota < 1 {
			// trim less: the secant step of the quota, capped at 1.
			c.quota = math.Min(1, c.quota*r/math.Max(achieved, 1e-9))
			d.State = Settling
			return d
		}
		if c.unlimited(c.value) {
			d.State = DemandBelow
			c.lo, c.loA = c.value, achieved
			return d
		}
		c.learn(perQ, r)
		c.value = c.next()
		d.State = Settling
		return d
	}
	// achieved > r (1 + Band)
	c.learn(perQ, r)
	if c.lo >= 0 && c.hi >= 0 && c.hi-c.lo <= c.gr || c.hi == c.min {
		// the grid cannot do better than hi: trim with the quota.
		if c.value != c.hi {
			c.value = c.hi
			d.State = Settling
			return d
		}
		if !c.opt.Quota {
			d.State = Coarse
			if c.value == c.min {
				d.State = Floor
			}
			return d
		}
		q := math.Max(c.opt.MinQuota, c.quota*r/achieved)
		if q == c.quota {
			d.State = Floor
			return d
		}
		c.quota = q
		d.State = Settling
		return d
	}
	c.value = c.next()
	d.State = Settling
	return d
}

// learn records that the current value gives perQ MB/s with the whole CPU.
func (c *Controller) learn(perQ, r float64) {
	if perQ >= r*(1-c.opt.Band) {
		if c.hi < 0 || c.value <= c.hi {
			// flat: a lower value gave the same bandwidth, the value does not bind yet
			c.flat = c.hi > c.value && math.Abs(perQ-c.hiA) <= c.opt.Band*c.hiA
			c.hi, c.hiA = c.value, perQ
		}
	} else if c.lo < 0 || c.value >= c.lo {
		c.lo, c.loA = c.value, perQ
	}
	if c.hi >= 0 && c.lo >= c.hi { // stale bracket (noise): keep the newer side
		if c.value == c.hi {
			c.lo = -1
		} else {
			c.hi = -1
		}
	}
}

// next is the value to try: regula falsi inside the bracket, else a proportional step
// (or the unit's guess from an unthrottled reading), at least one grid step from the
// known side and strictly inside the bracket.
func (c *Controller) next() int {
	r := c.req
	var v float64
	switch {
	case c.lo >= 0 && c.hi >= 0:
		if c.hi-c.lo <= c.gr {
			return c.hi
		}
		// proportional from the throttled side (exact when bandwidth is linear in the
		// value), regula falsi when that leaves the bracket
		v = float64(c.lo) * r / math.Max(c.loA, 1e-9)
		if v <= float64(c.lo) || v >= float64(c.hi) {
			v = float64(c.lo) + (r-c.loA)*float64(c.hi-c.lo)/math.Max(c.hiA-c.loA, 1e-9)
		}
	case c.hi >= 0:
		if c.hi == c.max {
			// from the unthrottled setting to the floor: the search then climbs from below,
			// so a cap never lets more through than asked while it is being found (the
			// overshoot of intel-cmt-cat issue 285)
			return c.min
		}
		if c.flat {
			v = float64(c.min+c.hi) / 2 // bisect toward the floor while the value does not bind
		} else {
			v = float64(c.hi) * r / math.Max(c.hiA, 1e-9)
		}
	case c.lo >= 0:
		v = float64(c.lo) * r / math.Max(c.loA, 1e-9)
	default:
		return c.value
	}
	n := c.clamp(int(math.Ceil(v)))
	if c.lo >= 0 && n <= c.lo {
		n = c.clamp(c.lo + c.gr)
	}
	if c.hi >= 0 && n >= c.hi {
		n = c.hi - c.gr
		if c.lo >= 0 && n <= c.lo {
			n = c.hi
		}
		n = c.clamp(max(n, c.min))
	}
	return n
}

// Split divides a request of total MB/s over L3 domains (AMD CCDs, where MBA is a per-
// domain cap) by water filling on each domain's demand (its unthrottled bandwidth): every
// domain gets min(demand, level), the level chosen so that the shares add up to total
// (max-min fairness; a domain that wants less than its fair share leaves the rest to the
// others). When the demands add up to less than total, each gets its demand plus an equal
// part of the excess. dst is reused when it has room; nothing else is allocated.
//
//	share_d = min(demand_d, L),  Σ_d share_d = total
func Split(dst []float64, total float64, demand []float64) []float64 {
	n := len(demand)
	if cap(dst) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	if n == 0 {
		return dst
	}
	sum := 0.0
	for _, x := range demand {
		sum += math.Max(x, 0)
	}
	if sum <= total {
		extra := (total - sum) / float64(n)
		for i, x := range demand {
			dst[i] = math.Max(x, 0) + extra
		}
		return dst
	}
	// the level: raise it past each demand in ascending order (n is small; O(n²) without
	// sorting or allocating).
	left, k := total, n
	done := 0
	for i := range dst {
		dst[i] = -1
	}
	for done < n {
		level := left / float64(k)
		progressed := false
		for i, x := range demand {
			if dst[i] < 0 && math.Max(x, 0) <= level {
				dst[i] = math.Max(x, 0)
				left -= dst[i]
				k--
				done++
				progressed = true
			}
		}
		if !progressed {
			for i := range dst {
				if dst[i] < 0 {
					dst[i] = level
				}
			}
			break
		}
	}
	return dst
}
