package sim

import (
	"runtime"
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
	cpu := benchcpu.Start()
	for i := 0; i < b.N; i++ {
		m.Step(100 * time.Millisecond)
	}
	cpu.Report(b)
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

// BenchmarkFleetHour advances 1000 icx-4314-2s twins (six workloads each: two priority
// buffers in their own ways, matrix, tree-search and CPU-loop batch jobs sharing the rest,
// sizes varying by node) through one hour of virtual time at 1 s ticks with StepAll on
// GOMAXPROCS workers: the twin behind a 1000-node cluster. One workload per node is
// replaced every 5 virtual minutes (churn).
func BenchmarkFleetHour(b *testing.B) {
	const nodes = 1000
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for i := 0; i < b.N; i++ {
		ms := make([]*Machine, nodes)
		for n := range ms {
			m := icx(b, Options{Seed: uint64(n), Noise: 0.01})
			must(b, m.SetCLOS(1, []uint64{0x00f, 0x00f}, []int{100, 100}))
			must(b, m.SetCLOS(2, []uint64{0xff0, 0xff0}, []int{100, 100}))
			k := int64(n % 7)
			for _, j := range []struct {
				w    Workload
				core int
				clos int
			}{
				{Neighbor((2+k)<<20, Page1G), 0, 1}, {Neighbor((3+k)<<20, Page1G), 16, 1},
				{StressMatrix3D(96 + 16*int(k)), 1, 2}, {StressTsearch(1 << (15 + k)), 17, 2},
				{CPULoop(), 2, 2}, {StressMatrix3D(128), 18, 2},
			} {
				id := add(b, m, j.w, j.core)
				must(b, m.Assign(id, j.clos))
			}
			ms[n] = m
		}
		var out [][]Counters
		for s := 0; s < 3600; s++ {
			if s%300 == 299 { // churn: the job on core 2 ends, a new matrix job takes its core
				for n, m := range ms {
					must(b, m.RemoveWorkload(m.coreOwner[2].id))
					id := add(b, m, StressMatrix3D(64+8*((n+s)%9)), 2)
					must(b, m.Assign(id, 2))
				}
			}
			out = StepAll(ms, time.Second, runtime.GOMAXPROCS(0), out)
		}
	}
	b.ReportMetric(3600e9*nodes/cpu.Report(b), "node-x-realtime-cpu")
	b.ReportMetric(3600*nodes*float64(b.N)/b.Elapsed().Seconds(), "node-x-realtime-wall")
}
