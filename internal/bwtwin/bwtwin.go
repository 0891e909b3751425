// Package bwtwin is a test double behind the resctrl emulator's monitoring files: tasks
// whose memory traffic follows the MB value of their group, so that a loop that writes MB
// through resctrl (policy/mbps, the guard) sees mbm_total_bytes respond to its own writes.
//
// A task demands Demand MB/s; its group's MB value caps it at Ceiling(value) MB/s:
//
//	traffic per Tick = min(Demand, Ceiling(MB)) · dt
//
// Ceiling follows the unit of the mount (Rule): Intel percentages of a peak (optionally
// through a curve, sim.UnderThrottleMBACurve's shape), AMD's 1/8 GB/s (value · 125 MB/s,
// the maximum unlimited), an mba_MBps mount's MB/s. The harness tells the twin each
// group's current MB value (SetValue, read through the resctrl client outside the
// emulator's lock) and the period (Advance) before emu.Emulator.Tick.
package bwtwin

import (
	"math"
	"sync"

	"colo/machine"
	"colo/resctrl/emu"
)

// Rule is the ceiling of an MB value in MB/s for one task.
type Rule func(value int) float64

// RuleFor is the ceiling rule of a mount's MB unit: percent of peakMBps (through curve,
// fractions at Min + k·Gran, when given; 100 % unlimited), AMD 1/8 GB/s (max unlimited),
// mba_MBps (the value).
func RuleFor(mb machine.MBA, peakMBps float64, curve []float64) Rule {
	return func(v int) float64 {
		switch mb.Unit {
		case machine.MBAPercent:
			if v >= mb.Max {
				return math.Inf(1)
			}
			if len(curve) > 0 {
				k := (v - mb.Min) / max(mb.Gran, 1)
				k = min(max(k, 0), len(curve)-1)
				return curve[k] * peakMBps
			}
			return float64(v) / 100 * peakMBps
		case machine.MBAEighthGBps:
			if v >= mb.Max {
				return math.Inf(1)
			}
			return float64(v) * 125
		}
		return float64(v)
	}
}

// Twin is the double. It is safe for concurrent use.
type Twin struct {
	mu    sync.Mutex
	rule  Rule
	dt    float64
	tasks map[int]*task
}

type task struct {
	demand float64
	value  int
	dom    int
	cum    float64
	rep    uint64
}

// New returns a twin with the ceiling rule.
func New(rule Rule) *Twin { return &Twin{rule: rule, tasks: map[int]*task{}} }

// SetTask adds or updates a task: its demand in MB/s and the L3 domain it runs on; its
// MB value starts unthrottled (math.MaxInt32).
func (t *Twin) SetTask(pid int, demandMBps float64, dom int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k, ok := t.tasks[pid]; ok {
		k.demand, k.dom = demandMBps, dom
		return
	}
	t.tasks[pid] = &task{demand: demandMBps, value: math.MaxInt32, dom: dom}
}

// SetValue tells the twin the MB value of the group pid is in (a pid it does not know is
// ignored).
func (t *Twin) SetValue(pid, value int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k, ok := t.tasks[pid]; ok {
		k.value = value
	}
}

// Advance sets the period the next Tick covers, in seconds.
func (t *Twin) Advance(seconds float64) {
	t.mu.Lock()
	t.dt = seconds
	t.mu.Unlock()
}

// Achieved is what a task gets now: min(demand, ceiling(value)) MB/s.
func (t *Twin) Achieved(pid int) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.tasks[pid]
	if !ok {
		return 0
	}
	return math.Min(k.demand, t.rule(k.value))
}

// Sample implements emu.Source.
func (t *Twin) Sample(pid, dom int) emu.Sample {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.tasks[pid]
	if !ok || dom != k.dom {
		return emu.Sample{CPU: -1}
	}
	k.cum += math.Min(k.demand, t.rule(k.value)) * 1e6 * t.dt
	n := uint64(k.cum)
	b := n - k.rep
	k.rep = n
	return emu.Sample{TotalBytes: b, LocalBytes: b, CPU: -1}
}
