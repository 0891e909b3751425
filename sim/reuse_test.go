package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// churn drives two machines through the same life: steady stretches (where Step reuses
// its rates) broken by every kind of change (CLOS masks and MBA, class moves, core
// moves across sockets, quotas, removals, arrivals, looping phases). ref is forced to
// compute the rates at every step (SetQuota with the quota it already has marks them
// stale), the step as it was before reuse; the counters must agree bit for bit.
func TestSteadyStepsAreExact(t *testing.T) {
	for _, noise := range []float64{0, 0.02} {
		t.Run(fmt.Sprint("noise=", noise), func(t *testing.T) {
			m, ref := icx(t, Options{Seed: 7, Noise: noise}), icx(t, Options{Seed: 7, Noise: noise})
			pool32(t, m)
			pool32(t, ref)
			rng := rand.New(rand.NewPCG(1, 2))
			steps, reused := 3000, 0
			for i := 0; i < steps; i++ {
				if i%150 == 149 {
					churnOnce(t, rng, m, ref)
				}
				ids := ref.Workloads()
				q, err := ref.Quota(ids[0])
				must(t, err)
				must(t, ref.SetQuota(ids[0], q))
				runs := m.ratesRuns
				a, b := dump(m.Step(100*time.Millisecond)), dump(ref.Step(100*time.Millisecond))
				if m.ratesRuns == runs {
					reused++
				}
				if a != b {
					t.Fatalf("step %d: counters differ from a step that recomputes everything\nreuse:\n%s\nref:\n%s", i, a, b)
				}
			}
			// most steps between changes are steady: the reuse must actually happen
			if reused < steps/8 {
				t.Errorf("only %d of %d steps reused the rates", reused, steps)
			}
			t.Logf("%d of %d steps reused the rates", reused, steps)
		})
	}
}

// churnOnce applies one random change to both machines.
func churnOnce(t *testing.T, rng *rand.Rand, ms ...*Machine) {
	t.Helper()
	ids := ms[0].Workloads()
	id := ids[rng.IntN(len(ids))]
	op := rng.IntN(6)
	a, b := rng.IntN(12), rng.IntN(12)
	q := 0.25 + 0.75*rng.Float64()
	for _, m := range ms {
		switch op {
		case 0: // a class gets new ways and MBA
			lo, hi := min(a, b), max(a, b)
			mask := uint64(1)<<uint(hi+1) - 1 ^ (uint64(1)<<uint(lo) - 1)
			must(t, m.SetCLOS(3, []uint64{mask, mask}, []int{10 + 10*(a%9), 100}))
		case 1:
			must(t, m.Assign(id, a%5))
		case 2:
			must(t, m.SetQuota(id, q))
		case 3: // remove a workload, its lines become orphans
			if len(ids) > 20 {
				must(t, m.RemoveWorkload(id))
			}
		case 4: // move a single-thread workload to a free core, preferably on the other
			// socket (its lines stay behind, its traffic turns remote)
			w, _, err := m.find(id)
			must(t, err)
			if c := freeCore(m, 1-w.socket); len(w.cores) == 1 && c >= 0 {
				must(t, m.Move(id, []int{c}))
			}
		case 5: // a new workload on a free core
			if c := freeCore(m, a%2); c >= 0 {
				nid, err := m.AddWorkload(StressMatrix3D(64+16*a), []int{c})
				must(t, err)
				must(t, m.Assign(nid, b%5))
			}
		}
	}
}

// freeCore is a core of socket s (else any) that runs no workload, -1 if none.
func freeCore(m *Machine, s int) int {
	best := -1
	for c, o := range m.coreOwner {
		if o == nil {
			if m.p.SocketOfCore(c) == s {
				return c
			}
			best = c
		}
	}
	return best
}

// StepAll's counters are those of stepping the machines one at a time, whatever the
// number of workers.
func TestStepAllIsStepByStep(t *testing.T) {
	const n = 9
	build := func() []*Machine {
		ms := make([]*Machine, n)
		for i := range ms {
			ms[i] = icx(t, Options{Seed: uint64(i), Noise: 0.01})
			pool32(t, ms[i])
		}
		return ms
	}
	for _, workers := range []int{1, 2, 3, 16} {
		ms, ref := build(), build()
		var out [][]Counters
		for step := 0; step < 40; step++ {
			if step == 20 { // a change on some machines
				for i := 0; i < n; i += 2 {
					must(t, ms[i].SetCLOS(4, []uint64{0xf00, 0xf00}, []int{50, 50}))
					must(t, ref[i].SetCLOS(4, []uint64{0xf00, 0xf00}, []int{50, 50}))
				}
			}
			out = StepAll(ms, 200*time.Millisecond, workers, out)
			for i := range ref {
				if a, b := dump(out[i]), dump(ref[i].Step(200*time.Millisecond)); a != b {
					t.Fatalf("%d workers, step %d, machine %d: StepAll differs from Step\n%s\n%s", workers, step, i, a, b)
				}
			}
		}
	}
}
