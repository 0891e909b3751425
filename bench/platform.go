package bench

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"colo/platform"
)

// Counters and AllocationReading are the platform's (platform.Counters,
// platform.AllocationReading).
type (
	Counters          = platform.Counters
	AllocationReading = platform.AllocationReading
)

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

var (
	pfMu      sync.RWMutex
	platforms = map[string]PlatformFactory{}
)

// RegisterPlatform makes a platform available by name (`benchmark.platform`). The sim
// platform registers itself; the linux platform registers from its package's init.
func RegisterPlatform(name string, f PlatformFactory) {
	pfMu.Lock()
	defer pfMu.Unlock()
	if _, dup := platforms[name]; dup {
		panic("bench: platform " + name + " registered twice")
	}
	platforms[name] = f
}

// PlatformNames lists the registered platforms.
func PlatformNames() []string {
	pfMu.RLock()
	defer pfMu.RUnlock()
	return slices.Sorted(maps.Keys(platforms))
}

// NewPlatform builds the benchmark's platform.
func NewPlatform(bm *Benchmark) (Platform, error) {
	pfMu.RLock()
	f, ok := platforms[bm.Platform]
	pfMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("platform %q is not available in this build (have %v)", bm.Platform, PlatformNames())
	}
	return f(bm)
}
