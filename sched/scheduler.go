// Package sched holds node scheduling: the RDT accountant (exclusive ways and MBA budget
// per socket with a system/default reserve), best-fit contiguous way masks,
// consolidation, and the schedulers — least-loaded (thesis Algorithm 4) and dynamic
// (thesis Algorithm 3) — behind one small Scheduler interface that other policies
// (dCat, LFOC+, Virtual Platforms) implement too.
//
// A Scheduler is a pure, deterministic state machine: the run loop (package bench) hands
// it an Observation every tick and applies the Decisions it returns through the
// platform. It never reads a clock, sleeps or touches resctrl.
package sched

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gopkg.in/yaml.v3"

	"colo/internal/registry"
	"colo/machine"
	"colo/metric"
	"colo/probe"
)

// Job is what a scheduler is told about a job: its request. The trace's kind and
// sensitivity labels are deliberately not here (seed000.md §1.2: not given to the scheduler).
type Job struct {
	ID    int
	Name  string
	Cores int   // number of cores requested
	CPUs  []int // pinned cores (len == Cores) or nil: the run loop picks cores on the socket
	// Priority marks a job that should get exclusive resources (an explicit hint).
	Priority bool
	// IPCETarget is the job's IPCE target as a fraction in (0, 1]; 0 when none.
	IPCETarget float64
	Arrival    time.Duration
	// SLOms is the job's latency SLO in ms (a p99 its samples report in LatencyMs); 0: none.
	SLOms float64
	// MBAMBps is the memory bandwidth the job asks for in MB/s (the run loop holds it with
	// policy/mbps whatever the scheduler); 0: none.
	MBAMBps float64
}

// Sample is one collector interval of a running job: counter deltas over Interval plus
// RDT monitoring at its end.
type Sample struct {
	Interval time.Duration
	// At is when the sample was taken (the end of Interval), on the run's clock.
	At            time.Duration
	Instructions  float64
	Cycles        float64
	StallsTotal   float64
	StallsL3Miss  float64
	LLCReferences float64
	LLCMisses     float64
	L1References  float64 // retired loads (dCat's l1_ref, seed003.md)
	// L2Misses are requests that missed the private L2 (VP's MF = LLCMisses / L2Misses,
	// seed004.md §2.1); 0 when the platform has no such counter (linux: a raw event per
	// microarchitecture in perf/events.yaml, none without a PMU), and then LLC references
	// stand in (every L2 miss is one).
	L2Misses float64
	// LLCOccupancy is resctrl llc_occupancy in bytes at the end of the interval.
	LLCOccupancy float64
	// MemBandwidthMBps is the mbm_total_bytes rate over the interval (10^6 B/s).
	MemBandwidthMBps float64
	// LatencyMs is the job's p99 request latency over the interval in ms (0: the job
	// reports none): a simulated server's M/M/1 tail (metric.MM1P99), or the agent's
	// scrape of the job's own metric.
	LatencyMs float64
}

// IPC of the interval (metric.IPC).
func (s Sample) IPC() float64 { return metric.IPC(s.Instructions, s.Cycles) }

// IPCE of the interval as a fraction (metric.IPCE).
func (s Sample) IPCE() float64 { return metric.IPCE(s.StallsTotal, s.Cycles) }

// L3MissStallPercent is StallsL3Miss/StallsTotal × 100 (metric.L3MissStallShare), the
// thesis's StallsL3MissPercent.
func (s Sample) L3MissStallPercent() float64 {
	return 100 * metric.L3MissStallShare(s.StallsL3Miss, s.StallsTotal)
}

// Running is a job the run loop has started.
type Running struct {
	Job
	Socket  int
	Placed  []int         // the cores it runs on
	Started time.Duration // admission time
	Mask    uint64        // its current L3 mask (0: system/default)
	MBA     int           // its current MBA (0: system/default)
	Last    *Sample       // latest collector sample; nil before the first
}

// Observation is everything a scheduler sees at one tick.
type Observation struct {
	Now time.Duration
	// Queue holds the jobs that arrived and wait for admission, in arrival order.
	Queue []Job
	// Running is every started job, ordered by ID.
	Running []Running
	// Finished lists the jobs that ended (or were stopped) since the previous tick.
	Finished []int
	// FreeCPUs lists, per socket, the cores no job runs on, ascending.
	FreeCPUs [][]int
	// ProbeResults are the allocation probes that ended since the previous tick.
	ProbeResults []ProbeResult
	// CLOS is, per socket, what the platform's resctrl mount leaves the run: how many
	// control groups it may hold there and the ways other agents' groups claim (never
	// free for an exclusive allocation). Nil: unknown (no limit).
	CLOS []CLOSBudget
}

// CLOSBudget is the resctrl budget of one socket (resctrl/plan.Budget): at most Groups
// control groups with a job there (the usable CLOSIDs less system/default's and other
// agents' groups'; jobs asking for identical values share one), and Foreign, the ways
// other agents claim.
//
// The zero value is an unknown budget: no limit on groups (a platform that cannot tell;
// Observation.CLOS nil means the same on every socket). A known budget says so in
// Limited, and then Groups is a limit, 0 included (other agents hold every CLOSID): the
// accountant and the controllers ask Allows, never Groups alone.
type CLOSBudget struct {
	Limited bool
	Groups  int
	Foreign uint64
}

// GroupBudget is a known budget of groups control groups (a negative count is 0) with
// the ways other agents claim.
func GroupBudget(groups int, foreign uint64) CLOSBudget {
	return CLOSBudget{Limited: true, Groups: max(groups, 0), Foreign: foreign}
}

// Allows reports whether n control groups fit the budget (always, when it is unknown).
func (b CLOSBudget) Allows(n int) bool { return !b.Limited || n <= b.Groups }

// String is "N groups" or "unlimited groups", with the foreign ways when there are any.
func (b CLOSBudget) String() string {
	s := "unlimited groups"
	if b.Limited {
		s = fmt.Sprintf("%d groups", b.Groups)
	}
	if b.Foreign != 0 {
		s += fmt.Sprintf(", foreign ways %#x", b.Foreign)
	}
	return s
}

// ProbeResult is a finished allocation probe of one job (see package probe).
type ProbeResult struct {
	Job int
	probe.Result
}

// Placement starts a queued job on a socket; the run loop picks the cores (or uses the
// job's pinned CPUs).
type Placement struct {
	Job    int
	Socket int
}

// Migration moves a running job to another socket (rebalancing).
type Migration struct {
	Job    int
	Socket int
}

// Repin moves a running job to exactly the cores CPUs (free or its own, as many as it has,
// on one socket): another core of its LLC domain, or a pinned job's move to another socket.
// The job leaves its class of service, as a migration does.
type Repin struct {
	Job  int
	CPUs []int
}

// QuotaChange sets a running job's CPU quota: the fraction of its cores' time it may run
// (a CFS bandwidth limit; VP's CPU cap, seed004.md §2.5). 1 removes the limit.
type QuotaChange struct {
	Job   int
	Quota float64
}

// Allocation sets a running job's resctrl allocation on its socket: an L3 capacity
// bitmask and an MBA percentage. Mask 0 returns the job to system/default.
type Allocation struct {
	Job    int
	Socket int
	Mask   uint64
	MBA    int
	// Reason is a short word for the decision log (probe, result, consolidate, release…).
	Reason string
}

// ProbeRequest asks the run loop to sweep a job's allocation inside Buffer (a contiguous
// mask the scheduler has reserved for it) with MBA up to MaxMBA, using Config.
type ProbeRequest struct {
	Job    int
	Socket int
	Buffer uint64
	MaxMBA int
	Config probe.Config
}

// Rejection drops a queued job that can never be admitted.
type Rejection struct {
	Job    int
	Reason string
}

// Decisions is what a scheduler asks the run loop to do, applied in this order:
// rejections, placements, migrations, re-pins, CPU quotas, allocations (in slice order),
// probes.
type Decisions struct {
	Reject   []Rejection
	Place    []Placement
	Migrate  []Migration
	Repin    []Repin
	Quota    []QuotaChange
	Allocate []Allocation
	Probe    []ProbeRequest
	// DefaultMask optionally sets system/default's L3 mask per socket; when a socket is
	// absent the run loop gives system/default every way no job's mask holds.
	DefaultMask map[int]uint64
	// Log lines explain the decisions (stored in the run's decision log).
	Log []string
	// ConsolidatedWays counts the ways whose cached lines moved groups lost this tick.
	ConsolidatedWays int
	// Events are the policy's actions with their evidence (the guard's throttles, undos,
	// growth): the run loop records each as an event of Kind for Job (-1: none).
	Events []Event
}

// Event is one policy action and its evidence.
type Event struct {
	Kind string
	Job  int
	Text string
}

// Scheduler is a node scheduling policy.
type Scheduler interface {
	// Name is the registered name.
	Name() string
	// Tick consumes one observation and returns the decisions. It must be deterministic.
	Tick(obs *Observation) Decisions
}

// Config is the benchmark YAML's scheduler block, shared by all schedulers.
type Config struct {
	Implementation string
	RDT            bool
	// Tick is the scheduler's period.
	Tick time.Duration
	// ReserveWays and ReserveMBA stay with system/default on every socket.
	ReserveWays, ReserveMBA int
	// Rebalance enables batch rebalancing (thesis "balancing and swap option").
	Rebalance          bool
	RebalanceCooldown  time.Duration
	RebalanceThreshold float64 // summed StallsL3Miss% difference that triggers a move
	RebalanceMinGain   float64 // minimal improvement of that difference per move
	Probe              probe.Config
	// Defragment consolidates a socket as soon as its free ways are not one contiguous
	// run (after a release), instead of only when a request does not fit; system/default
	// can then use every free way, at the cost of the moved groups' cached lines.
	Defragment bool
	// Reprobe probes an allocated priority job again when, after its probe met the
	// threshold, a collector sample taken entirely under its settled allocation falls
	// below that threshold (a phase change, seed000.md §2.3 and thesis §5.1.3), at the
	// earliest Probe.CooldownT after its previous probe ended.
	Reprobe bool
	// ForceMove evicts the smallest batch jobs of a socket to another socket when a
	// priority job at the head of the queue fits on no socket (thesis "balancing and
	// swap option", [repo] force_move_for_priority_admission, seed000.md §2.3).
	ForceMove bool
	// Options holds implementation-specific keys (scheduler.options in YAML); a factory
	// must reject keys it does not know.
	Options map[string]any
	// OptionsNode is scheduler.options as the benchmark file gives it (nil when Options
	// was built in code): controllers decode it into typed options with file lines
	// (policy/ctlsched.Decode).
	OptionsNode *yaml.Node
}

// DefaultConfig is the thesis evaluation's scheduler configuration (seed000.md §2.3 [repo]):
// tick 1 s, reserve 1 way + 10 %, rebalancing on with cooldown 2 s, threshold 5, gain 1;
// re-probing and forced moves for priority admission on (the evaluation enabled the
// "balancing and swap option" and re-probed in Low Demand, thesis §5.1).
func DefaultConfig() Config {
	return Config{Implementation: "least-loaded", Tick: time.Second,
		ReserveWays: DefaultReserveWays, ReserveMBA: DefaultReserveMBA,
		Rebalance: true, RebalanceCooldown: 2 * time.Second, RebalanceThreshold: 5, RebalanceMinGain: 1,
		Reprobe: true, ForceMove: true, Probe: probe.DefaultConfig()}
}

// Env is what a factory gets to build a scheduler.
type Env struct {
	Machine *machine.Profile
	Config  Config
	// IPCEUnavailable is non-empty when the platform cannot measure IPCE (no hardware
	// PMU or no stall events: software counters only) and says why. Schedulers that
	// need IPCE (allocation probing) must then not try.
	IPCEUnavailable string
	// CPUQuotaUnavailable is non-empty when the platform cannot limit a job's CPU time
	// (QuotaChange decisions are ignored there) and says why.
	CPUQuotaUnavailable string
}

// Factory builds a scheduler; it validates Config (including Options) and says what to fix.
type Factory func(Env) (Scheduler, error)

var schedulers = registry.New[Factory]("sched: scheduler")

// Register makes a scheduler available by name (`scheduler: {implementation: NAME}`).
// Call it from an init function; registering a name twice panics.
func Register(name string, f Factory) { schedulers.Register(name, f) }

// Names lists the registered schedulers, sorted.
func Names() []string { return schedulers.Names() }

// New builds the named scheduler.
func New(name string, env Env) (Scheduler, error) {
	f, ok := schedulers.Get(name)
	if !ok {
		return nil, fmt.Errorf("unknown scheduler %q (known: %v)", name, Names())
	}
	if env.Machine == nil {
		return nil, fmt.Errorf("scheduler %q: no machine", name)
	}
	return f(env)
}

// NeverFits says why a job can never be placed on this machine by a socket-level
// scheduler, or "" if it can: more cores than a socket has, or pinned cores that do not
// exist or span sockets.
func NeverFits(j Job, m *machine.Profile) string {
	if len(j.CPUs) > 0 {
		s := -1
		for _, c := range j.CPUs {
			if c < 0 || c >= m.Cores() {
				return fmt.Sprintf("pinned core %d does not exist (0..%d)", c, m.Cores()-1)
			}
			if s >= 0 && m.SocketOfCore(c) != s {
				return "pinned cores span sockets; a job runs on one socket"
			}
			s = m.SocketOfCore(c)
		}
		return ""
	}
	if j.Cores < 1 {
		return "requests no cores"
	}
	if j.Cores > m.CoresPerSocket {
		return fmt.Sprintf("requests %d cores but a socket has %d", j.Cores, m.CoresPerSocket)
	}
	return ""
}

// Fits says whether job j can start on socket s given the free cores.
func Fits(j Job, s int, free [][]int) bool {
	if s < 0 || s >= len(free) {
		return false
	}
	if len(j.CPUs) == 0 {
		return len(free[s]) >= j.Cores
	}
	for _, c := range j.CPUs {
		found := false
		for _, f := range free[s] {
			if f == c {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Take removes the cores job j will use from free[s] (a copy of the free cores kept by a
// scheduler that places several jobs in one tick): its pinned cores, or the first j.Cores
// free ones.
func Take(j Job, s int, free [][]int) {
	if len(j.CPUs) == 0 {
		free[s] = free[s][min(j.Cores, len(free[s])):]
		return
	}
	keep := free[s][:0:0]
	for _, f := range free[s] {
		if !slices.Contains(j.CPUs, f) {
			keep = append(keep, f)
		}
	}
	free[s] = keep
}

// CopyFree copies the free cores of an observation (for Take).
func CopyFree(free [][]int) [][]int {
	out := make([][]int, len(free))
	for i, f := range free {
		out[i] = append([]int(nil), f...)
	}
	return out
}

func nanTo(x, v float64) float64 {
	if math.IsNaN(x) {
		return v
	}
	return x
}
