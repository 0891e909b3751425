package experiment

import (
	"maps"
	"testing"

	"colo/k8s/twin"
)

func churnSetup(t testing.TB, seed uint64, nodes int) (ChurnTrace, *ColoSim, *SpreadSim) {
	lib, err := twin.Library()
	if err != nil {
		t.Fatal(err)
	}
	tr := GenerateChurn(seed, nodes, 10*nodes, lib.Names())
	return tr, NewColoSim(tr, lib), NewSpreadSim(tr)
}

// On the twin (an outcome the predictor does not compute), colo's placements beat the
// stock scheduler's model on P90 measured slowdown and keep at least 95 % of the priority
// pods at their target for their whole life; every pod is placed and finishes.
func TestColoBeatsSpreadOnTwin(t *testing.T) {
	lib, _ := twin.Library()
	for _, seed := range []uint64{42, 1, 2} {
		tr, colo, spread := churnSetup(t, seed, 40)
		a, err := RunChurn(tr, colo, lib)
		if err != nil {
			t.Fatal(err)
		}
		b, err := RunChurn(tr, spread, lib)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: colo %+v", seed, a)
		t.Logf("seed %d: spread %+v", seed, b)
		if a.PodsPlaced != len(tr.Pods) || b.PodsPlaced != len(tr.Pods) {
			t.Errorf("seed %d: placed %d (colo), %d (spread) of %d", seed, a.PodsPlaced, b.PodsPlaced, len(tr.Pods))
		}
		if !(a.TwinP90Slowdown < b.TwinP90Slowdown) || a.TwinPriorityMetShare < 0.95 {
			t.Errorf("seed %d: colo P90 %.4f met %.4f; spread P90 %.4f met %.4f", seed, a.TwinP90Slowdown, a.TwinPriorityMetShare, b.TwinP90Slowdown, b.TwinPriorityMetShare)
		}
		if a.PredictorMAE <= 0 {
			t.Errorf("seed %d: predictor error %v: the twin should not agree exactly with Bubble-Up", seed, a.PredictorMAE)
		}
	}
}

// Same trace and seed, same outcome and placements; churn really happens (pods finish
// while others arrive).
func TestChurnDeterministic(t *testing.T) {
	lib, _ := twin.Library()
	tr, c1, _ := churnSetup(t, 7, 8)
	_, c2, _ := churnSetup(t, 7, 8)
	a, err := RunChurn(tr, c1, lib)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := RunChurn(tr, c2, lib)
	if !maps.Equal(a.Placements, b.Placements) || a.TwinP90Slowdown != b.TwinP90Slowdown || a.PredictorMAE != b.PredictorMAE {
		t.Fatalf("two runs differ: %+v vs %+v", a, b)
	}
	if a.Ticks < ArrivalTicks+WorkMin || a.PodsPlaced != len(tr.Pods) {
		t.Fatalf("%+v", a)
	}
}

// The twin experiment at scale: 1 000 twin nodes and 10 000 pods with churn, placed by
// colo's simulated scheduler (every pod: every node's best socket), every node stepped
// every tick. Reports the twin's P90 slowdown and the priority-met share beside the time.
func BenchmarkRun1000Nodes10000Pods(b *testing.B) {
	lib, err := twin.Library()
	if err != nil {
		b.Fatal(err)
	}
	tr := GenerateChurn(42, 1000, 10000, lib.Names())
	var o Outcome
	for b.Loop() {
		if o, err = RunChurn(tr, NewColoSim(tr, lib), lib); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(o.TwinP90Slowdown, "twin-p90")
	b.ReportMetric(o.TwinPriorityMetShare, "priority-met")
	b.ReportMetric(float64(o.Ticks), "ticks")
}
