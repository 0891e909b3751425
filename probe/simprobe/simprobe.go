// Package simprobe runs the thesis's sensitivity probe on the simulated testbed: a fresh
// platform/sim with the target as its one job, probed by the one platform driver
// (probe/platprobe) through the platform's capabilities, as any platform would be. The
// neighbour's stressors are platform/sim's analytic models (simplatform.Stressor).
package simprobe

import (
	"context"
	"fmt"
	"slices"
	"time"

	"colo/machine"
	"colo/platform"
	simplatform "colo/platform/sim"
	"colo/probe"
	"colo/probe/platprobe"
	"colo/sim"
)

// Options are the simulated testbed and the target.
type Options struct {
	Machine *machine.Profile
	// Sim seeds the machine and sets its measurement noise.
	Sim sim.Options
	// Workload is the target's simulated workload (simplatform.Workload: a sim workload
	// spec such as neighbor:6M:1g, or cpu-loop); it runs on TargetCore.
	Workload   string
	TargetCore int
	// NeighbourCores are the neighbour's cores (on the target's LLC domain).
	NeighbourCores []int
	// Warmup runs the target alone before the probe.
	Warmup time.Duration
}

// targetJob is the target's job ID on the testbed.
const targetJob = 1

// Probe runs the sensitivity probe of o.Workload on a fresh simulated testbed. When
// cfg.Isolated, the other tenants of a busy host are stood in for by an LLC stressor on
// the highest core of the neighbour's LLC domain that neither target nor neighbour uses
// (platprobe.Config.TenantCPUs), and the baseline waits platprobe.TenantSettle.
// After the probe the testbed is closed; the result is deterministic by o.Sim.Seed.
func Probe(o Options, cfg probe.SensitivityConfig) (probe.SensitivityResult, error) {
	if err := cfg.Validate(); err != nil {
		return probe.SensitivityResult{}, err
	}
	if len(o.NeighbourCores) == 0 {
		return probe.SensitivityResult{}, fmt.Errorf("sensitivity probe: no neighbour cores")
	}
	pf, err := simplatform.New(o.Machine, o.Sim)
	if err != nil {
		return probe.SensitivityResult{}, err
	}
	r, err := run(pf, o, cfg)
	if cerr := pf.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return r, err
}

func run(pf *simplatform.Platform, o Options, cfg probe.SensitivityConfig) (probe.SensitivityResult, error) {
	m := pf.Machine()
	job := platform.Job{ID: targetJob, Name: "target", Workload: o.Workload, Cores: 1}
	if err := pf.Check(job); err != nil {
		return probe.SensitivityResult{}, err
	}
	if err := pf.Start(job, []int{o.TargetCore}); err != nil {
		return probe.SensitivityResult{}, err
	}
	if err := pf.Advance(o.Warmup); err != nil {
		return probe.SensitivityResult{}, err
	}
	c := platprobe.Config{Probe: cfg, Target: targetJob, Socket: m.SocketOfCore(o.TargetCore), NeighbourCPUs: o.NeighbourCores}
	if cfg.Isolated {
		d := m.DomainOfCore(o.NeighbourCores[0])
		per := m.CoresPerDomain()
		for core := (d+1)*per - 1; core >= d*per; core-- {
			if core != o.TargetCore && !slices.Contains(o.NeighbourCores, core) {
				c.TenantCPUs = []int{core}
				break
			}
		}
		if c.TenantCPUs == nil {
			return probe.SensitivityResult{}, fmt.Errorf("sensitivity probe: no free core in LLC domain %d for the other tenants", d)
		}
		c.Settle = platprobe.TenantSettle
	}
	return platprobe.Run(context.Background(), pf, c)
}

// Report is r on IPCE, the thesis's metric, which the simulated counters always give,
// with cfg's partition.
func Report(r probe.SensitivityResult, cfg probe.SensitivityConfig) probe.Report {
	iso := "none (target and neighbour share the socket's LLC and bandwidth)"
	if cfg.Isolated {
		iso = fmt.Sprintf("CLOS 1: %d lowest ways, MBA %d %%", cfg.Ways, cfg.MBA)
	}
	return r.IPCEReport("simulated counters (IPCE as in the thesis)", iso)
}
