package stress

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Report is one throughput line of a running load. Final reports cover the whole run;
// periodic ones cover the last window. Keys are stable (harnesses parse them).
type Report struct {
	Kind    string  `json:"kind"`
	Final   bool    `json:"final"`
	Workers int     `json:"workers"`
	MB      float64 `json:"mb"`        // working set actually touched, MB (10^6 bytes)
	Elapsed float64 `json:"elapsed_s"` // since the load started
	Window  float64 `json:"window_s"`  // the span Rate is measured over
	Work    float64 `json:"work"`      // total work done so far, in Unit
	Unit    string  `json:"unit"`
	Rate    float64 `json:"rate"` // Unit per second over the window
	// CPU is the process's CPU seconds since the load started and CPURate the work per CPU
	// second (final reports only): unlike Rate it does not drop when other processes
	// time-share the CPU, but it does when memory stalls the load.
	CPU     float64 `json:"cpu_s,omitempty"`
	CPURate float64 `json:"cpu_rate,omitempty"`
}

type counter struct {
	n atomic.Int64
	_ [56]byte // keep counters on separate cache lines
}

// Run drives every worker of l on its own locked OS thread until ctx is done, calling emit
// every interval (if > 0) with the window's rate, and returns the final report. now is the
// clock (time.Now for real runs). A load without workers (the SoI at dial 0) just waits.
func Run(ctx context.Context, l *Load, interval time.Duration, now func() time.Time, emit func(Report)) Report {
	counters := make([]counter, len(l.workers))
	l.running.Store(&counters)
	var stop atomic.Bool
	var wg sync.WaitGroup
	start, cpu0 := now(), ProcessCPUSeconds()
	for i, w := range l.workers {
		wg.Add(1)
		go func(w worker, c *counter) {
			defer wg.Done()
			runtime.LockOSThread()
			if len(l.cpus) > 0 {
				// Pinned: stay locked so the thread (and its affinity) dies with the goroutine.
				_ = PinThread(l.cpus) // validated in New
			} else {
				defer runtime.UnlockOSThread()
			}
			for !stop.Load() {
				c.n.Add(w.step())
			}
		}(w, &counters[i])
	}
	total := l.Work
	rep := func(final bool, t time.Time, work, prevWork float64, prevT time.Time) Report {
		win := t.Sub(prevT).Seconds()
		r := Report{Kind: l.Kind, Final: final, Workers: len(l.workers), MB: float64(l.Touched) / MB,
			Elapsed: t.Sub(start).Seconds(), Window: win, Work: work, Unit: l.Unit}
		if win > 0 {
			r.Rate = (work - prevWork) / win
		}
		return r
	}
	var tick <-chan time.Time
	if interval > 0 && emit != nil {
		tk := time.NewTicker(interval)
		defer tk.Stop()
		tick = tk.C
	}
	lastT, lastW := start, 0.0
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick:
			t, w := now(), total()
			emit(rep(false, t, w, lastW, lastT))
			lastT, lastW = t, w
		}
	}
	stop.Store(true)
	wg.Wait()
	r := rep(true, now(), total(), 0, start)
	if cpu := ProcessCPUSeconds() - cpu0; cpu > 0 {
		r.CPU = cpu
		r.CPURate = r.Work / cpu
	}
	return r
}
