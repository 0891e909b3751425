package agent

import (
	"time"

	"colo/perf"
	rt "colo/runtime"
)

// LinuxHost implements Host with the container's cgroup: threads from its tasks /
// cgroup.threads, counters from perf events on its cgroup (hardware where a PMU exists,
// software events otherwise) plus its cgroup CPU time.
type LinuxHost struct {
	// CPUs are the CPUs perf counts on (all online CPUs).
	CPUs []int
	// NoPerf skips perf events (CPU time only).
	NoPerf bool
	Logf   func(string, ...any)
}

func cgroupOf(c Container) rt.Cgroup {
	return rt.Cgroup{Version: c.CgroupV, Dirs: c.CgroupDirs, Path: c.Cgroup}
}

// Threads implements Host.
func (h LinuxHost) Threads(c Container) ([]int, error) { return cgroupOf(c).Threads() }

// OpenCounters implements Host.
func (h LinuxHost) OpenCounters(c Container) (Counters, error) {
	cg := cgroupOf(c)
	lc := &linuxCounters{mode: "cputime"}
	if ct, err := rt.OpenCPUTime(cg); err == nil {
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
		return nil, errNoCounters
	}
	return lc, nil
}

type errString string

func (e errString) Error() string { return string(e) }

const errNoCounters = errString("no CPU time or perf events for this cgroup")

type linuxCounters struct {
	mode string
	cpu  *rt.CPUTime
	perf *perf.Counter
}

func (l *linuxCounters) Mode() string { return l.mode }

func (l *linuxCounters) Read() (Reading, error) {
	var r Reading
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
