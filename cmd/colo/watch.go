package main

import (
	"fmt"
	"io"
	"math"
	"time"

	"colo/bench"
	"colo/internal/progress"
)

// runWatch turns bench's hooks into what a user sees while a benchmark runs: one progress
// bar per run (in the run's time, virtual on sim, until max_t; in finished jobs when the
// benchmark has no max_t) and, with interval > 0, `perf stat -I`-style metric lines on
// stderr. Only the run's own goroutine calls the hooks.
type runWatch struct {
	bar    *progress.Bar
	label  string
	header bool
}

func (w *runWatch) hooks(interval time.Duration) bench.Hooks {
	h := bench.Hooks{Progress: w.step}
	if interval > 0 {
		h.Interval, h.OnInterval = interval, w.line
	}
	return h
}

func (w *runWatch) step(s bench.Step) {
	if w.bar == nil || w.label != s.Label {
		w.bar.Done()
		w.label = s.Label
		if s.End > 0 {
			w.bar = progress.Start(int64(s.End/time.Second), s.Label, progress.Unit("s"))
		} else {
			w.bar = progress.Start(int64(s.Jobs), s.Label, progress.Unit("jobs"))
		}
	}
	if s.End > 0 {
		w.bar.Set(int64(min(s.Now, s.End) / time.Second))
	} else {
		w.bar.Set(int64(s.Finished))
	}
	if s.Final {
		w.bar.Done()
		w.bar, w.label = nil, ""
	}
}

// line prints one interval: its end on the run's clock, the scheduler, the jobs running,
// queued and finished, then the interval's aggregate IPC, IPCE, LLC misses/s, memory
// bandwidth and the ways held by exclusive allocations ("-": nothing sampled).
func (w *runWatch) line(s bench.IntervalStats) {
	if !w.header {
		w.header = true
		progress.Println(fmt.Sprintf("#%11s  %-14s %5s %5s %5s %7s %7s %12s %10s %5s",
			"time", "scheduler", "run", "queue", "done", "IPC", "IPCE", "LLC-miss/s", "mem-MB/s", "ways"))
	}
	num := func(f string, x float64) string {
		if math.IsNaN(x) {
			return "-"
		}
		return fmt.Sprintf(f, x)
	}
	progress.Println(fmt.Sprintf("%12.3f  %-14s %5d %5d %5d %7s %7s %12s %10s %5d",
		s.End.Seconds(), s.Scheduler, s.Running, s.Queued, s.Finished,
		num("%.3f", s.IPC), num("%.1f%%", 100*s.IPCE), num("%.4g", s.LLCMissPerSec), num("%.1f", s.MemMBps), s.WaysAllocated))
}

// profileBar is `colo predict profile`'s bar: one step per application's sensitivity
// curve, one for training the reporter when the data directory has none yet, one for the
// contentiousness measurements (score).
func profileBar(train bool, apps int, score bool) *progress.Bar {
	n := apps
	if train {
		n++
	}
	if score {
		n++
	}
	return progress.Start(int64(n), "predict profile", progress.Unit("steps"))
}

// searchProgress is the Reporter of partition's exact searches for --progress MODE: auto
// is the command's (bars on a terminal, none with --quiet), on draws even on a pipe, off
// draws nothing.
func searchProgress(mode string, stderr io.Writer) (*progress.Reporter, error) {
	switch mode {
	case "auto":
		return progress.Default(), nil
	case "on":
		return progress.Force(stderr), nil
	case "off":
		return nil, nil
	}
	return nil, badInputf("--progress %q: want auto, on or off", mode)
}

// plannedBar draws a bar over the planned length of a step that reports no progress of its
// own (a sensitivity probe on Linux: warm-up plus six segments, plus container starts the
// plan cannot know): the elapsed time against the plan, held below 100 % until stop.
func plannedBar(label string, planned time.Duration) (stop func()) {
	total := int64(math.Ceil(planned.Seconds()))
	bar := progress.Start(max(total, 1), label, progress.Unit("s"))
	if bar == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t0 := time.Now()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				bar.Set(min(int64(time.Since(t0)/time.Second), total-1))
			}
		}
	}()
	return func() { close(done); <-finished; bar.Done() }
}
