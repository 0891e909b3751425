package dcat

import (
	"math"
	"math/bits"
	"testing"
	"time"

	"colo/cbm"
)

// app is a test workload model: IPC and LLC miss rate as functions of its ways, loads and
// LLC references per instruction. A nil ipc means idle (no instruction retired).
type app struct {
	ipc      func(ways int) float64
	miss     func(ways int) float64
	loadsPI  float64
	refsPI   float64
	idleSpin bool // retires instructions but makes no LLC reference (lookbusy)
}

const hz = 2e9

func (a app) sample(id string, ways int, dt float64) Sample {
	cycles := hz * dt
	if a.ipc == nil {
		return Sample{ID: id, Cycles: 0}
	}
	if a.idleSpin {
		instr := 1.0 * cycles
		return Sample{ID: id, Instructions: instr, Cycles: cycles, Loads: 0.05 * instr}
	}
	instr := a.ipc(ways) * cycles
	refs := a.refsPI * instr
	return Sample{ID: id, Instructions: instr, Cycles: cycles, Loads: a.loadsPI * instr,
		LLCRefs: refs, LLCMisses: refs * a.miss(ways)}
}

// table turns a ways->normalised IPC map into a step IPC function: the entry of the largest
// key ≤ ways (the smallest key below it).
func table(base float64, t map[int]float64) func(int) float64 {
	return func(w int) float64 {
		k, lo := -1, 1<<30
		for x := range t {
			lo = min(lo, x)
			if x <= w && x > k {
				k = x
			}
		}
		if k < 0 {
			k = lo
		}
		return base * t[k]
	}
}

func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

// mlr models a random-read working set of wsMB on ways of mbPerWay: the hit rate is the
// effective capacity (a fraction eff of the allotted bytes, conflict misses: seed003.md §3.2)
// over the working set, and CPI = cpi0 + apki/1000 · (1 − hit) · penalty.
func mlr(wsMB, mbPerWay, eff float64) app {
	hit := func(w int) float64 { return math.Min(1, eff*float64(w)*mbPerWay/wsMB) }
	return app{
		ipc:     func(w int) float64 { return 1 / (0.5 + 0.2*(1-hit(w))*200) },
		miss:    func(w int) float64 { return 1 - hit(w) },
		loadsPI: 0.4, refsPI: 0.2,
	}
}

// mload models a sequential sweep of a working set far larger than the cache: no reuse.
func mload() app {
	return app{ipc: constant(0.3), miss: constant(0.95), loadsPI: 0.5, refsPI: 0.15}
}

// rig drives a controller with the models every period and records the decisions.
type rig struct {
	t    *testing.T
	c    *Controller
	apps map[string]app
	ways map[string]int
	now  time.Duration
	log  []Decision
}

func newRig(t *testing.T, opt Options) *rig {
	t.Helper()
	c, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, c: c, apps: map[string]app{}, ways: map[string]int{}}
}

func (r *rig) add(id string, baseline int, a app) {
	r.t.Helper()
	if err := r.c.Add(id, baseline); err != nil {
		r.t.Fatal(err)
	}
	r.apps[id] = a
	r.apply(r.step(nil))
}

func (r *rig) step(samples []Sample) (Decision, bool) {
	r.t.Helper()
	return step(r.t, r.c, r.now, samples)
}

// step is c.Step(now, samples), failing the test on an error.
func step(t *testing.T, c *Controller, now time.Duration, samples []Sample) (Decision, bool) {
	t.Helper()
	d, ok, err := c.Step(now, samples)
	if err != nil {
		t.Fatal(err)
	}
	return d, ok
}

func (r *rig) apply(d Decision, ok bool) {
	r.t.Helper()
	if !ok {
		return
	}
	checkMasks(r.t, d, r.c.opt)
	r.ways = map[string]int{}
	for _, a := range d.Allocs {
		r.ways[a.ID] = a.Ways
	}
	r.log = append(r.log, d)
}

// period advances one control period, feeding every workload's counters at its current ways.
func (r *rig) period() Decision {
	r.t.Helper()
	p := r.c.opt.Period
	r.now += p
	var ss []Sample
	for _, id := range r.c.ids {
		ss = append(ss, r.apps[id].sample(id, r.ways[id], p.Seconds()))
	}
	d, ok := r.step(ss)
	if !ok {
		r.t.Fatalf("no decision after a full period at %v", r.now)
	}
	r.apply(d, ok)
	return d
}

func (r *rig) state(id string) State {
	s, _ := r.c.State(id)
	return s
}

// checkMasks asserts the invariants of every decision: masks contiguous (unless sparse),
// disjoint, inside the tenant ways, of the decided size, at least MinWays.
func checkMasks(t *testing.T, d Decision, o Options) {
	t.Helper()
	var union uint64
	tenant := uint64(cbm.Full(o.Ways)) &^ uint64(cbm.Run(o.Ways-o.HostWays, o.HostWays))
	if o.HostWays == 0 {
		tenant = uint64(cbm.Full(o.Ways))
	}
	for _, a := range d.Allocs {
		if bits.OnesCount64(a.Mask) != a.Ways || a.Ways < o.MinWays {
			t.Fatalf("%s: mask %#x has %d bits, decided %d ways (min %d)", a.ID, a.Mask, bits.OnesCount64(a.Mask), a.Ways, o.MinWays)
		}
		if a.Mask&union != 0 {
			t.Fatalf("%s: mask %#x overlaps another (%#x)", a.ID, a.Mask, union)
		}
		if a.Mask&^tenant != 0 {
			t.Fatalf("%s: mask %#x outside the tenant ways %#x", a.ID, a.Mask, tenant)
		}
		if !o.Sparse {
			lo := bits.TrailingZeros64(a.Mask)
			if a.Mask != uint64(cbm.Run(lo, a.Ways)) {
				t.Fatalf("%s: mask %#x is not contiguous", a.ID, a.Mask)
			}
		}
		union |= a.Mask
	}
}
