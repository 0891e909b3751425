package experiment

import (
	"encoding/json"
	"testing"

	"colo/k8s/placement"
)

func TestColoBeatsSpreadOnTheSameTrace(t *testing.T) {
	lib, err := placement.LoadLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 10; seed++ {
		tr := Generate(seed, 120, 300, lib.Names())
		rc, rs := Evaluate(tr, lib, SimulateColo(tr, lib)), Evaluate(tr, lib, SimulateSpread(tr))
		if rc.PodsPlaced != 300 || !(rc.P90PredSlowdown < rs.P90PredSlowdown) || !(rc.PriorityOverTarget < rs.PriorityOverTarget) {
			t.Errorf("seed %d: colo %+v, spread %+v", seed, rc, rs)
		}
	}
	tr := Generate(42, 120, 300, lib.Names())
	colo := SimulateColo(tr, lib)
	spread := SimulateSpread(tr)
	rc, rs := Evaluate(tr, lib, colo), Evaluate(tr, lib, spread)
	b, _ := json.Marshal(map[string]Result{"colo": rc, "spread": rs})
	t.Logf("%s", b)
	if rc.PodsPlaced != 300 || rs.PodsPlaced != 300 {
		t.Fatalf("placed %d / %d", rc.PodsPlaced, rs.PodsPlaced)
	}
	if !(rc.P90PredSlowdown < rs.P90PredSlowdown) || !(rc.PriorityOverTarget < rs.PriorityOverTarget) {
		t.Fatalf("colo %+v does not beat spread %+v", rc, rs)
	}
	// Same trace and seed: the same placement.
	again := SimulateColo(Generate(42, 120, 300, lib.Names()), lib)
	for p, n := range colo {
		if again[p] != n {
			t.Fatalf("%s: %s then %s", p, n, again[p])
		}
	}
}
