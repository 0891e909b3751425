package report

import (
	"math"
	"strings"
	"testing"

	"colo/bench"
	"colo/metric"
)

// The intervals page draws one dot and one whisker per scheduler and metric, says "no
// values" for a metric no seed produced, marks significant differences, and is the same
// bytes for the same report.
func TestWriteIntervals(t *testing.T) {
	nan := math.NaN()
	r := &bench.RepeatReport{Benchmark: "b<x>", Repeat: 3, NoiseSeeds: []uint64{0, 1, 2}, Noise: 0.01, Test: bench.TestName,
		Metrics: []string{"stp", "priority_ipce"},
		Schedulers: []bench.RepeatSched{
			{Name: "shared", Metrics: map[string]metric.Interval{"stp": metric.MeanCI([]float64{3.1, 3.2, 3.3}), "priority_ipce": metric.MeanCI([]float64{nan, nan, nan})}},
			{Name: "vp", Metrics: map[string]metric.Interval{"stp": metric.MeanCI([]float64{3.6, 3.7, 3.8}), "priority_ipce": metric.MeanCI(nil)}},
		},
		Diffs: []bench.RepeatDiff{{Name: "vp", Baseline: "shared", Metrics: map[string]metric.PairedTest{
			"stp": metric.PairedTTest([]float64{3.1, 3.2, 3.3}, []float64{3.6, 3.75, 3.8}), "priority_ipce": metric.PairedTTest(nil, nil)}}},
	}
	var a, b strings.Builder
	if err := WriteIntervals(&a, r); err != nil {
		t.Fatal(err)
	}
	WriteIntervals(&b, r)
	if a.String() != b.String() {
		t.Fatal("not deterministic")
	}
	s := a.String()
	for _, want := range []string{"<h1>b&lt;x&gt;</h1>", "<h2>stp</h2>", "<p>no values</p>", `<tr class="sig"><td>vp − shared</td><td>stp</td>`} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(s, "<circle"); n != 2 {
		t.Errorf("%d dots, want 2 (stp for each scheduler)", n)
	}
	if n := strings.Count(s, "<title>95 % CI ["); n != 2 {
		t.Errorf("%d whiskers, want 2", n)
	}
}
