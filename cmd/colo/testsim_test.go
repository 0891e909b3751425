package main

import (
	"fmt"
	"time"

	"colo/bench"
	"colo/counter"
	"colo/machine"
	"colo/sim"
)

// testsim is a minimal bench.Platform over sim.Machine for the LFOC mixes, whose table models
// (table:BENCH) the sim platform does not accept yet (registered as
// "testsim" so that it never collides with the real "sim" platform): one CLOS per job with an
// allocation, CLOS 0 for system/default, the simulator stepped in 100 ms slices.
type testsim struct {
	p     *machine.Profile
	m     *sim.Machine
	ids   map[int]sim.ID
	cum   map[int]*counter.Reading
	clos  map[int]int
	alloc map[int]bench.AllocationReading
	free  []int
}

func init() {
	bench.RegisterPlatform("testsim", func(bm *bench.Benchmark) (bench.Platform, error) {
		m, err := sim.New(bm.Machine, sim.Options{Seed: bm.Seed})
		if err != nil {
			return nil, err
		}
		t := &testsim{p: bm.Machine, m: m, ids: map[int]sim.ID{}, cum: map[int]*counter.Reading{},
			clos: map[int]int{}, alloc: map[int]bench.AllocationReading{}}
		for c := bm.Machine.CAT.NumCLOSIDs - 1; c >= 1; c-- {
			t.free = append(t.free, c)
		}
		return t, nil
	})
}

func (t *testsim) Machine() *machine.Profile { return t.p }
func (t *testsim) Check(j bench.JobSpec) error {
	_, err := sim.ParseWorkload(j.Workload, max(1, j.Cores), nil)
	return err
}
func (t *testsim) Start(j bench.JobSpec, cpus []int) error {
	w, err := sim.ParseWorkload(j.Workload, len(cpus), nil)
	if err != nil {
		return err
	}
	id, err := t.m.AddWorkload(w, cpus)
	if err != nil {
		return err
	}
	t.ids[j.ID] = id
	t.cum[j.ID] = &counter.Reading{}
	return nil
}
func (t *testsim) Stop(id int) error {
	_ = t.SetAllocation(id, 0, 0, 0)
	err := t.m.RemoveWorkload(t.ids[id])
	delete(t.ids, id)
	return err
}
func (t *testsim) Move(id int, cpus []int) error {
	_ = t.SetAllocation(id, 0, 0, 0)
	return t.m.Move(t.ids[id], cpus)
}
func (t *testsim) SetAllocation(id, socket int, mask uint64, mba int) error {
	if mask == 0 {
		if c, ok := t.clos[id]; ok {
			t.free = append(t.free, c)
			delete(t.clos, id)
		}
		delete(t.alloc, id)
		return t.m.Assign(t.ids[id], 0)
	}
	c, ok := t.clos[id]
	if !ok {
		if len(t.free) == 0 {
			return fmt.Errorf("no free CLOS")
		}
		c, t.free = t.free[len(t.free)-1], t.free[:len(t.free)-1]
		t.clos[id] = c
	}
	masks := make([]uint64, t.p.LLCDomains())
	var mbas []int
	if t.p.MBA != nil {
		mbas = make([]int, t.p.LLCDomains())
	}
	for d := range masks {
		masks[d] = t.p.FullMask()
		if mbas != nil {
			mbas[d] = t.p.MBA.Max
			if d/t.p.LLC.DomainsPerSocket == socket && mba > 0 {
				mbas[d] = mba
			}
		}
		if d/t.p.LLC.DomainsPerSocket == socket {
			masks[d] = mask
		}
	}
	if err := t.m.SetCLOS(c, masks, mbas); err != nil {
		return err
	}
	t.alloc[id] = bench.AllocationReading{Group: fmt.Sprintf("job-%d", id), Mask: mask, MBA: mba}
	return t.m.Assign(t.ids[id], c)
}
func (t *testsim) SetDefaultMask(socket int, mask uint64) error {
	cur, _ := t.m.CLOS(0)
	for d := range cur {
		if d/t.p.LLC.DomainsPerSocket == socket {
			cur[d] = mask
		}
	}
	return t.m.SetCLOS(0, cur, nil)
}
func (t *testsim) Read(id int) (counter.Reading, error) {
	c, ok := t.cum[id]
	if !ok {
		return counter.Reading{}, fmt.Errorf("no job %d", id)
	}
	return *c, nil
}
func (t *testsim) ReadAllocation(id int) (bench.AllocationReading, error) { return t.alloc[id], nil }
func (t *testsim) Now() time.Duration                                     { return t.m.Now() }
func (t *testsim) Advance(to time.Duration) error {
	byID := map[sim.ID]int{}
	for j, s := range t.ids {
		byID[s] = j
	}
	for t.m.Now() < to {
		dt := min(100*time.Millisecond, to-t.m.Now())
		for _, k := range t.m.Step(dt) {
			c := t.cum[byID[k.ID]]
			if c == nil {
				continue
			}
			c.Instructions += float64(k.Instructions)
			c.Cycles += float64(k.Cycles)
			c.StallsTotal += float64(k.StallCycles)
			c.StallsL3Miss += float64(k.StallsL3Miss)
			c.LLCReferences += float64(k.LLCReferences)
			c.LLCMisses += float64(k.LLCMisses)
			c.L1References += float64(k.L1References)
			c.LLCOccupancy = float64(k.OccupancyBytes())
			c.MBMTotalBytes += float64(k.MemBytesTotal)
			c.MBMLocalBytes += float64(k.MemBytesLocal)
			c.CPUTime += dt
		}
	}
	return nil
}
func (t *testsim) Close() error { return nil }
