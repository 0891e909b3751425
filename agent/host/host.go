// Package host reads a managed container on a Linux host: its threads (cgroup tasks)
// and its counters (perf events on its cgroup, else cgroup CPU time).
package host

import (
	"fmt"
	"os"
	"time"

	"colo/agent/core"
	"colo/counter"
	"colo/machine"
	"colo/perf"
	"colo/workload"
)

// Counters reads one container's cumulative counters (perf per cgroup, CPU time).
type Counters interface {
	Read() (counter.Reading, error)
	// Mode is "hardware", "software" (software perf events) or "cputime" (cgroup CPU
	// time only).
	Mode() string
	Close()
}

// Host reads containers' threads and opens their counters (cgroups and perf on Linux; a
// fake in tests).
type Host interface {
	Threads(c core.Container) ([]int, error)
	OpenCounters(c core.Container) (Counters, error)
	// Forget releases what Threads keeps for a container that is no longer managed.
	Forget(c core.Container)
}

// Linux implements Host with the container's cgroup: threads from its tasks /
// cgroup.threads, counters from perf events on its cgroup (hardware where a PMU exists,
// software events otherwise) plus its cgroup CPU time.
type Linux struct {
	// CPUs are the CPUs perf counts on (all online CPUs).
	CPUs []int
	// NoPerf skips perf events (CPU time only).
	NoPerf bool
	Logf   func(string, ...any)
	// lists keeps each container's thread list open (by cgroup path): the agent lists
	// the same cgroups every interval.
	lists map[string]*workload.ThreadList
}

func cgroupOf(c core.Container) workload.Cgroup {
	return workload.Cgroup{Version: c.CgroupV, Dirs: c.CgroupDirs, Path: c.Cgroup}
}

// Threads implements Host: the container's thread list, kept open between calls.
func (h *Linux) Threads(c core.Container) ([]int, error) {
	if tl := h.lists[c.Cgroup]; tl != nil {
		// a live container has a thread; none (or an error) says the cgroup went and
		// may be back under the same path (docker restart): open it again
		if tids, err := tl.Read(); err == nil && len(tids) > 0 {
			return tids, nil
		}
		tl.Close()
		delete(h.lists, c.Cgroup)
	}
	tl, err := workload.OpenThreads(cgroupOf(c))
	if err != nil {
		return nil, err
	}
	if h.lists == nil {
		h.lists = map[string]*workload.ThreadList{}
	}
	h.lists[c.Cgroup] = tl
	return tl.Read()
}

// Forget implements Host: the container's thread list is closed.
func (h *Linux) Forget(c core.Container) {
	if tl := h.lists[c.Cgroup]; tl != nil {
		tl.Close()
		delete(h.lists, c.Cgroup)
	}
}

// OpenCounters implements Host.
func (h *Linux) OpenCounters(c core.Container) (Counters, error) {
	cg := cgroupOf(c)
	lc := &linuxCounters{mode: "cputime"}
	if ct, err := workload.OpenCPUTime(cg); err == nil {
		lc.cpu = ct
	}
	if !h.NoPerf && len(h.CPUs) > 0 {
		if p, err := perf.OpenCgroup(cg.PerfEventDir(), h.CPUs, perf.Options{Logf: h.Logf, Quiet: h.Logf == nil}); err == nil {
			switch p.Mode() {
			case perf.ModeHardware:
				lc.perf, lc.mode = p, "hardware"
			case perf.ModeSoftware:
				lc.perf, lc.mode = p, "software"
			default:
				p.Close()
			}
		}
	}
	if lc.cpu == nil && lc.perf == nil {
		return nil, ErrNoCounters
	}
	return lc, nil
}

type errString string

func (e errString) Error() string { return string(e) }

const ErrNoCounters = errString("no CPU time or perf events for this cgroup")

type linuxCounters struct {
	mode string
	cpu  *workload.CPUTime
	perf *perf.Counter
}

func (l *linuxCounters) Mode() string { return l.mode }

func (l *linuxCounters) Read() (counter.Reading, error) {
	var r counter.Reading
	if l.perf != nil {
		if _, err := l.perf.Sample(); err == nil {
			t := l.perf.Totals()
			r.Instructions, r.Cycles = t[perf.Instructions], t[perf.Cycles]
			r.StallsTotal, r.StallsL3Miss = t[perf.StallsTotal], t[perf.StallsL3Miss]
			r.LLCReferences, r.LLCMisses = t[perf.CacheReferences], t[perf.CacheMisses]
			if v, ok := t[perf.TaskClock]; ok {
				r.CPUTime = time.Duration(v)
			}
		}
	}
	if l.cpu != nil {
		if ns, err := l.cpu.Read(); err == nil {
			r.CPUTime = time.Duration(ns)
		}
	}
	return r, nil
}

func (l *linuxCounters) Close() {
	if l.cpu != nil {
		l.cpu.Close()
	}
	if l.perf != nil {
		l.perf.Close()
	}
}

// ProbePerf opens perf counters on the agent's own cgroup, as it will on each
// container's: hardware says whether a PMU counts (else per-container perf is not worth
// opening: the cgroup's CPU time says as much as software events), noIPCE why IPCE
// cannot be measured ("" when it can: hardware cycles and the microarchitecture's
// stall-cycles raw event).
func ProbePerf(cpus []int) (hardware bool, noIPCE string) {
	cg, err := workload.CgroupOfPID(os.Getpid())
	if err != nil {
		return false, "perf: the agent's own cgroup: " + err.Error()
	}
	if len(cpus) == 0 {
		return false, "no online CPUs"
	}
	c, err := perf.OpenCgroup(cg.PerfEventDir(), cpus[:1], perf.Options{Quiet: true})
	if err != nil {
		return false, err.Error()
	}
	defer c.Close()
	if c.Mode() != perf.ModeHardware {
		return false, fmt.Sprintf("perf counts %s events only (%s)", c.Mode(), c.Reason())
	}
	for _, e := range c.Events() {
		if e == perf.StallsTotal {
			return true, ""
		}
	}
	return true, "no " + perf.StallsTotal + " raw event for this CPU (perf/events.yaml)"
}

// PercentMBA corrects a machine detected on an AMD CPU whose resctrl mount describes
// Intel's percentage MBA (a VM on an AMD host mounting the emulator's intel profile):
// machine.Detect takes the MBA unit from the CPU vendor (1/8 GB/s), but only Intel's
// info/MB has a granularity above 1 (anchors.md §4). The same correction as colo run's
// linux platform; it reports whether it changed m.
func PercentMBA(m *machine.Profile) bool {
	if m.MBA == nil || m.MBA.Unit != machine.MBAEighthGBps || m.MBA.Gran <= 1 {
		return false
	}
	m.MBA.Unit, m.MBA.Max = machine.MBAPercent, 100
	return true
}
