package simtest

import (
	"testing"
	"time"

	"colo/internal/machinetest"
	"colo/sim"
)

// Ten summed steps of 100 ms are the ten steps of a twin machine (same seed) added up.
func TestSumAddsTheSteps(t *testing.T) {
	var ms [2]*sim.Machine
	var ids [2]sim.ID
	for i := range ms {
		m := New(t, machinetest.Get(t, "icx-4314-2s"))
		ms[i], ids[i] = m, Start(t, m, sim.CPULoop(), []int{0}, 1)
	}
	var want sim.Counters
	for i := 0; i < 10; i++ {
		for _, k := range ms[1].Step(100 * time.Millisecond) {
			if k.ID == ids[1] {
				want.Instructions += k.Instructions
				want.Cycles += k.Cycles
				want.LLCReferences += k.LLCReferences
			}
		}
	}
	got := Sum(ms[0], 10, 100*time.Millisecond)[ids[0]]
	if got.Instructions == 0 || got.Instructions != want.Instructions || got.Cycles != want.Cycles || got.LLCReferences != want.LLCReferences || got.CLOS != 1 {
		t.Fatalf("summed %+v, want the steps' sum %+v in CLOS 1", got, want)
	}
}
