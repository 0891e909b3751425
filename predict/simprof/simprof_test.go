package simprof

import (
	"fmt"
	"math"
	"testing"

	"colo/predict"
	"colo/sim"
)

func TestSimPipeline(t *testing.T) {
	r, err := NewRunner("icx-4314-2s", 1)
	if err != nil {
		t.Fatal(err)
	}
	dials := []float64{0, 8, 16, 24, 32, 48, 64, 96}
	apps := map[string]sim.Workload{}
	for _, n := range []string{"cpu", "neighbor:6M:1g", "mlr:8M", "mload:60M"} {
		w, err := sim.ParseWorkload(n, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		apps[n] = w
	}
	rows, err := r.ReporterCurve(dials)
	if err != nil {
		t.Fatal(err)
	}
	rep := predict.Curve{Name: "reporter"}
	for i, row := range rows {
		rep.Dials = append(rep.Dials, dials[i])
		rep.Perf = append(rep.Perf, row.Avg)
	}
	if rep.Perf[len(rep.Perf)-1] <= rep.Perf[0] {
		t.Fatalf("reporter does not slow down under the SoI: %v", rep.Perf)
	}
	curves, scores := map[string]predict.Curve{}, map[string]float64{}
	for n, w := range apps {
		c, err := r.SensitivityCurve(n, w, dials)
		if err != nil {
			t.Fatal(err)
		}
		curves[n] = c
		row, err := r.Contentiousness(n, w)
		if err != nil {
			t.Fatal(err)
		}
		scores[n] = predict.ScoreOf(rep, n, row.Avg, predict.MethodLinear).MB
		p96, _ := predict.Predict(c, 96, predict.MethodNearest)
		t.Logf("%-15s P(96 MB) %.3f  score %.1f MB", n, p96, scores[n])
	}
	p := func(n string) float64 { v, _ := predict.Predict(curves[n], 96, predict.MethodNearest); return v }
	if !(p("cpu") > 0.98 && p("neighbor:6M:1g") < 0.8) {
		t.Errorf("cpu should be insensitive (%.3f), neighbor sensitive (%.3f)", p("cpu"), p("neighbor:6M:1g"))
	}
	if !(scores["mload:60M"] > scores["cpu"]) || scores["cpu"] > 4 {
		t.Errorf("scores: mload %.1f should exceed cpu %.1f ≈ 0", scores["mload:60M"], scores["cpu"])
	}
	// Predicted vs measured co-runs, both directions, for every pair.
	var eps []float64
	for a := range apps {
		for c := range apps {
			if a == c {
				continue
			}
			pred, _ := predict.Predict(curves[a], scores[c], predict.MethodLinear)
			meas, err := r.CoRun(apps[a], apps[c])
			if err != nil {
				t.Fatal(err)
			}
			eps = append(eps, predict.PredictionError(pred, meas))
		}
	}
	s := predict.ErrorStats(eps, 0)
	t.Logf("sim validation: %+v", s)
	if s.N != 12 {
		t.Fatalf("n %d", s.N)
	}
}

// BenchmarkProfileOneApp is the time to profile one application on sim: 29 dials (the
// thesis's grid, 0–112 MB) of 3 s virtual time each.
func BenchmarkProfileOneApp(b *testing.B) {
	r, _ := NewRunner("icx-4314-2s", 1)
	w, _ := sim.ParseWorkload("neighbor:6M:1g", 1, nil)
	dials := make([]float64, 29)
	for i := range dials {
		dials[i] = float64(4 * i)
	}
	for b.Loop() {
		if _, err := r.SensitivityCurve("neighbor", w, dials); err != nil {
			b.Fatal(err)
		}
	}
}

// Beyond pairs on sim: an application next to two competitors, predicted with Govindan's
// reduction (sum of scores) and, for comparison, with the larger score alone.
func TestSimThreeWayReduction(t *testing.T) {
	r, _ := NewRunner("icx-4314-2s", 1)
	dials := make([]float64, 29)
	for i := range dials {
		dials[i] = float64(4 * i)
	}
	rows, err := r.ReporterCurve(dials)
	if err != nil {
		t.Fatal(err)
	}
	rep := predict.Curve{Name: "reporter", Dials: dials}
	for _, row := range rows {
		rep.Perf = append(rep.Perf, row.Avg)
	}
	names := []string{"neighbor:6M:1g", "mlr:8M", "mload:60M", "tsearch:131072", "matrix-3d:96"}
	ws, curves, scores := map[string]sim.Workload{}, map[string]predict.Curve{}, map[string]float64{}
	for _, n := range names {
		w, _ := sim.ParseWorkload(n, 1, nil)
		ws[n] = w
		if curves[n], err = r.SensitivityCurve(n, w, dials); err != nil {
			t.Fatal(err)
		}
		row, err := r.Contentiousness(n, w)
		if err != nil {
			t.Fatal(err)
		}
		scores[n] = predict.ScoreOf(rep, n, row.Avg, predict.MethodLinear).MB
	}
	var sumErr, maxErr []float64
	for _, a := range names {
		for i, b := range names {
			for _, c := range names[i+1:] {
				if a == b || a == c {
					continue
				}
				meas, err := r.CoRunMany(ws[a], []sim.Workload{ws[b], ws[c]})
				if err != nil {
					t.Fatal(err)
				}
				sum, _ := predict.CombineScores([]float64{scores[b], scores[c]}, 112)
				ps, _ := predict.Predict(curves[a], sum, predict.MethodLinear)
				pm, _ := predict.Predict(curves[a], max(scores[b], scores[c]), predict.MethodLinear)
				sumErr = append(sumErr, predict.PredictionError(ps, meas))
				maxErr = append(maxErr, predict.PredictionError(pm, meas))
			}
		}
	}
	s, m := predict.ErrorStats(sumErr, 0), predict.ErrorStats(maxErr, 0)
	t.Logf("3-way on sim, sum of scores: %+v", s)
	t.Logf("3-way on sim, max score:     %+v", m)
	if s.N != 30 || m.N != 30 {
		t.Fatalf("n %d", s.N)
	}
	if mb, note := predict.CombineScores([]float64{80, 60}, 112); mb != 112 || note == "" {
		t.Fatal("saturation")
	}
	if mb, note := predict.CombineScores([]float64{8, 4}, 112); mb != 12 || note != "" {
		t.Fatal("sum")
	}
}

// The accuracy table on sim: deterministic by seed; under disjoint partitions the
// prediction (per-ways curve × Bubble-Up at the overlapping pressure) is within 1 pp for
// every pair, since the simulator couples disjoint partitions only through bandwidth.
func TestAccuracyTable(t *testing.T) {
	names := []string{"cpu", "neighbor:12M", "mlr:8M", "mload:60M", "table:mcf06"}
	run := func() Accuracy {
		r, err := NewRunner("icx-4314-2s", 3)
		if err != nil {
			t.Fatal(err)
		}
		a, err := r.Accuracy(names, AccuracyDials, 6)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a, b := run(), run()
	if len(a.Pairs) != 20 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("%d pairs; same seed, different tables", len(a.Pairs))
	}
	if a.Partitioned.MeanAbs > 1 || math.Abs(a.Partitioned.Max) > 1 || math.Abs(a.Partitioned.Min) > 1 {
		t.Errorf("partitioned errors %+v", a.Partitioned)
	}
	t.Logf("unpartitioned %+v", a.Unpartitioned)
	for _, p := range a.Pairs {
		if p.App == "neighbor:12M" && p.PartMeasured > 0.9 {
			t.Errorf("neighbor:12M in 6 of 12 ways (12 MB) measured %.3f: it should lose its cache", p.PartMeasured)
		}
	}
	r, _ := NewRunner("icx-4314-2s", 3)
	if _, err := r.Accuracy(names, AccuracyDials, 12); err == nil {
		t.Error("a partition of every way accepted")
	}
}

// The reporter design matters on sim: a small random-access reporter (thesis Type 2, ¼ of
// the LLC) feels the low-rate random competitors the default alternating reporter
// (2 × LLC) misses, and predicts the unpartitioned pairs better.
func TestRandomReporterPredictsBetter(t *testing.T) {
	names := []string{"cpu", "neighbor:6M:1g", "mlr:8M", "tsearch:131072", "7zip:5", "table:mcf06"}
	run := func(typ string, llcs float64) float64 {
		r, _ := NewRunner("icx-4314-2s", 2)
		if typ != "" {
			r.ReporterType, r.ReporterMB = typ, llcs*float64(r.Profile.LLC.SizeBytes)/1e6
		}
		a, err := r.Accuracy(names, AccuracyDials, 6)
		if err != nil {
			t.Fatal(err)
		}
		return a.Unpartitioned.MeanAbs
	}
	alt, rnd := run("", 0), run("random", 0.25)
	t.Logf("mean |error|: alternating 2 × LLC %.2f pp, random ¼ LLC %.2f pp", alt, rnd)
	if !(rnd < alt) {
		t.Errorf("random reporter %.2f pp not better than alternating %.2f pp", rnd, alt)
	}
}
