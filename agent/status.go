package agent

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
	"time"

	"colo/metric"
)

// ContainerStatus is one managed container in the API (/api/v1/containers).
type ContainerStatus struct {
	ID      string  `json:"id"`
	Name    string  `json:"name"`
	Image   string  `json:"image"`
	Cgroup  string  `json:"cgroup"`
	Request Request `json:"request"`
	// State is the policy's view: queued, running or rejected.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	Socket int    `json:"socket"`
	// Mask is the container's L3 mask in hex ("" in system/default); Ways its width.
	Mask string `json:"mask,omitempty"`
	Ways int    `json:"ways"`
	MBA  int    `json:"mba,omitempty"`
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
	Instance         string            `json:"instance"`
	Policy           string            `json:"policy"`
	Interval         string            `json:"interval"`
	Runtime          string            `json:"runtime"`
	RuntimeConnected bool              `json:"runtime_connected"`
	RuntimeError     string            `json:"runtime_error,omitempty"`
	ResctrlRoot      string            `json:"resctrl_root"`
	ResctrlError     string            `json:"resctrl_error,omitempty"`
	Machine          string            `json:"machine"`
	Sockets          int               `json:"sockets"`
	LLCWays          int               `json:"llc_ways"`
	DefaultMasks     map[string]string `json:"default_masks"` // socket -> hex mask
	Containers       []ContainerStatus `json:"containers"`
	Decisions        CoreStats         `json:"policy_counts"`
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

func ptr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// snapshot builds the status after a tick (run loop only) and publishes it.
func (a *Agent) snapshot(took time.Duration) Status {
	m := a.o.Machine
	st := Status{Instance: strings.TrimPrefix(a.o.Journal.Record().Instance, "agent-"), Policy: a.core.Scheduler(), Interval: a.o.Interval.String(),
		Runtime: a.o.Discovery.Name(), ResctrlRoot: a.o.Groups.Root(), Machine: m.Name, Sockets: m.Sockets,
		LLCWays: m.LLC.Ways, DefaultMasks: map[string]string{}, Decisions: a.core.Stats(),
		TickSeconds: took.Seconds(), Updated: time.Now().UTC()}
	if a.rdtErr != nil {
		st.ResctrlError = a.rdtErr.Error()
	}
	for s, v := range a.def {
		st.DefaultMasks[fmt.Sprint(s)] = fmt.Sprintf("%#x", v)
	}
	var cons []Container // parallel to st.Containers
	for _, mb := range a.core.Members() {
		l := a.live[mb.ID]
		if l == nil {
			continue
		}
		pl := a.placed[l.tenant]
		cs := ContainerStatus{ID: mb.ID, Name: mb.Name, Image: mb.Image, Cgroup: mb.Cgroup, Request: mb.Req,
			State: mb.State, Reason: mb.Reason, Socket: mb.Socket, CtrlGroup: pl.Group, MonGroup: pl.Mon,
			Threads: l.threads, CPUSeconds: l.reading.CPUTime.Seconds(), CPUCores: l.cpuCores,
			Counters: "cputime", Probe: "none", Since: a.start.Add(mb.Since).UTC()}
		if pl.Mask != 0 {
			cs.Mask, cs.Ways, cs.MBA = fmt.Sprintf("%#x", pl.Mask), bits.OnesCount64(pl.Mask), pl.MBA
		}
		if l.counters != nil {
			cs.Counters = l.counters.Mode()
		}
		if st.Decisions.Probes["refused"] > 0 && mb.Req.Class == Priority {
			cs.Probe = "refused"
		}
		switch {
		case pl.Mon != "":
			cs.Monitoring = "container"
		case pl.Group != "":
			cs.Monitoring, cs.MonGroup = "control", pl.Group
		case l.classMon != "":
			cs.Monitoring, cs.MonGroup = "class", l.classMon
		default:
			cs.Monitoring = "none"
		}
		if l.monOK && pl.Mon != "" {
			cs.LLCOccupancyBytes = ptr(l.reading.LLCOccupancy)
			cs.MBMTotalBytes = ptr(l.reading.MBMTotal)
			cs.MBMLocalBytes = ptr(l.reading.MBMLocal)
			if l.sample.Interval > 0 {
				cs.MemBandwidthMBps = ptr(l.sample.MemBandwidthMBps)
			}
		}
		if l.sample.Interval > 0 && l.sample.Cycles > 0 {
			cs.IPC = ptr(metric.IPC(l.sample.Instructions, l.sample.Cycles))
			if l.sample.StallsTotal > 0 {
				cs.IPCE = ptr(metric.IPCE(l.sample.StallsTotal, l.sample.Cycles))
			}
		}
		st.Containers = append(st.Containers, cs)
		cons = append(cons, mb.Container)
	}
	if a.o.Predictor != nil {
		a.o.Predictor.predictions(st.Containers)
	}
	if a.o.Profiler != nil {
		a.o.Profiler.Annotate(&st, cons)
	}
	a.mu.Lock()
	st.RuntimeConnected, st.RuntimeError = a.runtime.up, a.runtime.err
	st.Counts = map[string]int{}
	for k, v := range a.counts {
		st.Counts[k] = v
	}
	st.LabelErrors = map[string]int{}
	for k, v := range a.labelErr {
		st.LabelErrors[k] = v
	}
	st.Ticks = a.status.Ticks + 1
	st.Notes = append([]string(nil), a.notes...)
	a.status = st
	a.mu.Unlock()
	return st
}

// Status returns the latest published status (safe from any goroutine).
func (a *Agent) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}
