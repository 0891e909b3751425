// Package platform is the one interface of the worlds colo runs in — the simulated twin
// (platform/sim) and a Linux host (platform/linux) — and the optional capabilities a
// platform may add, found by type assertion the way containerd's NRI stub finds which
// hooks a plugin implements: the benchmark run loop (bench), the sensitivity probe
// (probe/platprobe) and the tools built on them ask a Platform for what they need and
// say what is missing, never branching on which platform it is.
//
// The core is a machine, jobs started, stopped and moved on it, and the platform's time.
// The capabilities are
//
//	AllocationApplier  resctrl allocations of jobs and system/default (the group planner)
//	CounterSampler     a job's cumulative counters
//	CounterReporter    whether those counters can give IPCE
//	CLOSBudgeter       the control-group budget and other agents' ways on the mount
//	QuotaSetter        CPU-time limits (CFS bandwidth)
//	NeighbourRunner    stressors next to a job (the sensitivity probe's neighbour)
package platform

import (
	"time"

	"colo/counter"
	"colo/machine"
	"colo/sched"
)

// AllocationReading is a job's allocation as read back from resctrl, independently of
// what the scheduler decided (seed000.md §1.3: the collector catches failed allocations).
type AllocationReading struct {
	Group string // resctrl control group ("" for system/default)
	Mask  uint64 // L3 mask on the job's socket
	MBA   int    // MB value on the job's socket
}

// Platform is where jobs run: the simulated testbed (platform: sim, the default) or a
// real Linux host with Docker, perf and resctrl (platform: linux). Its methods are called
// from one goroutine.
//
// Time is the platform's: Now is the time since the run started and Advance moves it
// forward (the simulator steps its model; a real host waits on the wall clock).
type Platform interface {
	// Machine is the machine the platform runs on.
	Machine() *machine.Profile
	// Check validates a job before anything starts (its image exists, its workload
	// model is known...). The error names what to fix.
	Check(j Job) error
	// Start starts job j pinned to cpus (all on one socket) in system/default.
	Start(j Job, cpus []int) error
	// Stop stops a job (and removes its resctrl groups).
	Stop(id int) error
	// Move re-pins a running job to cpus (possibly on another socket); the job returns
	// to system/default on the new socket.
	Move(id int, cpus []int) error
	// Now is the platform's time since the start of the run.
	Now() time.Duration
	// Advance moves time to t (≥ Now) and lets the jobs run.
	Advance(t time.Duration) error
	// Close stops everything and restores resctrl.
	Close() error
}

// AllocationApplier is implemented by platforms that partition the cache and memory
// bandwidth (resctrl, through the group planner resctrl/plan).
type AllocationApplier interface {
	// SetAllocation puts a running job into its own control group with L3 mask `mask`
	// and MBA `mba` on socket `socket` through resctrl; mask 0 returns it to
	// system/default (its group is removed).
	SetAllocation(id, socket int, mask uint64, mba int) error
	// SetDefaultMask sets system/default's L3 mask on one socket.
	SetDefaultMask(socket int, mask uint64) error
	// ReadAllocation reads a job's allocation back from resctrl.
	ReadAllocation(id int) (AllocationReading, error)
}

// CounterSampler is implemented by platforms that read jobs' counters.
type CounterSampler interface {
	// Read returns a job's cumulative counters (the caller stamps the times).
	Read(id int) (counter.Reading, error)
}

// CounterReporter is implemented by platforms that know before a run whether their
// counters can give IPCE (cycles and stall cycles: a hardware PMU with the
// microarchitecture's raw stall events). The simulator always can; a VM without a PMU
// cannot.
type CounterReporter interface {
	// IPCEUnavailable returns "" when IPCE can be measured, else why not (and how to
	// fix it).
	IPCEUnavailable() string
}

// CLOSBudgeter is implemented by platforms that know their resctrl mount's control-group
// budget: the run loop passes it to the scheduler in every Observation (sched.CLOSBudget;
// Budgets).
type CLOSBudgeter interface {
	// CLOSBudget returns, per socket, how many control groups the run may hold and the
	// ways other agents' groups claim.
	CLOSBudget() []sched.CLOSBudget
}

// QuotaSetter is implemented by platforms that can limit a job's CPU time (the run loop
// applies sched.QuotaChange decisions through it; elsewhere they are ignored with a warning).
type QuotaSetter interface {
	// SetQuota lets job id run quota ∈ (0, 1] of its cores' time (1: no limit).
	SetQuota(id int, quota float64) error
}

// Private is implemented by platforms whose instances share nothing — no host, no files,
// no global state (the simulated testbed): several can run at once in one process
// (bench.RunAll runs one scheduler on each, side by side).
type Private interface {
	Private()
}

// CPUQuotaUnavailable says why pf cannot apply CPU quotas, or "" when it can.
func CPUQuotaUnavailable(pf Platform) string {
	if _, ok := pf.(QuotaSetter); ok {
		return ""
	}
	return "the platform has no CPU-quota actuator"
}

// IPCEUnavailable asks pf whether IPCE can be measured: "" when it can or when pf does
// not say (CounterReporter), else the platform's reason.
func IPCEUnavailable(pf Platform) string {
	if c, ok := pf.(CounterReporter); ok {
		return c.IPCEUnavailable()
	}
	return ""
}

// NeighbourRunner is implemented by platforms that can run a stressor next to a job (the
// sensitivity probe's neighbour, seed000.md §2.6).
type NeighbourRunner interface {
	// StartNeighbour runs stressor kind (probe.Stressors: llc, mem-read, ...) on cpus,
	// in the control group of job alongside (so that an isolated probe's partition holds
	// both), and returns the function that stops and removes it.
	StartNeighbour(alongside int, kind string, cpus []int) (stop func() error, err error)
}
