package bench

import (
	"math"
	"math/bits"
	"time"

	"colo/metric"
	"colo/sched"
)

// Hooks let the command line watch a run while it goes (progress bars, `colo run
// --interval` lines) without the runner doing any I/O: both are called from the run's
// loop, on the run's clock (virtual time on sim, wall time on linux).
type Hooks struct {
	// Progress, when set, is called after every turn of the loop and once more, with
	// Final set, when the run ends.
	Progress func(Step)
	// Interval > 0 calls OnInterval every Interval of the run's time with the metrics of
	// the interval just ended (perf stat -I).
	Interval   time.Duration
	OnInterval func(IntervalStats)
}

// Step is where a run stands.
type Step struct {
	Label    string        // the scheduler's name (the comparer labels its run-alone runs)
	Now      time.Duration // the run's time
	End      time.Duration // max_t; 0: the run ends when the trace drains
	Jobs     int           // jobs in the trace
	Finished int           // jobs no longer queued nor running (completed, rejected, expired)
	Running  int
	Queued   int
	Final    bool // the run ended
}

// IntervalStats are one interval's metrics over every job sampled in it. IPC, IPCE and
// the rates are aggregates (sums of the counters' deltas over the interval, then the
// formula of package metric), NaN when no job was sampled.
type IntervalStats struct {
	Scheduler     string
	Start, End    time.Duration
	Running       int
	Queued        int
	Finished      int
	Samples       int
	IPC           float64 // metric.IPC(Σ instructions, Σ cycles)
	IPCE          float64 // metric.IPCE(Σ stalls, Σ cycles), a fraction
	LLCMissPerSec float64 // Σ LLC misses / interval
	MemMBps       float64 // Σ mbm_total bytes / interval / 10^6
	WaysAllocated int     // ways in the running jobs' exclusive allocations at the interval's end
}

// observer accumulates one run's interval counters and calls the hooks.
type observer struct {
	h                          Hooks
	label                      string
	next, start                time.Duration
	instr, cycles, stalls, llc float64
	mem                        float64
	samples                    int
}

func newObserver(h Hooks, label string) *observer {
	return &observer{h: h, label: label, next: h.Interval}
}

// sample adds one collector sample to the current interval.
func (o *observer) sample(d sched.Sample, memBytes float64) {
	if o == nil || o.h.OnInterval == nil {
		return
	}
	o.instr += d.Instructions
	o.cycles += d.Cycles
	o.stalls += d.StallsTotal
	o.llc += d.LLCMisses
	o.mem += memBytes
	o.samples++
}

// step reports the run's state and closes every interval that ended by now.
func (o *observer) step(r *runner, now time.Duration, final bool) {
	if o == nil {
		return
	}
	finished := 0
	for _, j := range r.jobs {
		switch j.state {
		case StateCompleted, StateRejected, StateExpired, StateKilled, StateNotStarted:
			finished++
		}
	}
	if o.h.OnInterval != nil && o.h.Interval > 0 && (now >= o.next || final && now > o.start) {
		ways := 0
		for _, j := range r.live {
			ways += bits.OnesCount64(j.reserved)
		}
		secs := (now - o.start).Seconds()
		st := IntervalStats{Scheduler: o.label, Start: o.start, End: now, Running: len(r.live), Queued: len(r.queue),
			Finished: finished, Samples: o.samples, IPC: math.NaN(), IPCE: math.NaN(), LLCMissPerSec: math.NaN(),
			MemMBps: math.NaN(), WaysAllocated: ways}
		if o.samples > 0 && secs > 0 {
			st.IPC = metric.IPC(o.instr, o.cycles)
			st.IPCE = metric.IPCE(o.stalls, o.cycles)
			st.LLCMissPerSec = o.llc / secs
			st.MemMBps = o.mem / 1e6 / secs
		}
		o.h.OnInterval(st)
		o.instr, o.cycles, o.stalls, o.llc, o.mem, o.samples = 0, 0, 0, 0, 0, 0
		o.start = now
		for o.next <= now {
			o.next += o.h.Interval
		}
	}
	if o.h.Progress != nil {
		o.h.Progress(Step{Label: o.label, Now: now, End: r.bm.MaxT, Jobs: len(r.jobs), Finished: finished,
			Running: len(r.live), Queued: len(r.queue), Final: final})
	}
}

// labelled returns h with every Step and IntervalStats labelled name (when the first
// labelling is the one wanted, later ones keep it: RunSchedulerHooks inside Comparer).
func (h Hooks) labelled(name string) Hooks {
	if p := h.Progress; p != nil {
		h.Progress = func(s Step) { s.Label = name; p(s) }
	}
	if f := h.OnInterval; f != nil {
		h.OnInterval = func(s IntervalStats) { s.Scheduler = name; f(s) }
	}
	return h
}

// tee records into both recorders (the comparer's IPC sums and a run directory).
type tee struct{ a, b Recorder }

func (t tee) Job(r JobRecord) error               { return first(t.a.Job(r), t.b.Job(r)) }
func (t tee) Sample(r SampleRecord) error         { return first(t.a.Sample(r), t.b.Sample(r)) }
func (t tee) Allocation(r AllocationRecord) error { return first(t.a.Allocation(r), t.b.Allocation(r)) }
func (t tee) Event(r EventRecord) error           { return first(t.a.Event(r), t.b.Event(r)) }
func (t tee) Probe(r ProbeRecord) error           { return first(t.a.Probe(r), t.b.Probe(r)) }

func first(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
