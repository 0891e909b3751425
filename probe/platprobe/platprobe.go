// Package platprobe runs the thesis's sensitivity probe (probe.DriveSensitivity,
// seed000.md §2.6) on a platform, through the capabilities it needs (package platform):
// the neighbour's stressors through NeighbourRunner, the target's counters through
// CounterSampler, the isolated partition through AllocationApplier, and the platform's
// clock (Advance). It never asks which platform it runs on; a platform without a
// capability the probe needs is told so.
//
// `colo probe sensitivity --platform sim` runs here on platform/sim. On a Linux host
// without a hardware PMU (this project's VMs) a job's counters hold no instructions, so
// the Linux probe stays probe/dockerprobe, which measures the target's own work rate
// instead.
package platprobe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"colo/cbm"
	"colo/counter"
	"colo/platform"
	"colo/probe"
)

// Config is one probe of a running job.
type Config struct {
	// Probe is the timing and the isolated partition (cfg.Isolated, Ways, MBA).
	Probe probe.SensitivityConfig
	// Target is the probed job (running on the platform) and Socket its socket.
	Target, Socket int
	// NeighbourCPUs are the neighbour's cores (on the target's LLC, not the target's).
	NeighbourCPUs []int
	// TenantCPUs, for an isolated probe, are cores where a stand-in for the host's other
	// tenants runs: an LLC stressor in system/default, whose mask is then the ways outside
	// the partition. CAT confines where lines are allocated, not where they hit: the
	// target keeps hitting the lines it cached outside the partition before the probe
	// until someone else's fills evict them, which a busy host's other tenants do within
	// moments (seed000.md §2.6 measured on a host with 15 noisy containers, §5.2). A real
	// host has its own tenants (nil); an idle simulated socket needs the stand-in, or the
	// probe measures those stale lines (ς_LLC ≈ 0).
	TenantCPUs []int
	// Settle is the time between setting up an isolated partition and the baseline
	// segment (TenantSettle).
	Settle time.Duration
}

// TenantSettle is the thesis's setup time before the baseline (about 1 s, seed000.md §2.6).
const TenantSettle = time.Second

// Run probes job c.Target on pf. With c.Probe.Isolated the target gets the lowest
// c.Probe.Ways ways and c.Probe.MBA percent on its socket (the neighbour joins its
// group), and afterwards returns to system/default, whose mask returns to the full one.
// It advances pf's clock by the probe's segments (plus c.Settle when isolated).
func Run(ctx context.Context, pf platform.Platform, c Config) (probe.SensitivityResult, error) {
	cfg := c.Probe
	if err := cfg.Validate(); err != nil {
		return probe.SensitivityResult{}, err
	}
	nr, ok := pf.(platform.NeighbourRunner)
	if !ok {
		return probe.SensitivityResult{}, errors.New("sensitivity probe: the platform cannot run a neighbour (no platform.NeighbourRunner)")
	}
	cs, ok := pf.(platform.CounterSampler)
	if !ok {
		return probe.SensitivityResult{}, errors.New("sensitivity probe: the platform reads no counters (no platform.CounterSampler)")
	}
	m := pf.Machine()
	if cfg.Isolated {
		aa, ok := pf.(platform.AllocationApplier)
		if !ok {
			return probe.SensitivityResult{}, errors.New("sensitivity probe: an isolated partition needs a platform that applies allocations (platform.AllocationApplier)")
		}
		if cfg.Ways > m.LLC.Ways {
			return probe.SensitivityResult{}, fmt.Errorf("sensitivity probe: %d ways exceed the machine's %d", cfg.Ways, m.LLC.Ways)
		}
		mask := uint64(cbm.Full(cfg.Ways))
		if err := aa.SetAllocation(c.Target, c.Socket, mask, cfg.MBA); err != nil {
			return probe.SensitivityResult{}, fmt.Errorf("sensitivity probe: partition: %w", err)
		}
		defer aa.SetAllocation(c.Target, c.Socket, 0, 0)
		if len(c.TenantCPUs) > 0 {
			if rest := m.FullMask() &^ mask; rest != 0 { // the partition is not the whole cache
				if err := aa.SetDefaultMask(c.Socket, rest); err != nil {
					return probe.SensitivityResult{}, fmt.Errorf("sensitivity probe: the other tenants' ways: %w", err)
				}
				defer aa.SetDefaultMask(c.Socket, m.FullMask())
				stop, err := nr.StartNeighbour(-1, probe.StressLLC, c.TenantCPUs)
				if err != nil {
					return probe.SensitivityResult{}, fmt.Errorf("sensitivity probe: the other tenants: %w", err)
				}
				defer stop()
			}
		}
		if err := pf.Advance(pf.Now() + c.Settle); err != nil {
			return probe.SensitivityResult{}, err
		}
	}
	d := &driver{pf: pf, cs: cs, nr: nr, c: c}
	var err error
	if d.last, err = cs.Read(c.Target); err != nil {
		return probe.SensitivityResult{}, err
	}
	return probe.DriveSensitivity(ctx, cfg, d, d, d.wait)
}

// driver is probe.Neighbour and probe.Sampler on a platform: the neighbour runs next to
// the target (in its group), a sample is the target's counters since the previous one,
// and the clock is the platform's.
type driver struct {
	pf   platform.Platform
	cs   platform.CounterSampler
	nr   platform.NeighbourRunner
	c    Config
	last counter.Reading
}

func (d *driver) Start(_ context.Context, kind string) (func() error, error) {
	stop, err := d.nr.StartNeighbour(d.c.Target, kind, d.c.NeighbourCPUs)
	if err != nil {
		return nil, fmt.Errorf("on cores %v: %w", d.c.NeighbourCPUs, err)
	}
	return stop, nil
}

func (d *driver) wait(ctx context.Context, dt time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.pf.Advance(d.pf.Now() + dt)
}

// Sample returns the target's counter deltas since the previous sample.
func (d *driver) Sample() (probe.CounterSample, error) {
	c, err := d.cs.Read(d.c.Target)
	if err != nil {
		return probe.CounterSample{}, err
	}
	s := probe.CounterSample{Instructions: c.Instructions - d.last.Instructions, Cycles: c.Cycles - d.last.Cycles,
		StallCycles: c.StallsTotal - d.last.StallsTotal}
	d.last = c
	return s, nil
}
