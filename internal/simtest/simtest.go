// Package simtest holds what the controllers' tests on the simulator (colo/sim) share:
// starting a workload in a class of service and summing its counters over a period.
package simtest

import (
	"reflect"
	"testing"
	"time"

	"colo/machine"
	"colo/sim"
)

// New is a simulated machine p with seed 1, failing the test on an error.
func New(t testing.TB, p *machine.Profile) *sim.Machine {
	t.Helper()
	m, err := sim.New(p, sim.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Start adds workload w on cpus to m and assigns it to class of service clos, failing the
// test on an error.
func Start(t testing.TB, m *sim.Machine, w sim.Workload, cpus []int, clos int) sim.ID {
	t.Helper()
	id, err := m.AddWorkload(w, cpus)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Assign(id, clos); err != nil {
		t.Fatal(err)
	}
	return id
}

// Sum runs steps steps of dt and returns each workload's counters summed over them: every
// uint64 field (the event counts) is the sum; the other fields are the last step's
// (Occupancy shares the simulator's buffer, which the next Step overwrites).
func Sum(m *sim.Machine, steps int, dt time.Duration) map[sim.ID]sim.Counters {
	acc := map[sim.ID]sim.Counters{}
	for i := 0; i < steps; i++ {
		for _, k := range m.Step(dt) {
			if s, ok := acc[k.ID]; ok {
				sv, kv := reflect.ValueOf(s), reflect.ValueOf(&k).Elem()
				for f := 0; f < kv.NumField(); f++ {
					if kv.Field(f).Kind() == reflect.Uint64 {
						kv.Field(f).SetUint(kv.Field(f).Uint() + sv.Field(f).Uint())
					}
				}
			}
			acc[k.ID] = k
		}
	}
	return acc
}

// Alone runs w alone on CPU 0 of a new machine p (seed 1), in class of service 1 holding
// the lowest ways ways of every LLC domain: warm steps of 100 ms, then one step of a second,
// whose counters it returns (what a table of solo IPC per way count is measured from).
func Alone(t testing.TB, p *machine.Profile, w sim.Workload, ways, warm int) sim.Counters {
	t.Helper()
	m := New(t, p)
	masks := make([]uint64, p.LLCDomains())
	for i := range masks {
		masks[i] = 1<<uint(ways) - 1
	}
	if err := m.SetCLOS(1, masks, nil); err != nil {
		t.Fatal(err)
	}
	Start(t, m, w, []int{0}, 1)
	for i := 0; i < warm; i++ {
		m.Step(100 * time.Millisecond)
	}
	return m.Step(time.Second)[0]
}
