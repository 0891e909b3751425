package policy

import (
	"fmt"
	"testing"

	"colo/perfmodel"
	"colo/profile"
)

// benchNames is a fixed 20-application mix of the data set: sensitive, streaming and
// light-sharing applications; the benchmarks use its first n.
var benchNames = []string{"xalancbmk06", "lbm06", "omnetpp06", "povray06", "soplex06", "milc06", "mcf06", "gamess06",
	"sphinx306", "libquantum06", "astar06", "bzip206", "gcc06", "applu00", "art00", "namd06", "vpr00", "GemsFDTD06",
	"cactusADM06", "hmmer06"}

func benchInput(b *testing.B, n int) Input {
	set, err := profile.Default()
	if err != nil {
		b.Fatal(err)
	}
	apps, err := set.Lookup(benchNames[:n])
	if err != nil {
		b.Fatal(err)
	}
	return Input{Machine: skx(b), Apps: apps}
}

// BenchmarkOptc measures the exact clustering search (no bandwidth model) for 6–20
// applications: go test -bench Optc -benchtime 1x ./policy
func BenchmarkOptc(b *testing.B) {
	for _, n := range []int{6, 8, 12, 16, 20} {
		for _, o := range []struct {
			name string
			obj  Objective
		}{{"stp", MaxSTP}, {"unf", MinUnf}} {
			b.Run(fmt.Sprintf("%s/n=%d", o.name, n), func(b *testing.B) {
				if n > 16 && testing.Short() {
					b.Skip("long")
				}
				in := benchInput(b, n)
				var nodes int64
				for i := 0; i < b.N; i++ {
					s, err := Search(in, o.obj, Options{Jobs: 2})
					if err != nil {
						b.Fatal(err)
					}
					nodes = s.Nodes
				}
				b.ReportMetric(float64(nodes), "nodes")
			})
		}
	}
}

// BenchmarkOptcStalls is the exact search with the stalls bandwidth model at 35,000 MB/s
// (the README example's model), 6–16 applications.
func BenchmarkOptcStalls(b *testing.B) {
	for _, n := range []int{6, 8, 10, 12, 14, 16} {
		for _, o := range []struct {
			name string
			obj  Objective
		}{{"stp", MaxSTP}, {"unf", MinUnf}} {
			b.Run(fmt.Sprintf("%s/n=%d", o.name, n), func(b *testing.B) {
				in := benchInput(b, n)
				in.Model = perfmodel.Options{BW: perfmodel.Stalls, MaxBW: 35000}
				var nodes int64
				for i := 0; i < b.N; i++ {
					s, err := Search(in, o.obj, Options{Jobs: 2})
					if err != nil {
						b.Fatal(err)
					}
					nodes = s.Nodes
				}
				b.ReportMetric(float64(nodes), "nodes")
			})
		}
	}
}

// BenchmarkLFOCPlus20 is the online LFOC+ decision for 20 applications (kernel: 7.17 µs):
// the planner the controller keeps, its pair curves cached since the last re-sampling.
func BenchmarkLFOCPlus20(b *testing.B) {
	in := benchInput(b, 20)
	cls := ClassifyAll(in.Apps, PaperThresholds())
	cv := CurvesOf(in.Apps)
	var p LFOCPlanner
	if _, err := p.Plan(true, cls, cv, 11, DefaultLFOCParams()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Plan(true, cls, cv, 11, DefaultLFOCParams()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLFOCPlus20Cold is the same decision from scratch (policy.LFOCPlus: nothing cached).
func BenchmarkLFOCPlus20Cold(b *testing.B) {
	in := benchInput(b, 20)
	cls := ClassifyAll(in.Apps, PaperThresholds())
	cv := CurvesOf(in.Apps)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := LFOCPlus(cls, cv, 11, DefaultLFOCParams()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKPart11 is KPart on 11 applications (KPart's code: 4.14 ms).
func BenchmarkKPart11(b *testing.B) {
	in := benchInput(b, 11)
	for i := 0; i < b.N; i++ {
		if _, err := KPart(in, DefaultOptions()); err != nil {
			b.Fatal(err)
		}
	}
}
