package simplatform

import (
	"fmt"

	"colo/probe"
	"colo/sim"
)

// Stressor is the simulated neighbour for a stressor with an LLC of llcBytes: analytic
// models of the thesis's stress-ng commands (Table 4.2).
//
//	llc: --cache, random read-modify-writes over an LLC-sized buffer (APKI 60, MLP 4,
//	     dirty lines: 128 B per miss);
//	mem-read: --memrate reads over 500 MB, sequential (APKI 62, prefetched MLP 10);
//	mem-write: --memrate write64nt over 500 MB, sequential (non-temporal stores do not keep
//	     lines; the model cannot express that, so it also claims LLC like mem-read);
//	syscall: --futex, kernel work on a small footprint (the futex hash table is not
//	     modelled: expect ς ≈ 0 on sim);
//	prefetch: --stream with huge pages, triad over 4 × LLC (3 streams: 96 B per miss).
func Stressor(kind string, llcBytes int64) (sim.Workload, error) {
	var a *sim.Analytic
	switch kind {
	case probe.StressLLC:
		a = &sim.Analytic{WorkingSetBytes: llcBytes, Pattern: sim.Random, PageBytes: sim.Page4K,
			BaseCPI: 0.6, BaseStallFrac: 0.1, APKI: 60, MLP: 4, BytesPerMiss: 128, Loads: 0.4}
	case probe.StressMemRead:
		a = &sim.Analytic{WorkingSetBytes: 500 << 20, Pattern: sim.Sequential, PageBytes: sim.Page4K,
			BaseCPI: 0.5, BaseStallFrac: 0.05, APKI: 62, MLP: 10, BytesPerMiss: 64, Loads: 0.5}
	case probe.StressMemWrite:
		a = &sim.Analytic{WorkingSetBytes: 500 << 20, Pattern: sim.Sequential, PageBytes: sim.Page4K,
			BaseCPI: 0.5, BaseStallFrac: 0.05, APKI: 62, MLP: 10, BytesPerMiss: 64, Loads: 0.05}
	case probe.StressSyscall:
		a = &sim.Analytic{WorkingSetBytes: 64 << 10, Pattern: sim.Random, PageBytes: sim.Page4K,
			BaseCPI: 1.5, BaseStallFrac: 0.2, APKI: 0.5, MLP: 1, Loads: 0.3}
	case probe.StressPrefetch:
		a = &sim.Analytic{WorkingSetBytes: 4 * llcBytes, Pattern: sim.Sequential, PageBytes: sim.Page2M,
			BaseCPI: 0.5, BaseStallFrac: 0.05, APKI: 62, MLP: 10, BytesPerMiss: 96, Loads: 0.4}
	default:
		return sim.Workload{}, fmt.Errorf("no simulated stressor %q: use one of %v", kind, probe.Stressors)
	}
	a.Label = "stressor-" + kind
	return sim.Single(a, 1), nil
}

// neighbour is a stressor next to a job (StartNeighbour): a workload of the simulated
// machine that is not a job, in the class of service of job alongside (-1: system/default).
type neighbour struct {
	sid       sim.ID
	alongside int
}

// StartNeighbour implements platform.NeighbourRunner: stressor kind's analytic model
// (Stressor) runs on cpus in the class of service of job alongside, or of system/default
// when alongside is -1, and follows it when that class changes (mirror). stop removes it.
func (p *Platform) StartNeighbour(alongside int, kind string, cpus []int) (func() error, error) {
	if _, ok := p.jobs[alongside]; !ok && alongside != -1 {
		return nil, fmt.Errorf("job %d is not running", alongside)
	}
	w, err := Stressor(kind, p.m.LLC.SizeBytes)
	if err != nil {
		return nil, err
	}
	sid, err := p.sm.AddWorkload(w, cpus)
	if err != nil {
		return nil, fmt.Errorf("on cores %v: %w", cpus, err)
	}
	nb := &neighbour{sid: sid, alongside: alongside}
	p.nbs = append(p.nbs, nb)
	stop := func() error {
		for i, x := range p.nbs {
			if x == nb {
				p.nbs = append(p.nbs[:i], p.nbs[i+1:]...)
				return p.sm.RemoveWorkload(sid)
			}
		}
		return nil
	}
	p.gen = 0 // mirror its class now
	if err := p.mirror(); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}
