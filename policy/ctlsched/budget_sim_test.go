package ctlsched_test

import (
	"fmt"
	"sync"
	"testing"

	"colo/bench"
	simplatform "colo/platform/sim"
	"colo/resctrl"
	"colo/sched"
	"colo/sim"
)

// budgetRec is platform sim with other agents' groups on its mount, checking after every
// allocation that the run's groups fit the budget the platform reports.
type budgetRec struct {
	*simplatform.Platform
	alloc  map[int]sched.Allocation // job -> its current allocation (mask 0: none)
	most   int                      // most distinct (mask, MBA) pairs on one socket at once
	allocs int                      // allocations with a mask accepted
	errs   []string
}

func (r *budgetRec) Stop(id int) error {
	delete(r.alloc, id)
	return r.Platform.Stop(id)
}

func (r *budgetRec) Move(id int, cpus []int) error {
	delete(r.alloc, id) // the job leaves its class of service
	return r.Platform.Move(id, cpus)
}

func (r *budgetRec) SetAllocation(id, socket int, mask uint64, mba int) error {
	err := r.Platform.SetAllocation(id, socket, mask, mba)
	if err != nil {
		r.errs = append(r.errs, fmt.Sprintf("job %d socket %d mask %#x mba %d: %v", id, socket, mask, mba, err))
		return err
	}
	r.alloc[id] = sched.Allocation{Job: id, Socket: socket, Mask: mask, MBA: mba}
	if mask != 0 {
		r.allocs++
	}
	budget := r.CLOSBudget()
	pairs := map[int]map[[2]uint64]bool{}
	for _, a := range r.alloc {
		if a.Mask == 0 {
			continue
		}
		if a.Mask&budget[a.Socket].Foreign != 0 {
			r.errs = append(r.errs, fmt.Sprintf("job %d holds %#x on socket %d, overlapping another agent's ways %#x", a.Job, a.Mask, a.Socket, budget[a.Socket].Foreign))
		}
		if pairs[a.Socket] == nil {
			pairs[a.Socket] = map[[2]uint64]bool{}
		}
		pairs[a.Socket][[2]uint64{a.Mask, uint64(a.MBA)}] = true
	}
	for _, p := range pairs {
		r.most = max(r.most, len(p))
	}
	return nil
}

var (
	budgetMu    sync.Mutex
	budgetLast  *budgetRec
	budgetGroup int    // other agents' groups at the full mask (each takes a CLOSID)
	budgetWays  string // another agent's group's schemata ("" none)
	budgetOnce  sync.Once
)

// runWithForeign runs file under scheduler on platform sim whose mount holds n other
// agents' groups at the full mask and, if ways is set, one more holding ways (an L3
// schemata line such as "L3:0=3").
func runWithForeign(t *testing.T, file, scheduler string, n int, ways string) *budgetRec {
	t.Helper()
	budgetOnce.Do(func() {
		bench.RegisterPlatform("sim-foreign", func(bm *bench.Benchmark) (bench.Platform, error) {
			p, err := simplatform.NewPrefixed(bm.Machine, sim.Options{Seed: bm.Seed}, "colo.budget.")
			if err != nil {
				return nil, err
			}
			c := resctrl.New(p.Emulator().FS(), resctrl.Options{AllowForeign: true})
			for i := 0; i < budgetGroup; i++ {
				if err := c.Apply(resctrl.Change{Group: fmt.Sprintf("theirs%d", i), Create: true}); err != nil {
					return nil, err
				}
			}
			if budgetWays != "" {
				s, err := resctrl.ParseSpec(budgetWays)
				if err == nil {
					err = c.Apply(resctrl.Change{Group: "theirs-ways", Create: true, Schemata: s})
				}
				if err != nil {
					return nil, err
				}
			}
			budgetLast = &budgetRec{Platform: p, alloc: map[int]sched.Allocation{}}
			return budgetLast, nil
		})
	})
	budgetMu.Lock()
	defer budgetMu.Unlock()
	budgetGroup, budgetWays = n, ways
	bm, err := bench.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	bm.Platform = "sim-foreign"
	if _, err := bench.RunAll(bm, []string{scheduler}, bench.RunOptions{Warn: func(string) {}}); err != nil {
		t.Fatal(err)
	}
	return budgetLast
}

// Each online controller, run on sim with fewer control groups than it would use and
// another agent's group holding ways 0x3 on socket 0, never holds more distinct
// allocations on a socket than the budget allows, never holds a foreign way, and the platform refuses none of its allocations. The same run without the
// foreign groups does use more groups than the budget (the budget binds).
func TestControllersHonourCLOSBudget(t *testing.T) {
	for _, c := range []struct {
		file, scheduler string
		groups          int // control groups left to the run
	}{
		{"../../examples/dcat/fig10-single-mlr.yaml", "dcat", 3},
		{"../../examples/lfoc/mix1.yaml", "lfoc+", 2},
		{"../../examples/vp/victim-aggressor-hog.yaml", "vp", 1},
	} {
		t.Run(c.scheduler, func(t *testing.T) {
			free := runWithForeign(t, c.file, c.scheduler, 0, "")
			if free.most <= c.groups || len(free.errs) > 0 {
				t.Fatalf("without other agents %s holds at most %d groups on a socket (errors %v): the budget of %d would not bind",
					c.scheduler, free.most, free.errs, c.groups)
			}
			// the ways group and n others leave c.groups of the run's whole budget
			n := free.CLOSBudget()[0].Groups - 1 - c.groups
			r := runWithForeign(t, c.file, c.scheduler, n, "L3:0=3")
			if b := r.CLOSBudget(); b[0].Groups != c.groups || b[0].Foreign != 0x3 {
				t.Fatalf("budget %+v, want %d groups and ways 0x3 on socket 0", b, c.groups)
			}
			if len(r.errs) > 0 {
				t.Fatalf("%d violations, first: %s", len(r.errs), r.errs[0])
			}
			if r.most > c.groups || r.allocs == 0 {
				t.Fatalf("%d groups at most, %d allocations; budget %d", r.most, r.allocs, c.groups)
			}
			t.Logf("%s: %d groups at most without a budget, %d with %d", c.scheduler, free.most, r.most, c.groups)
		})
	}
}
