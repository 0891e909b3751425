// Package simprobe runs the thesis's sensitivity probe on the simulated machine: the
// neighbour's stressors are analytic workloads (Stressor), the target's counters come
// from the machine's steps, and the segments, sampling, trimming and ς come from the one
// driver, probe.DriveSensitivity, as on a real host (probe/dockerprobe).
package simprobe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"colo/cbm"
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

// TenantSettle is the virtual time between setting up an isolated probe's partition and
// its baseline segment: the thesis's setup takes about 1 s (seed000.md §2.6).
const TenantSettle = time.Second

// tenants stands in for the other tenants of a busy host while an isolated probe runs
// (seed000.md §2.6 measured on a host with 15 noisy containers, §5.2): a data-intensive
// workload (the LLC stressor's model) on a free core of the neighbour's LLC domain, in the
// next CLOS with the ways outside the probe's partition. CAT confines where lines are
// allocated, not where they hit: the target keeps hitting the lines it cached outside the
// partition before the probe until someone else's fills evict them. On a real host the
// other tenants do that within moments. Without them the simulated socket would be
// idle outside the partition, and the probe would measure those stale lines instead of
// the partition (ς_LLC ≈ 0). It returns the function that removes the tenant and restores
// its CLOS.
func tenants(m *sim.Machine, partition int, partMask uint64, neighbourCores []int) (func(), error) {
	prof := m.Profile()
	clos := partition + 1
	if clos >= prof.CAT.NumCLOSIDs {
		return nil, fmt.Errorf("sensitivity probe: no CLOS left after %d for the other tenants (the machine has %d)", partition, prof.CAT.NumCLOSIDs)
	}
	rest := prof.FullMask() &^ partMask
	if rest == 0 {
		return func() {}, nil // the partition is the whole cache: nothing outside to evict
	}
	oldMasks, oldMBA := m.CLOS(clos)
	masks := make([]uint64, len(oldMasks))
	for i := range masks {
		masks[i] = rest
	}
	if err := m.SetCLOS(clos, masks, oldMBA); err != nil {
		return nil, fmt.Errorf("sensitivity probe: tenants' CLOS: %w", err)
	}
	w, err := Stressor(probe.StressLLC, prof.LLC.SizeBytes)
	if err != nil {
		return nil, err
	}
	w.Name = "host-tenants"
	d := prof.DomainOfCore(neighbourCores[0])
	per := prof.CoresPerDomain()
	for c := (d+1)*per - 1; c >= d*per; c-- {
		id, err := m.AddWorkload(w, []int{c})
		if err != nil {
			continue // core taken
		}
		if err := m.Assign(id, clos); err != nil {
			m.RemoveWorkload(id)
			return nil, err
		}
		return func() { m.RemoveWorkload(id); m.SetCLOS(clos, oldMasks, oldMBA) }, nil
	}
	m.SetCLOS(clos, oldMasks, oldMBA)
	return nil, fmt.Errorf("sensitivity probe: no free core in LLC domain %d for the other tenants", d)
}

// Probe runs the sensitivity probe of workload target (in CLOS targetCLOS) on the
// simulated machine m, with the neighbour on neighbourCores and, when cfg.Isolated, both in
// CLOS partition with cfg.Ways ways (the lowest) and cfg.MBA percent on every domain. The
// partition CLOS and the target's class are restored afterwards; the neighbour is removed.
// An isolated probe also runs the other tenants' pressure outside the partition (tenants,
// CLOS partition+1) and waits TenantSettle before its baseline. It advances m's virtual
// clock by the probe's segments (plus TenantSettle when isolated).
func Probe(m *sim.Machine, target sim.ID, targetCLOS int, neighbourCores []int, partition int, cfg probe.SensitivityConfig) (probe.SensitivityResult, error) {
	if err := cfg.Validate(); err != nil {
		return probe.SensitivityResult{}, err
	}
	prof := m.Profile()
	if cfg.Isolated {
		if cfg.Ways > prof.LLC.Ways {
			return probe.SensitivityResult{}, fmt.Errorf("sensitivity probe: %d ways exceed the machine's %d", cfg.Ways, prof.LLC.Ways)
		}
		oldMasks, oldMBA := m.CLOS(partition)
		masks, mba := make([]uint64, len(oldMasks)), make([]int, len(oldMBA))
		for i := range masks {
			masks[i] = uint64(cbm.Full(cfg.Ways))
		}
		for i := range mba {
			mba[i] = cfg.MBA
		}
		if err := m.SetCLOS(partition, masks, mba); err != nil {
			return probe.SensitivityResult{}, fmt.Errorf("sensitivity probe: partition: %w", err)
		}
		defer m.SetCLOS(partition, oldMasks, oldMBA)
		if err := m.Assign(target, partition); err != nil {
			return probe.SensitivityResult{}, err
		}
		defer m.Assign(target, targetCLOS)
		stop, err := tenants(m, partition, masks[0], neighbourCores)
		if err != nil {
			return probe.SensitivityResult{}, err
		}
		defer stop()
		m.Step(TenantSettle)
	}
	d := &driver{m: m, target: target, cores: neighbourCores, partition: -1, llc: prof.LLC.SizeBytes}
	if cfg.Isolated {
		d.partition = partition
	}
	return probe.DriveSensitivity(context.Background(), cfg, d, d, d.step)
}

// driver is the simulated probe.Neighbour and probe.Sampler: the neighbour is an analytic
// stressor on its cores (in the partition when isolated), the clock is the machine's
// steps, and a sample is the target's counters of the last step.
type driver struct {
	m         *sim.Machine
	target    sim.ID
	cores     []int
	partition int // -1: not isolated
	llc       int64
	last      probe.CounterSample
}

// Start adds the stressor's workload; stop removes it.
func (d *driver) Start(_ context.Context, kind string) (func() error, error) {
	w, err := Stressor(kind, d.llc)
	if err != nil {
		return nil, err
	}
	nb, err := d.m.AddWorkload(w, d.cores)
	if err != nil {
		return nil, fmt.Errorf("on cores %v: %w", d.cores, err)
	}
	if d.partition >= 0 {
		if err := d.m.Assign(nb, d.partition); err != nil {
			d.m.RemoveWorkload(nb)
			return nil, err
		}
	}
	return func() error { return d.m.RemoveWorkload(nb) }, nil
}

// step advances the machine by dt and keeps the target's counters of the step.
func (d *driver) step(_ context.Context, dt time.Duration) error {
	for _, c := range d.m.Step(dt) {
		if c.ID == d.target {
			d.last = probe.CounterSample{Instructions: float64(c.Instructions), Cycles: float64(c.Cycles), StallCycles: float64(c.StallCycles)}
			return nil
		}
	}
	return errors.New("sensitivity probe: the target is not running on the simulated machine")
}

// Sample returns the target's counters of the last step.
func (d *driver) Sample() (probe.CounterSample, error) { return d.last, nil }
