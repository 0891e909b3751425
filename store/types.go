// Package store keeps the results of colo runs: a run directory holding a small run.json
// manifest and one embedded SQLite database (colo.db, pure Go, no server, no cgo).
//
// One run directory may hold several scheduler runs of the same trace (colo run --compare):
// each is a Run with its own ID, and every row of every table carries its run_id.
//
// Times are offsets from the run's start (virtual time on sim, wall time on linux) kept
// as nanoseconds. Measurements that are unavailable on a host (no PMU, no RDT) are NaN in
// Go and NULL in the database, so "unavailable" never reads as 0.
//
// Column names are stable: exports (colo export) and the InfluxDB sink use the same names,
// documented in docs/report.md.
package store

import (
	"math"
	"time"
)

// Unset marks a job time (Start, Stop) that has not happened.
const Unset time.Duration = -1

// FormatVersion identifies the layout of run.json and colo.db.
const FormatVersion = "colo-run/1"

// Meta describes a run directory: what was run, where, and with which seed.
type Meta struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	BenchFile   string            `json:"bench_file,omitempty"` // the benchmark YAML, if any
	Kind        string            `json:"kind,omitempty"`       // "run" (orchestrator) or "partition"
	Machine     string            `json:"machine,omitempty"`    // machine profile or detected host
	Platform    string            `json:"platform,omitempty"`   // "sim" or "linux"
	Seed        int64             `json:"seed"`
	Command     []string          `json:"command,omitempty"` // argv that produced the run
	Created     time.Time         `json:"created"`           // wall-clock creation time (UTC)
	Labels      map[string]string `json:"labels,omitempty"`
}

// Manifest is run.json: Meta plus the file format, the database file name and whether the
// run finished. A killed run leaves Complete false.
type Manifest struct {
	Format string `json:"format"`
	Meta
	Database string    `json:"database"`
	Complete bool      `json:"complete"`
	Finished time.Time `json:"finished,omitzero"`
	// Interrupted says why an incomplete run stopped early ("SIGINT", "SIGTERM"); empty
	// for a complete run and for a killed one (SIGKILL, a crash), which leaves no word.
	Interrupted string   `json:"interrupted,omitempty"`
	Schedulers  []string `json:"schedulers,omitempty"`
}

// Run is one scheduler's execution of the trace inside a run directory.
type Run struct {
	ID        int64     `json:"run_id"`
	Scheduler string    `json:"scheduler"`
	Trace     string    `json:"trace,omitempty"` // trace identity, e.g. the bench name + seed
	Start     time.Time `json:"start"`           // absolute time of offset 0 (sink timestamps)
	Complete  bool      `json:"complete"`        // set by Finish
}

// Job is one container/job of a run, upserted as it moves through its states.
type Job struct {
	ID         int           `json:"job_id"`
	Name       string        `json:"name"`
	Kind       string        `json:"kind,omitempty"`  // e.g. single-thread, multi-thread
	Model      string        `json:"model,omitempty"` // workload model or image
	Priority   bool          `json:"priority"`
	IPCETarget float64       `json:"ipce_target"` // fraction in (0,1]; NaN when the job has none
	Cores      int           `json:"cores"`
	CoreList   string        `json:"core_list,omitempty"` // e.g. "0-1,8"
	Socket     int           `json:"socket"`              // -1 when not placed
	Arrival    time.Duration `json:"arrival_ns"`
	Start      time.Duration `json:"start_ns"` // Unset when never started
	Stop       time.Duration `json:"stop_ns"`  // Unset when not stopped
	State      string        `json:"state"`    // queued, running, completed, rejected, killed, expired, not-started (docs/report.md)
	Reason     string        `json:"reason,omitempty"`
}

// Sample is one collector tick of one job. Counts (instructions … stalls, LLC refs/misses,
// memory bytes) cover the interval (T−Interval, T]; occupancy is the value at T. IPC, IPCE
// and Stalled come from package metric (IPCE and Stalled are fractions in [0,1]).
// NaN means unavailable.
type Sample struct {
	Job            int           `json:"job_id"`
	T              time.Duration `json:"t_ns"`
	Interval       time.Duration `json:"interval_ns"`
	Socket         int           `json:"socket"`
	Instructions   float64       `json:"instructions"`
	Cycles         float64       `json:"cycles"`
	StallsTotal    float64       `json:"stalls_total"`
	StallsL3Miss   float64       `json:"stalls_l3_miss"`
	LLCRefs        float64       `json:"llc_refs"`
	LLCMisses      float64       `json:"llc_misses"`
	OccupancyBytes float64       `json:"llc_occupancy_bytes"`
	MemBytesLocal  float64       `json:"mem_bytes_local"`
	MemBytesTotal  float64       `json:"mem_bytes_total"`
	IPC            float64       `json:"ipc"`
	IPCE           float64       `json:"ipce"`
	Stalled        float64       `json:"stalled"`
}

// MemBandwidth is MemBytesTotal / Interval in bytes per second (NaN when unavailable).
func (s Sample) MemBandwidth() float64 {
	if s.Interval <= 0 {
		return math.NaN()
	}
	return s.MemBytesTotal / s.Interval.Seconds()
}

// Allocation records that from T on, class of service CLOS on Socket (L3/MBA domain)
// holds capacity bitmask Mask and MBA percentage MBA with the given member jobs.
// Mask 0 means the class was removed from that socket. Source tells who reported it:
// "sched" (what the scheduler applied) or "readback" (what the collector read back).
type Allocation struct {
	T       time.Duration `json:"t_ns"`
	Socket  int           `json:"socket"`
	CLOS    string        `json:"clos"`
	Mask    uint64        `json:"mask"`
	MBA     float64       `json:"mba"` // percent; NaN when MBA is not controlled
	Members []int         `json:"members"`
	Source  string        `json:"source,omitempty"`
}

// Event is a scheduler decision or a marker: placement, rebalance, probe start, rejection…
// Job is -1 when the event concerns no single job.
type Event struct {
	T    time.Duration `json:"t_ns"`
	Kind string        `json:"kind"`
	Job  int           `json:"job_id"`
	Text string        `json:"text"`
}

// ProbeSegment is one measured combination of an allocation probe (or a warm-up /
// cool-down segment): which ways/mask and MBA the job held from Start to End, and what it
// achieved. Result is e.g. "measured", "warmup", "cooldown", "best", "break", "failed".
type ProbeSegment struct {
	Job    int           `json:"job_id"`
	Start  time.Duration `json:"t_start_ns"`
	End    time.Duration `json:"t_end_ns"`
	Kind   string        `json:"kind"` // allocation, sensitivity …
	Socket int           `json:"socket"`
	Ways   int           `json:"ways"`
	Mask   uint64        `json:"mask"`
	MBA    float64       `json:"mba"`
	IPC    float64       `json:"ipc"`
	IPCE   float64       `json:"ipce"`
	Result string        `json:"result"`
}

// PartitionApp is one application's outcome inside a partitioning result.
type PartitionApp struct {
	App      string  `json:"app"`
	Cluster  int     `json:"cluster"` // cluster/partition index, -1 if none
	Ways     int     `json:"ways"`
	Mask     uint64  `json:"mask"`
	IPCAlone float64 `json:"ipc_alone"`
	IPC      float64 `json:"ipc"`
	Slowdown float64 `json:"slowdown"`
}

// PartitionResult is one (workload, policy) outcome of `colo partition`.
type PartitionResult struct {
	Workload   string         `json:"workload"`
	Policy     string         `json:"policy"`
	STP        float64        `json:"stp"`
	ANTT       float64        `json:"antt"`
	Unfairness float64        `json:"unfairness"`
	Jain       float64        `json:"jain"`
	Apps       []PartitionApp `json:"apps"`
}

// Summary is a scheduler run's headline, with the stable keys of `colo run --json`
// (issue #5 item 6). IPCE values are percent; time-over-target values are fractions.
type Summary struct {
	Name              string             `json:"name"`
	PriorityIPCE      float64            `json:"priority_ipce"`
	BatchIPCE         float64            `json:"batch_ipce"`
	GlobalIPCE        float64            `json:"global_ipce"`
	TimeOverTarget    float64            `json:"time_over_target"`
	TimeOverTargetP90 float64            `json:"time_over_target_p90"`
	JobsCompleted     int                `json:"jobs_completed"`
	JobsRejected      int                `json:"jobs_rejected"`
	QueueDelayMean    float64            `json:"queue_delay_mean_s"`
	QueueDelayP90     float64            `json:"queue_delay_p90_s"`
	VirtualSeconds    float64            `json:"virtual_seconds"`
	WallSeconds       float64            `json:"wall_seconds"`
	Extra             map[string]float64 `json:"extra,omitempty"`
	// Notes say what the run could not do on its platform (e.g. IPCE unavailable); the
	// key is absent when there is nothing to say.
	Notes []string `json:"notes,omitempty"`
}
