// Package counter is the one record of a job's or container's cumulative counters
// (Reading: perf events, CPU time, resctrl monitoring) and the one function that turns two
// readings into the scheduler's sample (Between). The run loop (bench), the agent and the
// platforms' counter readers all use them. It is pure: the callers read the counters.
package counter

import (
	"math"
	"time"

	"colo/sched"
)

// Reading is one cumulative reading of a job's or container's counters. A platform leaves
// the times 0; the caller stamps them when it takes the reading.
type Reading struct {
	// At is when the reading was taken (the run's or the agent's clock).
	At            time.Duration
	Instructions  float64
	Cycles        float64
	StallsTotal   float64 // cycle_activity.stalls_total
	StallsL3Miss  float64 // cycle_activity.stalls_l3_miss
	LLCReferences float64
	LLCMisses     float64
	L1References  float64 // retired loads (dCat's l1_ref)
	// L2Misses are requests that missed the private L2 (VP's MF); 0 where the platform
	// has no such counter (sched.Sample.L2Misses).
	L2Misses float64
	// LLCOccupancy is resctrl llc_occupancy now (bytes, a level, not cumulative).
	LLCOccupancy float64
	// MBMTotalBytes and MBMLocalBytes are cumulative memory traffic (mbm_*_bytes).
	MBMTotalBytes float64
	MBMLocalBytes float64
	// CPUTime is the cumulative CPU time of the job (cgroup or runtime stats).
	CPUTime time.Duration
	// CPUAt is when CPUTime and the perf counters were read (the agent reads CPU time
	// less often than every interval).
	CPUAt time.Duration
	// MonAt is when the resctrl monitoring values were read (they may be older than At:
	// the agent reads them every few intervals).
	MonAt time.Duration
}

// Between is the scheduler's sample over (prev.At, cur.At]: each counter's increase
// (never negative), occupancy at the end (cur's level), and memory bandwidth
//
//	MemBandwidthMBps = ΔMBMTotalBytes / 10^6 / Δt_mon   (10^6 B/s)
//
// over the monitoring reads' own interval Δt_mon = cur.MonAt − prev.MonAt; 0 when the
// monitoring values were not read again (Δt_mon = 0: the caller keeps its last rate).
// It is false when cur is not later than prev.
func Between(prev, cur Reading) (sched.Sample, bool) {
	dt := cur.At - prev.At
	if dt <= 0 {
		return sched.Sample{}, false
	}
	d := func(a, b float64) float64 { return math.Max(0, b-a) }
	s := sched.Sample{Interval: dt, At: cur.At,
		Instructions: d(prev.Instructions, cur.Instructions), Cycles: d(prev.Cycles, cur.Cycles),
		StallsTotal: d(prev.StallsTotal, cur.StallsTotal), StallsL3Miss: d(prev.StallsL3Miss, cur.StallsL3Miss),
		LLCReferences: d(prev.LLCReferences, cur.LLCReferences), LLCMisses: d(prev.LLCMisses, cur.LLCMisses),
		L1References: d(prev.L1References, cur.L1References), L2Misses: d(prev.L2Misses, cur.L2Misses),
		LLCOccupancy: cur.LLCOccupancy}
	if mdt := cur.MonAt - prev.MonAt; mdt > 0 {
		s.MemBandwidthMBps = d(prev.MBMTotalBytes, cur.MBMTotalBytes) / 1e6 / mdt.Seconds()
	}
	return s, true
}
