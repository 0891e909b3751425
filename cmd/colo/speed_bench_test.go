package main

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"colo/internal/benchcpu"
)

// BenchmarkThesisCompare is README's first command, in process: one hour of the
// high-utilization trace under least-loaded and dynamic on the twin, run directory written.
// x-realtime is the virtual time simulated (2 h) over the CPU time used.
func BenchmarkThesisCompare(b *testing.B) {
	dir := b.TempDir()
	cpu := benchcpu.Start()
	for i := 0; i < b.N; i++ {
		out := filepath.Join(dir, fmt.Sprint("r", i))
		if err := execColo(io.Discard, io.Discard, "run", "../../examples/thesis/high-utilization.yaml",
			"--compare", "least-loaded,dynamic", "--out", out, "-q"); err != nil {
			b.Fatal(err)
		}
	}
	ns := cpu.Report(b)
	b.ReportMetric(2*3600e9/ns, "x-realtime-cpu")
	b.ReportMetric(2*3600e9*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "x-realtime-wall")
}
