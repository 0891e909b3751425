// Package benchcpu reports a benchmark's CPU time (user + system, the whole process) next to
// its wall time. On a loaded machine wall time measures the queue for a core as much as the
// work; the CPU time a run consumed is the figure that stays comparable.
package benchcpu

import (
	"syscall"
	"testing"
	"time"
)

// Used is the CPU time (user + system) this process has consumed so far.
func Used() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Timer measures the CPU time of a benchmark's timed loop: Start after the set-up, Report
// at the end adds the metric "cpu-ns/op" (process CPU time per iteration, every goroutine).
type Timer struct{ start time.Duration }

// Start begins the measurement (call it next to b.ResetTimer).
func Start() Timer { return Timer{start: Used()} }

// Report adds cpu-ns/op to b's results and returns it.
func (t Timer) Report(b *testing.B) float64 {
	if b.N <= 0 {
		return 0
	}
	ns := float64(Used()-t.start) / float64(b.N)
	b.ReportMetric(ns, "cpu-ns/op")
	return ns
}
