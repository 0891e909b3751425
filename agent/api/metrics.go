package api

import (
	"colo/agent/core"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exposes an agent's latest status to Prometheus: cAdvisor's names for the
// per-container resctrl metrics (so existing dashboards work) and colo_* metrics. It
// reads the status published after each tick, so a scrape never touches resctrl.
type Collector struct {
	src func() Status
}

// NewCollector returns a collector over a status source (Agent.Status).
func NewCollector(src func() Status) *Collector { return &Collector{src: src} }

var (
	cl      = []string{"id", "name", "image"}
	descOcc = prometheus.NewDesc("container_llc_occupancy_bytes",
		"Last level cache usage statistics for container counted with RDT Memory Bandwidth Monitoring (MBM); resctrl llc_occupancy of the container's monitoring group.", cl, nil)
	descMBM = prometheus.NewDesc("container_memory_bandwidth_bytes",
		"Total memory bandwidth usage statistics for container counted with RDT Memory Bandwidth Monitoring (MBM); resctrl mbm_total_bytes (cumulative).", cl, nil)
	descMBMLocal = prometheus.NewDesc("container_memory_bandwidth_local_bytes",
		"Local memory bandwidth usage statistics for container counted with RDT Memory Bandwidth Monitoring (MBM); resctrl mbm_local_bytes (cumulative).", cl, nil)
	descClass = prometheus.NewDesc("colo_container_class",
		"1 for the container's colo.io/class (priority, batch, best-effort) and its state in the policy (queued, running, rejected).", append(cl, "class", "state"), nil)
	descWays = prometheus.NewDesc("colo_container_llc_ways",
		"L3 ways of the container's control group (0: system/default).", append(cl, "socket"), nil)
	descMBA = prometheus.NewDesc("colo_container_mba",
		"MBA value of the container's control group in the platform's unit (0: system/default's).", append(cl, "socket"), nil)
	descCPU = prometheus.NewDesc("colo_container_cpu_seconds_total",
		"CPU time of the container's cgroup; source says how it was counted (hardware or software perf events, cgroup cputime).", append(cl, "source"), nil)
	descIPC = prometheus.NewDesc("colo_container_ipc",
		"Instructions per cycle over the last interval (only with a hardware PMU).", cl, nil)
	descIPCE = prometheus.NewDesc("colo_container_ipce",
		"IPC efficiency 1 - stall cycles/cycles over the last interval (only with a hardware PMU).", cl, nil)
	descThreads = prometheus.NewDesc("colo_container_threads",
		"Threads of the container's cgroup at the last PID sync.", cl, nil)
	descMon = prometheus.NewDesc("colo_container_monitoring",
		"1 for how the container is monitored: container (own group), control, class (RMIDs ran out), none.", append(cl, "mode"), nil)
	descMBMUnassigned = prometheus.NewDesc("colo_container_mbm_unassigned",
		"1 while the container holds no assignable MBM counter (mbm_event mounts): its bandwidth is the last measured one, not 0.", cl, nil)
	descMBMSlots = prometheus.NewDesc("colo_agent_mbm_counter_slots",
		"Containers that can hold assignable MBM counters at once (absent when every group has its own).", nil, nil)
	descTarget = prometheus.NewDesc("colo_container_target_ipce",
		"The container's colo.io/target-ipce (absent without one).", cl, nil)
	descSlowdown = prometheus.NewDesc("colo_predicted_slowdown",
		"Predicted slowdown t/t_isolated of the container next to the other containers of its socket, from the Bubble-Up profiles of --profiles (absent without a profile for its image).", cl, nil)
	descMeasured = prometheus.NewDesc("colo_measured_slowdown",
		"Measured slowdown of the container: its colo.io/perf-metric at the isolated baseline of its online profile over now (colo agent --profile).", cl, nil)
	descPredErr = prometheus.NewDesc("colo_prediction_error",
		"Predicted minus measured normalised performance of the container, in percentage points of its isolated performance (thesis Eq. 7.1; positive: too optimistic).", cl, nil)
	descProfile = prometheus.NewDesc("colo_container_profile",
		"1 for the container's online profile state (none, queued, profiling, profiled, refused) and key.", append(cl, "state", "key"), nil)
	descProfileRuns = prometheus.NewDesc("colo_profile_runs_total",
		"Online profiling runs by outcome (profiled, refused: too noisy or no progress, aborted: a priority neighbour fell below its target, failed).", []string{"outcome"}, nil)
	descDecisions = prometheus.NewDesc("colo_policy_decisions_total",
		"Decisions of the policy by kind (place, reject, allocate, migrate, probe).", []string{"policy", "kind"}, nil)
	descIgnored = prometheus.NewDesc("colo_policy_decisions_ignored_total",
		"Decisions the agent does not carry out (repin, quota: it does not move or throttle containers it did not start).", []string{"policy", "kind"}, nil)
	descProbes = prometheus.NewDesc("colo_probes_total",
		"Allocation probes by outcome (requested, refused: the agent runs no probes).", []string{"outcome"}, nil)
	descLabelErr = prometheus.NewDesc("colo_label_errors_total",
		"Container labels whose value was invalid and ignored, by label.", []string{"label"}, nil)
	descCounts = prometheus.NewDesc("colo_agent_events_total",
		"Degradations: closid_exhausted (no CLOSID/RMID: a container lost isolation), rmid_exhausted (monitored by class), refused (the planner refused an allocation, e.g. another agent's ways), apply_errors.", []string{"event"}, nil)
	descDefault = prometheus.NewDesc("colo_default_llc_mask",
		"system/default's L3 mask per socket (as a number).", []string{"socket"}, nil)
	descUp = prometheus.NewDesc("colo_agent_runtime_connected",
		"1 while the container runtime answers.", []string{"runtime"}, nil)
	descRdt = prometheus.NewDesc("colo_agent_resctrl_available",
		"1 while the resctrl mount is usable.", []string{"root"}, nil)
	descTicks = prometheus.NewDesc("colo_agent_ticks_total", "Agent intervals done.", nil, nil)
	descTick  = prometheus.NewDesc("colo_agent_tick_seconds",
		"Duration of the last interval's work (PID sync, counters, policy, resctrl).", nil, nil)
	descManaged = prometheus.NewDesc("colo_agent_containers",
		"Managed containers by class.", []string{"class"}, nil)
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOcc, descMBM, descMBMLocal, descClass, descWays, descMBA, descCPU,
		descIPC, descIPCE, descThreads, descMon, descMBMUnassigned, descMBMSlots, descTarget, descSlowdown, descMeasured, descPredErr, descProfile, descProfileRuns, descDecisions, descIgnored, descProbes, descLabelErr,
		descCounts, descDefault, descUp, descRdt, descTicks, descTick, descManaged} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.src()
	g := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	n := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	byClass := map[core.Class]int{}
	for _, cs := range st.Containers {
		byClass[cs.Request.Class]++
		id := cs.Cgroup
		if id == "" {
			id = "/" + cs.ID
		}
		l := []string{id, cs.Name, cs.Image}
		if cs.LLCOccupancyBytes != nil {
			g(descOcc, *cs.LLCOccupancyBytes, l...)
		}
		if cs.MBMTotalBytes != nil {
			g(descMBM, *cs.MBMTotalBytes, l...)
		}
		if cs.MBMLocalBytes != nil {
			g(descMBMLocal, *cs.MBMLocalBytes, l...)
		}
		g(descClass, 1, append(l, string(cs.Request.Class), cs.State)...)
		sock := fmt.Sprint(cs.Socket)
		g(descWays, float64(cs.Ways), append(l, sock)...)
		g(descMBA, float64(cs.MBA), append(l, sock)...)
		n(descCPU, cs.CPUSeconds, append(l, cs.Counters)...)
		if cs.IPC != nil {
			g(descIPC, *cs.IPC, l...)
		}
		if cs.IPCE != nil {
			g(descIPCE, *cs.IPCE, l...)
		}
		g(descThreads, float64(cs.Threads), l...)
		g(descMon, 1, append(l, cs.Monitoring)...)
		if cs.MBMCounter != "" {
			un := 0.0
			if cs.MBMCounter == "unassigned" {
				un = 1
			}
			g(descMBMUnassigned, un, l...)
		}
		if cs.Request.TargetIPCE > 0 {
			g(descTarget, cs.Request.TargetIPCE, l...)
		}
		if cs.PredictedSlowdown != nil {
			g(descSlowdown, *cs.PredictedSlowdown, l...)
		}
		if cs.MeasuredSlowdown != nil {
			g(descMeasured, *cs.MeasuredSlowdown, l...)
		}
		if cs.PredictionError != nil {
			g(descPredErr, *cs.PredictionError, l...)
		}
		if cs.ProfileState != "" {
			g(descProfile, 1, append(l, cs.ProfileState, cs.ProfileKey)...)
		}
	}
	if st.ProfileRuns != nil {
		for _, k := range []string{"profiled", "refused", "aborted", "failed"} {
			n(descProfileRuns, float64(st.ProfileRuns[k]), k)
		}
	}
	for _, k := range core.Classes {
		g(descManaged, float64(byClass[k]), string(k))
	}
	for _, k := range []string{"place", "reject", "allocate", "migrate", "probe"} {
		n(descDecisions, float64(st.Decisions.Decisions[k]), st.Policy, k)
	}
	for _, k := range []string{"repin", "quota"} {
		n(descIgnored, float64(st.Decisions.Ignored[k]), st.Policy, k)
	}
	for _, k := range []string{"requested", "refused"} {
		n(descProbes, float64(st.Decisions.Probes[k]), k)
	}
	for _, k := range []string{core.LabelClass, core.LabelTargetIPCE, core.LabelLLCWays, core.LabelMBA} {
		n(descLabelErr, float64(st.LabelErrors[k]), k)
	}
	for _, k := range []string{"closid_exhausted", "rmid_exhausted", "refused", "apply_errors"} {
		n(descCounts, float64(st.Counts[k]), k)
	}
	for s, m := range st.DefaultMasks {
		var v uint64
		fmt.Sscanf(m, "0x%x", &v)
		g(descDefault, float64(v), s)
	}
	b := func(x bool) float64 {
		if x {
			return 1
		}
		return 0
	}
	g(descUp, b(st.RuntimeConnected), st.Runtime)
	g(descRdt, b(st.ResctrlError == "" && st.Ticks > 0), st.ResctrlRoot)
	if st.MBMCounters > 0 {
		g(descMBMSlots, float64(st.MBMCounters))
	}
	n(descTicks, float64(st.Ticks))
	g(descTick, st.TickSeconds)
}
