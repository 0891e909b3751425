// Package workload starts, stops and lists workloads behind one small interface, so the
// Linux platform can run jobs as Docker containers (workload/docker) or as plain processes
// in their own cgroup (workload/process) with the same code. Every workload exposes its
// root PID and its cgroup directories: per-cgroup perf counters (package perf) and the
// resctrl PID sync (seed000.md §1.4) read them.
package workload

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"colo/machine"
)

// Labels colo puts on everything it creates, so that a restarted colo finds and removes
// what a crashed one left behind (anchors.md §3.B: "leave garbage" on SIGTERM).
const (
	LabelOwner = "colo.owner" // always "colo"
	LabelRun   = "colo.run"   // the run (benchmark) identifier
	LabelJob   = "colo.job"   // the job name inside the run
	OwnerValue = "colo"
)

// Mount is a host directory made visible inside the workload.
type Mount struct {
	Source   string // absolute host path
	Target   string // absolute path inside the workload
	ReadOnly bool
}

// Spec describes one workload to create.
type Spec struct {
	// Name is unique among running workloads; containers on the same network reach each
	// other by it. Letters, digits, '.', '_' and '-'.
	Name string
	// Image is the container image (workload/docker). It must exist locally: colo never
	// pulls. Empty for workload/process.
	Image string
	// Command is the argument vector (docker: appended to the image entrypoint;
	// process: Command[0] is the executable).
	Command []string
	Env     map[string]string
	// Cpuset pins the workload to CPUs, in cpuset list syntax ("0-3,8"). Empty: all.
	Cpuset string
	// MemoryBytes is a hard memory limit; 0 means none.
	MemoryBytes int64
	Mounts      []Mount
	Privileged  bool
	Labels      map[string]string
	// Aliases are extra names under which other workloads on the network reach this one.
	Aliases []string
	// CgroupParent is the parent cgroup of a container (docker's --cgroup-parent: a path,
	// or a slice name with the systemd driver); empty: the runtime's default. The process
	// runtime keeps its workloads under its own parent and refuses it.
	CgroupParent string
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// Validate checks the fields every runtime needs.
func (s Spec) Validate() error {
	if !nameRE.MatchString(s.Name) {
		return fmt.Errorf("workload name %q: use letters, digits, '.', '_' and '-' (first a letter or digit)", s.Name)
	}
	if s.Cpuset != "" {
		if _, err := machine.ParseCPUList(s.Cpuset); err != nil {
			return fmt.Errorf("workload %s: cpuset: %w", s.Name, err)
		}
	}
	if s.MemoryBytes < 0 {
		return fmt.Errorf("workload %s: memory limit %d is negative", s.Name, s.MemoryBytes)
	}
	for _, m := range s.Mounts {
		if len(m.Source) == 0 || m.Source[0] != '/' || len(m.Target) == 0 || m.Target[0] != '/' {
			return fmt.Errorf("workload %s: mount %q:%q: both paths must be absolute", s.Name, m.Source, m.Target)
		}
	}
	return nil
}

// State of a workload.
type State string

const (
	Created State = "created"
	Running State = "running"
	Exited  State = "exited"
)

// Exit is how a workload ended.
type Exit struct {
	Code      int
	OOMKilled bool
	// Error is the runtime's own error message, if any (e.g. the executable was missing).
	Error string
}

// Failed reports a non-zero exit code, an OOM kill or a runtime error.
func (e Exit) Failed() bool { return e.Code != 0 || e.OOMKilled || e.Error != "" }

func (e Exit) String() string {
	s := fmt.Sprintf("exit code %d", e.Code)
	if e.OOMKilled {
		s += " (killed: out of memory)"
	}
	if e.Error != "" {
		s += ": " + e.Error
	}
	return s
}

// Info is the observed state of one workload.
type Info struct {
	ID     string
	Name   string
	State  State
	PID    int // root PID in the host PID namespace; 0 unless running
	Cgroup Cgroup
	Cpuset string
	Labels map[string]string
	// Exit is valid when State is Exited.
	Exit       Exit
	StartedAt  time.Time
	FinishedAt time.Time
}

// Stats is one sample of a workload's resource usage. Counters are cumulative since the
// workload started; rates come from the difference of two samples (CPUCores).
type Stats struct {
	Time          time.Time
	CPUTotalNs    uint64   // CPU time of all tasks, user+system
	PerCPUNs      []uint64 // per CPU, when the runtime reports it
	MemoryBytes   uint64   // current usage, page cache excluded where the runtime says so
	MemoryLimit   uint64
	NetRxBytes    uint64
	NetTxBytes    uint64
	BlockRead     uint64
	BlockWrite    uint64
	OnlineCPUs    int
	Cpuset        string // assigned cores
	PIDs          uint64
	NetAvailable  bool // false for runtimes that share the host network (process)
	BlkAvailable  bool
	MemAvailable  bool
	CPUAvailable  bool
	PerCPUPresent bool
}

// CPUCores is the average number of cores a workload used between two samples:
// ΔCPUTotalNs / Δwall-clock ns (the Docker CLI's CPU % divided by 100). NaN when the
// samples are not ordered in time or CPU time went backwards (a restarted workload).
func CPUCores(prev, cur Stats) float64 {
	dt := cur.Time.Sub(prev.Time)
	if dt <= 0 || cur.CPUTotalNs < prev.CPUTotalNs || !cur.CPUAvailable || !prev.CPUAvailable {
		return nan()
	}
	return float64(cur.CPUTotalNs-prev.CPUTotalNs) / float64(dt.Nanoseconds())
}

// Runtime creates and controls workloads. Implementations are safe for concurrent use.
type Runtime interface {
	// Name is "docker" or "process".
	Name() string
	// Create prepares a workload without starting it and returns its ID.
	Create(ctx context.Context, s Spec) (string, error)
	Start(ctx context.Context, id string) error
	// Stop asks the workload to terminate (SIGTERM) and kills it after grace.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// Remove deletes a workload, killing it if it still runs. Removing an unknown ID
	// returns an error wrapping ErrNotFound.
	Remove(ctx context.Context, id string) error
	// Wait blocks until the workload exits and returns how it ended.
	Wait(ctx context.Context, id string) (Exit, error)
	Inspect(ctx context.Context, id string) (Info, error)
	// List returns the colo-owned workloads carrying all the given labels (nil: all
	// colo-owned, from any run).
	List(ctx context.Context, labels map[string]string) ([]Info, error)
	// Stats takes one sample of resource usage.
	Stats(ctx context.Context, id string) (Stats, error)
	// SetCpuset re-pins a running workload to cpus (cpuset list syntax).
	SetCpuset(ctx context.Context, id string, cpus string) error
	// SetCPUQuota lets a running workload run quota of CPU time per period, summed over
	// its CPUs, with CFS bandwidth control (cgroup v1 cpu.cfs_quota_us and
	// cpu.cfs_period_us, v2 cpu.max; CFSQuota computes it); quota 0 removes the limit.
	SetCPUQuota(ctx context.Context, id string, quota, period time.Duration) error
	Close() error
}

// ErrNotFound is wrapped by errors about workloads or images that do not exist.
var ErrNotFound = errors.New("not found")

// ErrUnavailable is wrapped when the runtime itself cannot be reached (Docker not running).
var ErrUnavailable = errors.New("runtime unavailable")
