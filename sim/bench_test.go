package sim

import (
	"testing"
	"time"

	"colo/internal/benchcpu"
)

// BenchmarkStep32 is one 100 ms tick of 32 workloads (the thesis job pool) on the two
// sockets of icx-4314-2s, with overlapping masks, MBA and the stalls bus model.
func BenchmarkStep32(b *testing.B) {
	m := icx(b, Options{Seed: 1, Noise: 0.01})
	pool32(b, m)
	m.Step(100 * time.Millisecond)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Step(100 * time.Millisecond)
	}
}

// BenchmarkHour32 is one hour of virtual time at 100 ms ticks with the same 32 workloads;
// it reports how many times faster than real time the simulation runs, per wall second
// and per CPU second (the figure that holds on a loaded machine).
func BenchmarkHour32(b *testing.B) {
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for i := 0; i < b.N; i++ {
		m := icx(b, Options{Seed: 1, Noise: 0.01})
		pool32(b, m)
		for m.Now() < time.Hour {
			m.Step(100 * time.Millisecond)
		}
	}
	perHour := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(3600/perHour, "x-realtime")
	b.ReportMetric(3600e9/cpu.Report(b), "x-realtime-cpu")
}
