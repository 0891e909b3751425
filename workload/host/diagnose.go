package host

import (
	"fmt"
	"strings"

	"colo/workload"
)

// Status of one check.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn" // colo works, with reduced fidelity
	Fail Status = "fail" // a colo feature is unavailable
	Info Status = "info"
)

// Check is one line of `colo doctor`.
type Check struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Value   string `json:"value"`
	Meaning string `json:"meaning"`
	Fix     string `json:"fix,omitempty"`
}

// DockerProbe is the result of contacting dockerd.
type DockerProbe struct {
	Reachable     bool
	Version       string
	APIVersion    string
	CgroupDriver  string
	CgroupVersion string
	Err           string
}

// PerfProbe is the result of opening a counter for colo's own cgroup.
type PerfProbe struct {
	Mode      string // hardware, software, none
	Reason    string
	Paranoid  string
	Microarch string // raw stall table in use ("" none)
}

// ResctrlProbe is what resctrl.Check reports about the resctrl mount.
type ResctrlProbe struct {
	Root       string
	Mounted    bool
	Emulated   bool
	CPUFlags   []string
	Resources  []string
	Monitoring []string
	CLOSIDs    int
	RMIDs      int
	Reason     string // why it is unusable and what to do
}

// governorError is the median |prediction error| of Bubble-Up-style slowdown prediction
// per frequency configuration (seed002.md §3.2, 342 predictions each).
var governorError = map[string]string{
	"performance":  "0.98 %",
	"userspace":    "1.30 %",
	"ondemand":     "1.47 %",
	"schedutil":    "1.59 %",
	"conservative": "1.44 %",
	"powersave":    "8.80 %",
}

// Diagnose turns facts and probes into checks, in a fixed order.
func Diagnose(f Facts, d DockerProbe, p PerfProbe, r ResctrlProbe) []Check {
	var cs []Check
	add := func(c Check) { cs = append(cs, c) }

	if d.Reachable {
		add(Check{"docker", OK, fmt.Sprintf("%s (API %s, %s driver, cgroup v%s)", d.Version, d.APIVersion, d.CgroupDriver, d.CgroupVersion),
			"platform: linux runs each job as a container (build the image once with `colo image build`)", ""})
	} else {
		add(Check{"docker", Fail, "unreachable: " + d.Err,
			"platform: linux cannot start containers; only the process runtime and platform: sim work",
			"start dockerd (systemctl start docker, or `dockerd &` as root) or set DOCKER_HOST"})
	}

	switch f.CgroupMode {
	case workload.CgroupV2:
		add(Check{"cgroups", OK, "v2 (unified)", "per-container counters, CPU and memory come from one hierarchy", ""})
	case workload.CgroupHybrid:
		add(Check{"cgroups", OK, "hybrid (v1 controllers + v2 at /sys/fs/cgroup/unified)",
			"controllers are read from v1; per-cgroup perf events use the v2 hierarchy unless perf_event is mounted as v1", ""})
	case workload.CgroupV1:
		add(Check{"cgroups", OK, "v1 (legacy)", "per-cgroup perf events need the v1 perf_event hierarchy mounted", ""})
	default:
		add(Check{"cgroups", Fail, "not mounted", "no per-container accounting or counters",
			"mount cgroup2 on /sys/fs/cgroup (mount -t cgroup2 none /sys/fs/cgroup)"})
	}

	switch p.Mode {
	case "hardware":
		add(Check{"perf", OK, "hardware counters", "IPC per container from instructions/cycles", ""})
		if p.Microarch == "" {
			add(Check{"perf stall events", Warn, "no raw stall encodings for this CPU",
				"IPCE (stalls_total/cycles) is reported as unavailable; IPC still works",
				"add the CPU's cycle_activity encodings to perf/events.yaml"})
		} else {
			add(Check{"perf stall events", OK, p.Microarch, "IPCE from cycle_activity.stalls_total", ""})
		}
	case "software":
		add(Check{"perf", Warn, "software events only (" + p.Reason + ")",
			"no IPC or IPCE: they are reported as unavailable (never 0); task-clock, context switches and runtime CPU time are collected",
			"enable the virtual PMU (VM) or run on bare metal; if denied: run as root or sysctl kernel.perf_event_paranoid=0"})
	default:
		add(Check{"perf", Fail, "unavailable (" + p.Reason + ", perf_event_paranoid=" + p.Paranoid + ")",
			"no per-container counters; only runtime CPU time",
			"run colo as root, grant CAP_PERFMON, or sysctl kernel.perf_event_paranoid=0"})
	}

	flags := strings.Join(r.CPUFlags, " ")
	switch {
	case r.Mounted:
		kind := "mounted"
		if r.Emulated {
			kind = "emulator mounted"
		}
		add(Check{"resctrl", OK, fmt.Sprintf("%s at %s (%s; monitoring %s; %d CLOSIDs, %d RMIDs)", kind, r.Root, strings.Join(r.Resources, ", "), orDash(strings.Join(r.Monitoring, ", ")), r.CLOSIDs, r.RMIDs),
			"cache (CAT) and bandwidth (MBA) partitioning and CMT/MBM monitoring per container", ""})
	case len(r.CPUFlags) > 0:
		add(Check{"resctrl", Warn, "not usable (cpu flags: " + flags + ")",
			"the CPU has RDT but colo cannot partition or monitor: " + r.Reason, "mount -t resctrl resctrl " + r.Root})
	default:
		add(Check{"resctrl", Warn, "no RDT",
			"no CAT/MBA/CMT here: run policies against the emulator (--resctrl-root DIR) or with platform: sim (" + r.Reason + ")",
			"use bare metal with Intel RDT or AMD PQoS; or colo resctrl emulate --profile intel --mount DIR and --resctrl-root DIR"})
	}

	switch {
	case len(f.Governors) == 0:
		add(Check{"cpu governor", Info, "no cpufreq (VM or driver absent)",
			"the clock is controlled by the hypervisor or firmware; prediction accuracy depends on it being fixed", ""})
	case len(f.Governors) == 1 && f.Governors[0] == "performance":
		add(Check{"cpu governor", OK, "performance", "fixed high clock: 0.98 % median slowdown-prediction error (seed002.md §3.2)", ""})
	default:
		g := strings.Join(f.Governors, ",")
		e := "higher"
		if len(f.Governors) == 1 && governorError[g] != "" {
			e = governorError[g]
		}
		add(Check{"cpu governor", Warn, g,
			"dynamic frequency makes co-runs faster than predicted: median prediction error " + e + " vs 0.98 % with performance (seed002.md §3.2)",
			"cpupower frequency-set -g performance"})
	}

	switch f.Turbo {
	case "off":
		add(Check{"turbo", OK, "off", "stable clock for profiling and prediction", ""})
	case "on":
		add(Check{"turbo", Warn, "on",
			"median prediction error 12.05 % with turbo on vs 0.98 % with performance governor and turbo off (seed002.md §3.2)",
			"echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo (AMD/acpi-cpufreq: echo 0 > /sys/devices/system/cpu/cpufreq/boost)"})
	default:
		add(Check{"turbo", Info, "unknown (no intel_pstate/no_turbo or cpufreq/boost)",
			"cannot tell whether the clock boosts; on bare metal turbo raises prediction error to 12 % (seed002.md §3.2)", ""})
	}

	switch {
	case f.SMT == "on" && f.SMTActive:
		add(Check{"smt", Warn, "on",
			"hyperthread siblings share L1/L2 and execution units, which CAT/MBA cannot partition",
			"pin co-located jobs to whole cores (both siblings in one cpuset) or echo off > /sys/devices/system/cpu/smt/control"})
	case f.SMT == "":
		add(Check{"smt", Info, "unknown", "no /sys/devices/system/cpu/smt", ""})
	default:
		add(Check{"smt", OK, f.SMT, "one thread per core: no sibling interference", ""})
	}

	if f.HugePagesTotal > 0 {
		add(Check{"huge pages", OK, fmt.Sprintf("%d × %d kB reserved (%d free), THP %s", f.HugePagesTotal, f.HugePageSizeKB, f.HugePagesFree, f.THP),
			"workloads that need hugetlbfs can run", ""})
	} else {
		add(Check{"huge pages", Info, fmt.Sprintf("none reserved, THP %s", orDash(f.THP)),
			"colo's own stressors do not need them; workloads using hugetlbfs will fail",
			"sysctl vm.nr_hugepages=N"})
	}
	return cs
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
