package bench

import (
	"fmt"

	"colo/internal/registry"
	"colo/platform"
)

// AllocationReading is the platform's (platform.AllocationReading).
type AllocationReading = platform.AllocationReading

// Platform is what the run loop needs of a platform (package platform): the core
// (machine, jobs, time) with allocations and counters. Its optional capabilities —
// counter quality (platform.CounterReporter), CLOSID budgets (platform.CLOSBudgeter), CPU
// quotas (platform.QuotaSetter) — are found by type assertion. The run loop is its only
// caller and calls it from one goroutine.
type Platform interface {
	platform.Platform
	platform.AllocationApplier
	platform.CounterSampler
}

// PlatformFactory builds a platform for a benchmark.
type PlatformFactory func(bm *Benchmark) (Platform, error)

var platforms = registry.New[PlatformFactory]("bench: platform")

// RegisterPlatform makes a platform available by name (`benchmark.platform`). The sim
// platform registers itself; the linux platform registers from its package's init.
func RegisterPlatform(name string, f PlatformFactory) { platforms.Register(name, f) }

// PlatformNames lists the registered platforms.
func PlatformNames() []string { return platforms.Names() }

// NewPlatform builds the benchmark's platform.
func NewPlatform(bm *Benchmark) (Platform, error) {
	f, ok := platforms.Get(bm.Platform)
	if !ok {
		return nil, fmt.Errorf("platform %q is not available in this build (have %v)", bm.Platform, PlatformNames())
	}
	return f(bm)
}
