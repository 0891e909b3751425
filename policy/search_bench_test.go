package policy

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

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

// BenchmarkOptc is the scaling table of the exact clustering search (docs/partition.md,
// scripts/partition-scaling.sh): the first n applications of benchNames × bandwidth model
// (none; simple and stalls at 35,000 MB/s) × objective, 2 workers, with the proven gap
// and the node count. COLO_OPTC_APPS (e.g. "8,12") restricts the sizes;
// COLO_OPTC_LIMIT (a duration, default 10m) is the search's time limit.
//
//	go test -run XXX -bench Optc -benchtime 1x ./policy
func BenchmarkOptc(b *testing.B) {
	sizes := []int{8, 12, 16, 20}
	if v := os.Getenv("COLO_OPTC_APPS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	limit := 10 * time.Minute
	if v := os.Getenv("COLO_OPTC_LIMIT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		limit = d
	}
	models := []perfmodel.Options{{BW: perfmodel.None}, {BW: perfmodel.Simple, MaxBW: 35000}, {BW: perfmodel.Stalls, MaxBW: 35000}}
	for _, n := range sizes {
		for _, m := range models {
			if n > 16 && m.BW != perfmodel.None {
				continue // tables of several pressure levels: out of reach beyond 16 here
			}
			for _, o := range []struct {
				name string
				obj  Objective
			}{{"stp", MaxSTP}, {"unf", MinUnf}} {
				b.Run(fmt.Sprintf("model=%s/apps=%d/%s", m.BW, n, o.name), func(b *testing.B) {
					in := benchInput(b, n)
					in.Model = m
					var s *Solution
					var err error
					for i := 0; i < b.N; i++ {
						if s, err = Search(in, o.obj, Options{Jobs: 2, TimeLimit: limit}); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(s.Nodes), "nodes")
					b.ReportMetric(100*s.Gap, "gap%")
				})
			}
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
