package workload

import (
	"fmt"
	"time"
)

// CFSPeriod is the CFS bandwidth period colo sets with a CPU quota: 100 ms, the kernel's
// default cpu.cfs_period_us (Documentation/scheduler/sched-bwc.rst).
const CFSPeriod = 100 * time.Millisecond

// MinCFSQuota is the smallest quota the kernel accepts (1 ms, sched-bwc.rst; Docker
// refuses less too).
const MinCFSQuota = time.Millisecond

// CFSQuota is the CFS bandwidth quota that lets a workload on ncpus CPUs run fraction
// of their time:
//
//	quota = fraction × ncpus × period
//
// (sched-bwc.rst: a group may use quota per period summed over all CPUs; VP's CPU cap,
// seed004.md §2.5). fraction ≥ 1 returns 0, no limit; a quota under MinCFSQuota is
// raised to it. fraction ≤ 0, ncpus < 1 or period ≤ 0 are errors.
func CFSQuota(fraction float64, ncpus int, period time.Duration) (time.Duration, error) {
	if !(fraction > 0) || ncpus < 1 || period <= 0 {
		return 0, fmt.Errorf("CPU quota %v of %d CPUs per %v: the fraction must be in (0, 1], the CPUs and period positive", fraction, ncpus, period)
	}
	if fraction >= 1 {
		return 0, nil
	}
	q := time.Duration(fraction * float64(ncpus) * float64(period))
	return max(q, MinCFSQuota), nil
}
