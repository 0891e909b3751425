// Package linux is the `platform: linux` adapter of the orchestrator (bench.Platform):
// each job runs as a Docker container (or a plain process in its own cgroup), pinned to
// the cores the scheduler chose; its counters come from perf_event_open on the
// container's cgroup (hardware events, or software events without a PMU), its CPU time
// and Docker stats from the runtime, and its cache occupancy and memory traffic from a
// resctrl monitoring group. Allocations are resctrl control groups (CLOS); the PIDs and
// threads of every container are synced into its groups at each sample, because
// containers fork (seed000.md §1.4).
//
// Everything the platform creates carries colo's labels or its instance's resctrl prefix
// and is recorded in its journal (resctrl/journal) before it is created; on start it
// removes what dead colo runs left (containers, networks, the resctrl groups their
// journals name, system/default as they found it), and Close removes everything it
// created. Several runs may share a host and a resctrl mount.
//
// Files: lifecycle.go (New, reconcile, Close), jobs.go (containers: Start, Stop, Move,
// quota), alloc.go (resctrl through the group planner resctrl/plan), counters.go (perf,
// CPU time, runtime statistics, monitoring), cleanup.go (colo cleanup).
package linux

import (
	"context"
	"fmt"
	"sync"
	"time"

	"colo/bench"
	"colo/counter"
	"colo/machine"
	"colo/perf"
	"colo/platform"
	"colo/resctrl/alloc"
	"colo/resctrl/journal"
	"colo/workload"
	"colo/workload/docker"
)

// Options configure the platform.
type Options struct {
	// ResctrlRoot is the resctrl mount (--resctrl-root): "" uses $COLO_RESCTRL_ROOT,
	// else /sys/fs/resctrl when mounted; "none" disables RDT.
	ResctrlRoot string
	// RDT overrides ResctrlRoot with a ready client (tests).
	RDT RDT
	// Image is used for jobs without an image (default colo:latest).
	Image string
	// Runtime is "docker" (default) or "process" ("" uses $COLO_RUNTIME).
	Runtime string
	// StateDir holds the lock and crash-recovery state (default /run/colo).
	StateDir string
	// Self is the colo executable the process runtime runs for colo-image jobs
	// (default os.Executable()).
	Self string
	// Logf receives notes about unavailable sources and cleanup (default log.Printf).
	Logf func(format string, args ...any)
	// StopGrace is how long a stopped container may take to exit (default 2 s).
	StopGrace time.Duration
	// PerfSys replaces perf's system calls (tests: a fake PMU); nil: the kernel.
	PerfSys perf.Sys
	// Microarch selects the raw stall events ("" detects from /proc/cpuinfo).
	Microarch string
	// StartGrace is how long Start watches a new workload for an immediate exit
	// (default 150 ms).
	StartGrace time.Duration
	// Machine, when set, replaces the machine detected from sysfs and the resctrl mount
	// (tests: an AMD machine with one L3 domain per CCX on the in-process emulator).
	Machine *machine.Profile
	// Runtime0, when set, replaces the runtime Runtime names (tests: a fake runtime).
	Runtime0 workload.Runtime
	// Prefix names this instance's resctrl groups (default colo.<run>.; tests give two
	// platforms the same one to compare their trees).
	Prefix string
	// Opened, when set, is called with the platform at the end of a successful New
	// (tests: inspect the platform `colo run` builds through the registered factory).
	Opened func(*Platform)
}

// Defaults are the options `colo run` uses for platform: linux; commands set
// ResctrlRoot from --resctrl-root.
var Defaults = Options{}

func init() {
	bench.RegisterPlatform("linux", func(bm *bench.Benchmark) (bench.Platform, error) {
		o := Defaults
		if bm != nil && bm.ResctrlRoot != "" {
			o.ResctrlRoot = bm.ResctrlRoot // colo run --resctrl-root
		}
		return New(bm, o)
	})
}

type job struct {
	spec    platform.Job
	rid     string // runtime ID
	cpus    []int
	socket  int
	cg      workload.Cgroup
	counter *perf.Counter
	cputime *workload.CPUTime
	base    counter.Reading // counts of counters closed by Move
	quota   float64         // CPU quota (fraction of its cores' time; 0 or 1: none)
	done    chan struct{}

	mu           sync.Mutex
	stopping     bool
	exited       bool
	exit         workload.Exit
	exitReported bool
	stats        workload.Stats
	statsN       int
	statsErr     string
	lastCPU      time.Duration
}

// Platform implements bench.Platform on this host.
type Platform struct {
	o       Options
	m       *machine.Profile
	rtm     workload.Runtime
	dock    *docker.Runtime
	rdt     RDT
	run     string
	network string
	start   time.Time
	jr      *journal.Journal // this instance's record of what it changes on the mount
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu     sync.Mutex
	jobs   map[int]*job
	notes  []string
	closed bool
	noIPCE string // why IPCE cannot be measured here ("" it can)
	noL2   string // why L2 misses cannot be counted here ("" they can)

	prefix string           // names this instance's resctrl groups (colo.<run>.)
	al     *alloc.Allocator // every job's wish and placement (tenant j<ID>); nil without resctrl
}

// The capabilities of a Linux host (package platform).
var (
	_ bench.Platform           = (*Platform)(nil)
	_ platform.CounterReporter = (*Platform)(nil)
	_ platform.QuotaSetter     = (*Platform)(nil)
	_ platform.CLOSBudgeter    = (*Platform)(nil)
)

func (p *Platform) notef(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	p.mu.Lock()
	p.notes = append(p.notes, s)
	p.mu.Unlock()
	p.o.Logf("linux: %s", s)
}

// Notes returns what the platform recorded about unavailable sources, unexpected
// exits and cleanup, in order.
func (p *Platform) Notes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.notes...)
}

// RunID is the label value (colo.run) of everything this platform created.
func (p *Platform) RunID() string { return p.run }

// Machine implements platform.Platform.
func (p *Platform) Machine() *machine.Profile { return p.m }
