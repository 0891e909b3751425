package api

import (
	"time"

	"colo/agent/core"
)

// ContainerStatus is one managed container in the API (/api/v1/containers).
type ContainerStatus struct {
	ID      string       `json:"id"`
	Name    string       `json:"name"`
	Image   string       `json:"image"`
	Cgroup  string       `json:"cgroup"`
	Request core.Request `json:"request"`
	// State is the policy's view: queued, running or rejected.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	Socket int    `json:"socket"`
	// Mask is the container's L3 mask in hex ("" in system/default); Ways its width.
	Mask string `json:"mask,omitempty"`
	Ways int    `json:"ways"`
	// MBMCounter is "assigned" or "unassigned" on a mount with assignable MBM counters
	// (an unassigned container's bandwidth is its last measured one, not 0); "" elsewhere.
	MBMCounter string `json:"mbm_counter,omitempty"`
	MBA        int    `json:"mba,omitempty"`
	// CtrlGroup and MonGroup are resctrl group paths ("" none / system/default).
	CtrlGroup string `json:"ctrl_group,omitempty"`
	MonGroup  string `json:"mon_group,omitempty"`
	// Monitoring is "container" (its own group), "class" (RMIDs ran out: shared by its
	// class), "control" (its control group counts) or "none".
	Monitoring string `json:"monitoring"`
	Threads    int    `json:"threads"`
	// LLCOccupancyBytes, MBMTotalBytes, MBMLocalBytes: resctrl monitoring (cumulative
	// bytes for MBM) of its own group; absent when monitored by class.
	LLCOccupancyBytes *float64 `json:"llc_occupancy_bytes,omitempty"`
	MBMTotalBytes     *float64 `json:"mbm_total_bytes,omitempty"`
	MBMLocalBytes     *float64 `json:"mbm_local_bytes,omitempty"`
	// MemBandwidthMBps is the MBM total rate over the last interval (10^6 B/s).
	MemBandwidthMBps *float64 `json:"mem_bandwidth_mbps,omitempty"`
	CPUSeconds       float64  `json:"cpu_seconds"`
	CPUCores         float64  `json:"cpu_cores"` // cores used over the last interval
	// IPC and IPCE over the last interval; null without a hardware PMU.
	IPC  *float64 `json:"ipc"`
	IPCE *float64 `json:"ipce"`
	// Counters is "hardware", "software" (software perf events: no IPC) or "cputime".
	Counters string `json:"counters"`
	// Probe is the state of its allocation probe: "none" or "refused" (the agent runs no
	// probes).
	Probe string    `json:"probe"`
	Since time.Time `json:"since"`
	// Profile is the application name of its image in the --profiles data directory
	// ("" none); PredictedSlowdown its predicted t / t_isolated next to the other
	// containers of its socket (Predictor; absent without a profile), PredictionNote
	// what the prediction left out.
	Profile           string   `json:"profile,omitempty"`
	PredictedSlowdown *float64 `json:"predicted_slowdown,omitempty"`
	PredictionNote    string   `json:"prediction_note,omitempty"`
	// Online profiling (colo agent --profile): ProfileKey is its tenantprofile key,
	// ProfileState none, queued, profiling, profiled or refused (ProfileReason why);
	// MeasuredSlowdown its performance at its isolated baseline over now (from its
	// colo.io/perf-metric) and PredictionError predicted − measured normalised
	// performance in pp (thesis Eq. 7.1).
	ProfileKey       string   `json:"profile_key,omitempty"`
	ProfileState     string   `json:"profile_state,omitempty"`
	ProfileReason    string   `json:"profile_reason,omitempty"`
	MeasuredSlowdown *float64 `json:"measured_slowdown,omitempty"`
	PredictionError  *float64 `json:"prediction_error,omitempty"`
}

// Status is the agent's state (/api/v1/status).
type Status struct {
	Instance         string `json:"instance"`
	Policy           string `json:"policy"`
	Interval         string `json:"interval"`
	Runtime          string `json:"runtime"`
	RuntimeConnected bool   `json:"runtime_connected"`
	RuntimeError     string `json:"runtime_error,omitempty"`
	ResctrlRoot      string `json:"resctrl_root"`
	ResctrlError     string `json:"resctrl_error,omitempty"`
	// MBMCounters is how many containers can hold assignable MBM counters at once (0: the
	// mount gives every group its own); MBMRotationPeriods how many --mbm-period periods
	// a rotation takes (every unprioritised container is measured once per rotation).
	MBMCounters        int               `json:"mbm_counters,omitempty"`
	MBMRotationPeriods int               `json:"mbm_rotation_periods,omitempty"`
	Machine            string            `json:"machine"`
	Sockets            int               `json:"sockets"`
	LLCWays            int               `json:"llc_ways"`
	DefaultMasks       map[string]string `json:"default_masks"` // socket -> hex mask
	Containers         []ContainerStatus `json:"containers"`
	Decisions          core.Stats        `json:"policy_counts"`
	// Counts: closid_exhausted, rmid_exhausted, apply_errors.
	Counts      map[string]int `json:"counts"`
	LabelErrors map[string]int `json:"label_errors"`
	Ticks       uint64         `json:"ticks"`
	// TickSeconds is how long the last tick took (sync, read, decide, apply).
	TickSeconds float64   `json:"tick_seconds"`
	Updated     time.Time `json:"updated"`
	Notes       []string  `json:"notes"`
	// ProfileRuns counts online profiling runs by outcome (profiled, refused, aborted,
	// failed); nil without --profile.
	ProfileRuns map[string]int `json:"profile_runs,omitempty"`
}
