// Package export writes the tables of a colo run directory as CSV, JSON Lines or Parquet
// for analysis in pandas, DuckDB or a spreadsheet, and reads them back.
//
// One file per table (runs, jobs, samples, allocations, events, probes, partitions,
// partition_apps, summaries). Column names are store.*Columns (stable, documented in
// docs/report.md). Unavailable values (NaN in Go, NULL in colo.db) are an empty CSV field,
// JSON null, or a Parquet null. Times are integer nanoseconds from the run's start.
package export

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"colo/store"
)

// Each row type has one field per column; the parquet tag names the column in every format.

// RunRow is one row of runs.
type RunRow struct {
	RunID       int64  `parquet:"run_id" json:"run_id"`
	Scheduler   string `parquet:"scheduler" json:"scheduler"`
	Trace       string `parquet:"trace" json:"trace"`
	StartUnixNs int64  `parquet:"start_unix_ns" json:"start_unix_ns"`
	Complete    bool   `parquet:"complete" json:"complete"`
}

// JobRow is one row of jobs.
type JobRow struct {
	RunID      int64    `parquet:"run_id" json:"run_id"`
	JobID      int64    `parquet:"job_id" json:"job_id"`
	Name       string   `parquet:"name" json:"name"`
	Kind       string   `parquet:"kind" json:"kind"`
	Model      string   `parquet:"model" json:"model"`
	Priority   bool     `parquet:"priority" json:"priority"`
	IPCETarget *float64 `parquet:"ipce_target,optional" json:"ipce_target"`
	Cores      int64    `parquet:"cores" json:"cores"`
	CoreList   string   `parquet:"core_list" json:"core_list"`
	Socket     int64    `parquet:"socket" json:"socket"`
	ArrivalNs  int64    `parquet:"arrival_ns" json:"arrival_ns"`
	StartNs    *int64   `parquet:"start_ns,optional" json:"start_ns"`
	StopNs     *int64   `parquet:"stop_ns,optional" json:"stop_ns"`
	State      string   `parquet:"state" json:"state"`
	Reason     string   `parquet:"reason" json:"reason"`
}

// SampleRow is one row of samples.
type SampleRow struct {
	RunID          int64    `parquet:"run_id" json:"run_id"`
	JobID          int64    `parquet:"job_id" json:"job_id"`
	TNs            int64    `parquet:"t_ns" json:"t_ns"`
	IntervalNs     int64    `parquet:"interval_ns" json:"interval_ns"`
	Socket         int64    `parquet:"socket" json:"socket"`
	Instructions   *float64 `parquet:"instructions,optional" json:"instructions"`
	Cycles         *float64 `parquet:"cycles,optional" json:"cycles"`
	StallsTotal    *float64 `parquet:"stalls_total,optional" json:"stalls_total"`
	StallsL3Miss   *float64 `parquet:"stalls_l3_miss,optional" json:"stalls_l3_miss"`
	LLCRefs        *float64 `parquet:"llc_refs,optional" json:"llc_refs"`
	LLCMisses      *float64 `parquet:"llc_misses,optional" json:"llc_misses"`
	OccupancyBytes *float64 `parquet:"llc_occupancy_bytes,optional" json:"llc_occupancy_bytes"`
	MemBytesLocal  *float64 `parquet:"mem_bytes_local,optional" json:"mem_bytes_local"`
	MemBytesTotal  *float64 `parquet:"mem_bytes_total,optional" json:"mem_bytes_total"`
	IPC            *float64 `parquet:"ipc,optional" json:"ipc"`
	IPCE           *float64 `parquet:"ipce,optional" json:"ipce"`
	Stalled        *float64 `parquet:"stalled,optional" json:"stalled"`
}

// AllocationRow is one row of allocations.
type AllocationRow struct {
	RunID   int64    `parquet:"run_id" json:"run_id"`
	TNs     int64    `parquet:"t_ns" json:"t_ns"`
	Socket  int64    `parquet:"socket" json:"socket"`
	CLOS    string   `parquet:"clos" json:"clos"`
	Mask    uint64   `parquet:"mask" json:"mask"`
	MBA     *float64 `parquet:"mba,optional" json:"mba"`
	Members string   `parquet:"members" json:"members"` // comma-separated job ids
	Source  string   `parquet:"source" json:"source"`
}

// EventRow is one row of events.
type EventRow struct {
	RunID int64  `parquet:"run_id" json:"run_id"`
	TNs   int64  `parquet:"t_ns" json:"t_ns"`
	Kind  string `parquet:"kind" json:"kind"`
	JobID int64  `parquet:"job_id" json:"job_id"`
	Text  string `parquet:"text" json:"text"`
}

// ProbeRow is one row of probes.
type ProbeRow struct {
	RunID    int64    `parquet:"run_id" json:"run_id"`
	JobID    int64    `parquet:"job_id" json:"job_id"`
	TStartNs int64    `parquet:"t_start_ns" json:"t_start_ns"`
	TEndNs   int64    `parquet:"t_end_ns" json:"t_end_ns"`
	Kind     string   `parquet:"kind" json:"kind"`
	Socket   int64    `parquet:"socket" json:"socket"`
	Ways     int64    `parquet:"ways" json:"ways"`
	Mask     uint64   `parquet:"mask" json:"mask"`
	MBA      *float64 `parquet:"mba,optional" json:"mba"`
	IPC      *float64 `parquet:"ipc,optional" json:"ipc"`
	IPCE     *float64 `parquet:"ipce,optional" json:"ipce"`
	Result   string   `parquet:"result" json:"result"`
}

// PartitionRow is one row of partitions.
type PartitionRow struct {
	RunID      int64    `parquet:"run_id" json:"run_id"`
	Workload   string   `parquet:"workload" json:"workload"`
	Policy     string   `parquet:"policy" json:"policy"`
	STP        *float64 `parquet:"stp,optional" json:"stp"`
	ANTT       *float64 `parquet:"antt,optional" json:"antt"`
	Unfairness *float64 `parquet:"unfairness,optional" json:"unfairness"`
	Jain       *float64 `parquet:"jain,optional" json:"jain"`
}

// PartitionAppRow is one row of partition_apps.
type PartitionAppRow struct {
	RunID    int64    `parquet:"run_id" json:"run_id"`
	Workload string   `parquet:"workload" json:"workload"`
	Policy   string   `parquet:"policy" json:"policy"`
	App      string   `parquet:"app" json:"app"`
	Cluster  int64    `parquet:"cluster" json:"cluster"`
	Ways     int64    `parquet:"ways" json:"ways"`
	Mask     uint64   `parquet:"mask" json:"mask"`
	IPCAlone *float64 `parquet:"ipc_alone,optional" json:"ipc_alone"`
	IPC      *float64 `parquet:"ipc,optional" json:"ipc"`
	Slowdown *float64 `parquet:"slowdown,optional" json:"slowdown"`
}

// SummaryRow is one row of summaries.
type SummaryRow struct {
	RunID             int64    `parquet:"run_id" json:"run_id"`
	Name              string   `parquet:"name" json:"name"`
	PriorityIPCE      *float64 `parquet:"priority_ipce,optional" json:"priority_ipce"`
	BatchIPCE         *float64 `parquet:"batch_ipce,optional" json:"batch_ipce"`
	GlobalIPCE        *float64 `parquet:"global_ipce,optional" json:"global_ipce"`
	TimeOverTarget    *float64 `parquet:"time_over_target,optional" json:"time_over_target"`
	TimeOverTargetP90 *float64 `parquet:"time_over_target_p90,optional" json:"time_over_target_p90"`
	JobsCompleted     int64    `parquet:"jobs_completed" json:"jobs_completed"`
	JobsRejected      int64    `parquet:"jobs_rejected" json:"jobs_rejected"`
	QueueDelayMean    *float64 `parquet:"queue_delay_mean_s,optional" json:"queue_delay_mean_s"`
	QueueDelayP90     *float64 `parquet:"queue_delay_p90_s,optional" json:"queue_delay_p90_s"`
	VirtualSeconds    *float64 `parquet:"virtual_seconds,optional" json:"virtual_seconds"`
	WallSeconds       *float64 `parquet:"wall_seconds,optional" json:"wall_seconds"`
	Extra             string   `parquet:"extra" json:"extra"` // JSON object of extra numbers
	Notes             string   `parquet:"notes" json:"notes"` // JSON array of strings
}

// opt maps NaN to nil.
func opt(x float64) *float64 {
	if math.IsNaN(x) {
		return nil
	}
	return &x
}

// unopt maps nil to NaN.
func unopt(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func optD(d time.Duration) *int64 {
	if d == store.Unset {
		return nil
	}
	v := int64(d)
	return &v
}

func unoptD(p *int64) time.Duration {
	if p == nil {
		return store.Unset
	}
	return time.Duration(*p)
}

// SampleToRow converts a stored sample of run id to its export row.
func SampleToRow(id int64, s store.Sample) SampleRow {
	return SampleRow{RunID: id, JobID: int64(s.Job), TNs: int64(s.T), IntervalNs: int64(s.Interval), Socket: int64(s.Socket),
		Instructions: opt(s.Instructions), Cycles: opt(s.Cycles), StallsTotal: opt(s.StallsTotal), StallsL3Miss: opt(s.StallsL3Miss),
		LLCRefs: opt(s.LLCRefs), LLCMisses: opt(s.LLCMisses), OccupancyBytes: opt(s.OccupancyBytes),
		MemBytesLocal: opt(s.MemBytesLocal), MemBytesTotal: opt(s.MemBytesTotal),
		IPC: opt(s.IPC), IPCE: opt(s.IPCE), Stalled: opt(s.Stalled)}
}

// Sample converts an export row back to a sample.
func (r SampleRow) Sample() store.Sample {
	return store.Sample{Job: int(r.JobID), T: time.Duration(r.TNs), Interval: time.Duration(r.IntervalNs), Socket: int(r.Socket),
		Instructions: unopt(r.Instructions), Cycles: unopt(r.Cycles), StallsTotal: unopt(r.StallsTotal), StallsL3Miss: unopt(r.StallsL3Miss),
		LLCRefs: unopt(r.LLCRefs), LLCMisses: unopt(r.LLCMisses), OccupancyBytes: unopt(r.OccupancyBytes),
		MemBytesLocal: unopt(r.MemBytesLocal), MemBytesTotal: unopt(r.MemBytesTotal),
		IPC: unopt(r.IPC), IPCE: unopt(r.IPCE), Stalled: unopt(r.Stalled)}
}

// JobToRow converts a stored job of run id to its export row.
func JobToRow(id int64, j store.Job) JobRow {
	return JobRow{RunID: id, JobID: int64(j.ID), Name: j.Name, Kind: j.Kind, Model: j.Model, Priority: j.Priority,
		IPCETarget: opt(j.IPCETarget), Cores: int64(j.Cores), CoreList: j.CoreList, Socket: int64(j.Socket),
		ArrivalNs: int64(j.Arrival), StartNs: optD(j.Start), StopNs: optD(j.Stop), State: j.State, Reason: j.Reason}
}

// Job converts an export row back to a job.
func (r JobRow) Job() store.Job {
	return store.Job{ID: int(r.JobID), Name: r.Name, Kind: r.Kind, Model: r.Model, Priority: r.Priority,
		IPCETarget: unopt(r.IPCETarget), Cores: int(r.Cores), CoreList: r.CoreList, Socket: int(r.Socket),
		Arrival: time.Duration(r.ArrivalNs), Start: unoptD(r.StartNs), Stop: unoptD(r.StopNs), State: r.State, Reason: r.Reason}
}

func allocationToRow(id int64, a store.Allocation) AllocationRow {
	m := make([]string, len(a.Members))
	for i, x := range a.Members {
		m[i] = strconv.Itoa(x)
	}
	return AllocationRow{RunID: id, TNs: int64(a.T), Socket: int64(a.Socket), CLOS: a.CLOS, Mask: a.Mask,
		MBA: opt(a.MBA), Members: strings.Join(m, ","), Source: a.Source}
}

func eventToRow(id int64, e store.Event) EventRow {
	return EventRow{RunID: id, TNs: int64(e.T), Kind: e.Kind, JobID: int64(e.Job), Text: e.Text}
}

func probeToRow(id int64, p store.ProbeSegment) ProbeRow {
	return ProbeRow{RunID: id, JobID: int64(p.Job), TStartNs: int64(p.Start), TEndNs: int64(p.End), Kind: p.Kind,
		Socket: int64(p.Socket), Ways: int64(p.Ways), Mask: p.Mask, MBA: opt(p.MBA), IPC: opt(p.IPC), IPCE: opt(p.IPCE),
		Result: p.Result}
}

func partitionToRow(id int64, p store.PartitionResult) PartitionRow {
	return PartitionRow{RunID: id, Workload: p.Workload, Policy: p.Policy, STP: opt(p.STP), ANTT: opt(p.ANTT),
		Unfairness: opt(p.Unfairness), Jain: opt(p.Jain)}
}

// partitionAppRows are the per-application rows of one partitioning result.
func partitionAppRows(id int64, p store.PartitionResult) []PartitionAppRow {
	out := make([]PartitionAppRow, len(p.Apps))
	for i, a := range p.Apps {
		out[i] = PartitionAppRow{RunID: id, Workload: p.Workload, Policy: p.Policy, App: a.App, Cluster: int64(a.Cluster),
			Ways: int64(a.Ways), Mask: a.Mask, IPCAlone: opt(a.IPCAlone), IPC: opt(a.IPC), Slowdown: opt(a.Slowdown)}
	}
	return out
}

func summaryToRow(id int64, s store.Summary) SummaryRow {
	extra := map[string]*float64{}
	for k, v := range s.Extra {
		extra[k] = opt(v)
	}
	b, _ := json.Marshal(extra)
	notes, _ := json.Marshal(append([]string{}, s.Notes...))
	return SummaryRow{RunID: id, Name: s.Name, PriorityIPCE: opt(s.PriorityIPCE), BatchIPCE: opt(s.BatchIPCE),
		GlobalIPCE: opt(s.GlobalIPCE), TimeOverTarget: opt(s.TimeOverTarget), TimeOverTargetP90: opt(s.TimeOverTargetP90),
		JobsCompleted: int64(s.JobsCompleted), JobsRejected: int64(s.JobsRejected), QueueDelayMean: opt(s.QueueDelayMean),
		QueueDelayP90: opt(s.QueueDelayP90), VirtualSeconds: opt(s.VirtualSeconds), WallSeconds: opt(s.WallSeconds),
		Extra: string(b), Notes: string(notes)}
}
