// Package perf counts hardware (or, without a PMU, software) events per cgroup with
// perf_event_open(2): one event per CPU of the workload's cpuset with
// PERF_FLAG_PID_CGROUP, summed over CPUs, each per-CPU delta corrected for multiplexing
// with time_enabled/time_running (seed000.md §1.4, thesis Eqs. 4.2/4.3).
//
// It uses golang.org/x/sys/unix directly: the recommended pure-Go library
// (github.com/elastic/go-perf) is not served by the module proxy, and
// github.com/hodgesds/perf-utils offers no seam at the system-call boundary for testing
// the hardware path on machines without a PMU. The package is a thin layer over three
// system calls behind the Sys interface.
package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"colo/machine"
	"colo/metric"
)

// Mode says which kind of counters a Counter has.
type Mode string

const (
	// ModeHardware: PMU events (instructions, cycles, ...); IPC is available, IPCE too
	// when the stall raw events opened.
	ModeHardware Mode = "hardware"
	// ModeSoftware: no PMU or not allowed; kernel software events only (task-clock,
	// context switches, ...). IPC and IPCE are unavailable (NaN).
	ModeSoftware Mode = "software"
	// ModeNone: perf_event_open is not permitted at all; use runtime CPU time.
	ModeNone Mode = "none"
)

// ScaleDelta corrects one event's counter delta for multiplexing (thesis Eqs. 4.2 and
// 4.3, Listing 4.15; seed000.md §1.4):
//
//	scaleFactor = ΔEnabled / ΔRunning   (only if ΔRunning > 0, ΔEnabled > 0, ΔRunning ≠ ΔEnabled)
//	scaledDelta = ΔValue × scaleFactor
//
// ok is false when the event was enabled but never on the PMU during the interval
// (ΔEnabled > 0, ΔRunning = 0): its count is unknown, not zero. With ΔEnabled = 0 the
// cgroup did not run on that CPU and the delta is exactly ΔValue (zero).
func ScaleDelta(dValue, dEnabled, dRunning uint64) (scaled float64, ok bool) {
	if dEnabled > 0 && dRunning == 0 {
		return math.NaN(), false
	}
	if dRunning > 0 && dEnabled > 0 && dRunning != dEnabled {
		return float64(dValue) * (float64(dEnabled) / float64(dRunning)), true
	}
	return float64(dValue), true
}

type reading struct{ value, enabled, running uint64 }

// Options configure Open.
type Options struct {
	Sys Sys // nil: the real system calls
	// Events to count in hardware mode; nil: HardwareEvents plus the stall events and
	// the L2-miss event (counted as L2Misses) of Microarch.
	Events []Event
	// Microarch selects raw stall events (see Microarchs); "" detects from /proc/cpuinfo.
	Microarch string
	// Software are the fallback events; nil: SoftwareEvents.
	Software []Event
	// Logf receives the one-time fallback warnings; nil: log.Printf.
	Logf func(format string, args ...any)
	// Quiet suppresses the warnings (probes).
	Quiet bool
}

// Counter counts events for one cgroup on a set of CPUs.
type Counter struct {
	sys    Sys
	mode   Mode
	reason string
	events []Event
	cpus   []int
	fds    [][]int // [event][cpu]
	prev   [][]reading
	total  []float64
	buf    []byte
	quiet  bool
	// grouped: one group per CPU (software events); leaders[cpu index] is read.
	grouped  bool
	leaders  []int
	groupFds [][]int
	names    []string
	// mu makes Close safe while another goroutine samples (a sampler's reader may still be
	// in Sample when its owner closes the counter; it panicked on the cleared tables once)
	mu     sync.Mutex
	closed bool
}

// Sample is the scaled change of every event since the previous Sample.
type Sample struct {
	Mode   Mode
	Names  []string
	Values []float64 // NaN when the event could not be counted in the interval
}

// Get returns an event's value; ok is false when the event is not counted (absent or NaN).
func (s Sample) Get(name string) (float64, bool) {
	for i, n := range s.Names {
		if n == name {
			return s.Values[i], !math.IsNaN(s.Values[i])
		}
	}
	return math.NaN(), false
}

func (s Sample) value(name string) float64 {
	v, _ := s.Get(name)
	return v
}

// IPC of the interval (metric.IPC); NaN when instructions or cycles are unavailable
// (software mode): unavailable, never zero.
func (s Sample) IPC() float64 {
	return metric.IPC(s.value(Instructions), s.value(Cycles))
}

// IPCE of the interval (metric.IPCE over cycle_activity.stalls_total); NaN when the stall
// events or cycles are unavailable.
func (s Sample) IPCE() float64 {
	st, c := s.value(StallsTotal), s.value(Cycles)
	if math.IsNaN(st) || math.IsNaN(c) {
		return math.NaN()
	}
	return metric.IPCE(st, c)
}

var (
	warnMu   sync.Mutex
	warnSeen = map[string]bool{}
)

// warnOnce logs msg the first time a warning of this key is seen in this process (the
// key names the kind of fallback, so per-CPU details do not repeat it).
func warnOnce(logf func(string, ...any), key, msg string) {
	warnMu.Lock()
	defer warnMu.Unlock()
	if warnSeen[key] {
		return
	}
	warnSeen[key] = true
	if logf == nil {
		logf = log.Printf
	}
	logf("%s", msg)
}

// OpenCgroup opens counters for the cgroup directory dir (in the hierarchy holding the
// perf_event controller, runtime.Cgroup.PerfEventDir) on each CPU in cpus. It tries the
// hardware events first; when the PMU is absent or perf_event_paranoid forbids them it
// falls back to software events, and to ModeNone when nothing may be opened, logging the
// reason once per process. Stall raw events that fail to open are dropped (IPCE then
// unavailable). An error is returned only for a cgroup that cannot be opened.
func OpenCgroup(dir string, cpus []int, o Options) (*Counter, error) {
	if len(cpus) == 0 {
		return nil, errors.New("perf: no CPUs given for the cgroup's counters")
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("perf: cgroup %s: %w (has the workload exited?)", dir, err)
	}
	defer f.Close() // perf holds its own reference to the cgroup
	sys := o.Sys
	if sys == nil {
		sys = RealSys{}
	}
	c := &Counter{sys: sys, cpus: append([]int(nil), cpus...), buf: make([]byte, 24), quiet: o.Quiet}
	cgfd := int(f.Fd())

	hw := o.Events
	var raw []Event
	if hw == nil {
		hw = HardwareEvents
		ma := o.Microarch
		if ma == "" {
			if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
				ma = DetectMicroarch(b)
			}
		}
		raw = RawEvents(ma, StallsTotal, StallsL3Miss)
		if ev, ok := L2MissEvent(ma); ok {
			raw = append(raw, ev)
		}
	}
	err = c.openSet(cgfd, hw)
	if err == nil {
		c.mode = ModeHardware
		for _, ev := range raw {
			if e := c.openOne(cgfd, ev); e != nil {
				what := "IPCE will be reported as unavailable"
				if ev.Name == L2Misses {
					what = "L2 misses stay 0 (unavailable; VP's memory factor uses LLC references)"
				}
				c.warn(o.Logf, "raw:"+ev.Name, fmt.Sprintf("perf: raw event %s (config %#x) unavailable: %v; %s", ev.Name, ev.Config, e, what))
			}
		}
		return c, nil
	}
	hwErr := err
	sw := o.Software
	if sw == nil {
		sw = SoftwareEvents
	}
	if err := c.openGroup(cgfd, sw); err == nil {
		c.mode = ModeSoftware
		c.reason = explain(hwErr)
		c.warn(o.Logf, "software", "perf: hardware counters unavailable ("+c.reason+"); counting software events only, IPC and IPCE are reported as unavailable")
		return c, nil
	} else {
		c.mode = ModeNone
		c.reason = explain(err)
		c.warn(o.Logf, "none", "perf: no perf events can be opened ("+c.reason+"); only runtime CPU time is collected")
		return c, nil
	}
}

// explain turns a perf_event_open error into what it means and how to fix it.
func explain(err error) string {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENODEV):
		return fmt.Sprintf("%v: no hardware PMU (a VM without vPMU?); enable the virtual PMU or run on bare metal", err)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Sprintf("%v: not permitted; run as root, grant CAP_PERFMON, or set kernel.perf_event_paranoid=0 (now %s)", err, Paranoid())
	case errors.Is(err, unix.EMFILE):
		return fmt.Sprintf("%v: too many open files; raise ulimit -n", err)
	}
	return err.Error()
}

// Paranoid reads /proc/sys/kernel/perf_event_paranoid ("?" when unreadable).
func Paranoid() string {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

func (c *Counter) openSet(cgfd int, evs []Event) error {
	for _, ev := range evs {
		if err := c.openOne(cgfd, ev); err != nil {
			c.closeAll()
			return fmt.Errorf("%s: %w", ev.Name, err)
		}
	}
	return nil
}

// openGroup opens evs as one event group per CPU (PERF_FORMAT_GROUP): one read(2)
// returns every event of the CPU, which keeps the per-sample cost low. Groups are
// scheduled onto the PMU together, so they are only used for software events, which
// never multiplex; the shared enabled/running times still go through ScaleDelta.
func (c *Counter) openGroup(cgfd int, evs []Event) error {
	for _, cpu := range c.cpus {
		leader := -1
		var fds []int
		for _, ev := range evs {
			attr := unix.PerfEventAttr{
				Type: ev.Type, Config: ev.Config, Size: uint32(unsafeSizeofAttr),
				Read_format: unix.PERF_FORMAT_GROUP | unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING,
			}
			fd, err := c.sys.Open(&attr, cgfd, cpu, leader, unix.PERF_FLAG_PID_CGROUP|unix.PERF_FLAG_FD_CLOEXEC)
			if err != nil {
				for _, f := range fds {
					c.sys.Close(f)
				}
				c.closeAll()
				return fmt.Errorf("%s: cpu %d: %w", ev.Name, cpu, err)
			}
			if leader < 0 {
				leader = fd
			}
			fds = append(fds, fd)
		}
		c.leaders = append(c.leaders, leader)
		c.groupFds = append(c.groupFds, fds)
	}
	c.grouped = true
	c.events = append([]Event(nil), evs...)
	for range evs {
		c.prev = append(c.prev, make([]reading, len(c.cpus)))
		c.total = append(c.total, 0)
	}
	c.buf = make([]byte, 24+8*len(evs))
	return nil
}

func (c *Counter) openOne(cgfd int, ev Event) error {
	fds := make([]int, 0, len(c.cpus))
	for _, cpu := range c.cpus {
		attr := unix.PerfEventAttr{
			Type:        ev.Type,
			Config:      ev.Config,
			Size:        uint32(unsafeSizeofAttr),
			Read_format: unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING,
		}
		fd, err := c.sys.Open(&attr, cgfd, cpu, -1, unix.PERF_FLAG_PID_CGROUP|unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			for _, f := range fds {
				c.sys.Close(f)
			}
			return fmt.Errorf("cpu %d: %w", cpu, err)
		}
		fds = append(fds, fd)
	}
	c.events = append(c.events, ev)
	c.fds = append(c.fds, fds)
	c.prev = append(c.prev, make([]reading, len(c.cpus)))
	c.total = append(c.total, 0)
	return nil
}

func (c *Counter) closeAll() {
	for _, fds := range c.fds {
		for _, fd := range fds {
			c.sys.Close(fd)
		}
	}
	for _, fds := range c.groupFds {
		for i := len(fds) - 1; i >= 0; i-- {
			c.sys.Close(fds[i])
		}
	}
	c.events, c.fds, c.prev, c.total = nil, nil, nil, nil
	c.leaders, c.groupFds, c.grouped = nil, nil, false
}

// Mode reports which counters are open.
func (c *Counter) Mode() Mode { return c.mode }

// Reason explains a fallback ("" in hardware mode).
func (c *Counter) Reason() string { return c.reason }

// Events lists the open events.
func (c *Counter) Events() []string {
	out := make([]string, len(c.events))
	for i, e := range c.events {
		out[i] = e.Name
	}
	return out
}

// Sample reads every counter and returns the multiplex-scaled deltas since the previous
// Sample (the first Sample covers the time since Open), summed over CPUs. An event is
// NaN when any CPU could not count it during the interval (ScaleDelta).
func (c *Counter) Sample() (Sample, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Sample{Mode: c.mode}, errors.New("perf: the counter is closed")
	}
	if c.names == nil {
		c.names = c.Events()
	}
	s := Sample{Mode: c.mode, Names: c.names, Values: make([]float64, len(c.events))}
	if c.grouped {
		return s, c.sampleGroups(s.Values)
	}
	for i, fds := range c.fds {
		sum := 0.0
		for j, fd := range fds {
			n, err := c.sys.Read(fd, c.buf)
			if err != nil || n != 24 {
				return s, fmt.Errorf("perf: read %s on cpu %d: %v (short read %d)", c.events[i].Name, c.cpus[j], err, n)
			}
			cur := reading{binary.NativeEndian.Uint64(c.buf[0:]), binary.NativeEndian.Uint64(c.buf[8:]), binary.NativeEndian.Uint64(c.buf[16:])}
			p := c.prev[i][j]
			c.prev[i][j] = cur
			if cur.value < p.value || cur.enabled < p.enabled || cur.running < p.running {
				sum = math.NaN() // counter went backwards: cannot happen unless reset
				continue
			}
			d, ok := ScaleDelta(cur.value-p.value, cur.enabled-p.enabled, cur.running-p.running)
			if !ok {
				sum = math.NaN()
				continue
			}
			sum += d
		}
		s.Values[i] = sum
		if !math.IsNaN(sum) {
			c.total[i] += sum
		}
	}
	return s, nil
}

func (c *Counter) sampleGroups(vals []float64) error {
	ne := len(c.events)
	for j, fd := range c.leaders {
		n, err := c.sys.Read(fd, c.buf)
		if err != nil || n != len(c.buf) {
			return fmt.Errorf("perf: read event group on cpu %d: %v (short read %d)", c.cpus[j], err, n)
		}
		if nr := binary.NativeEndian.Uint64(c.buf[0:]); nr != uint64(ne) {
			return fmt.Errorf("perf: event group on cpu %d has %d events, want %d", c.cpus[j], nr, ne)
		}
		en, run := binary.NativeEndian.Uint64(c.buf[8:]), binary.NativeEndian.Uint64(c.buf[16:])
		for i := 0; i < ne; i++ {
			cur := reading{binary.NativeEndian.Uint64(c.buf[24+8*i:]), en, run}
			p := c.prev[i][j]
			c.prev[i][j] = cur
			if math.IsNaN(vals[i]) {
				continue
			}
			if cur.value < p.value || cur.enabled < p.enabled || cur.running < p.running {
				vals[i] = math.NaN()
				continue
			}
			d, ok := ScaleDelta(cur.value-p.value, cur.enabled-p.enabled, cur.running-p.running)
			if !ok {
				vals[i] = math.NaN()
				continue
			}
			vals[i] += d
		}
	}
	for i, v := range vals {
		if !math.IsNaN(v) {
			c.total[i] += v
		}
	}
	return nil
}

// Totals returns the sum of all sampled (scaled) deltas per event.
func (c *Counter) Totals() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]float64{}
	for i, e := range c.events {
		out[e.Name] = c.total[i]
	}
	return out
}

// Close releases every file descriptor.
// It may be called while another goroutine is in Sample; Sample after Close fails.
func (c *Counter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.closeAll()
	return nil
}

// String describes the counter for logs.
func (c *Counter) String() string {
	return fmt.Sprintf("perf %s on cpus %s: %s", c.mode, machine.FormatCPUList(c.cpus), strings.Join(c.Events(), ","))
}

// warn logs msg once per process and key unless the counter is a quiet probe.
func (c *Counter) warn(logf func(string, ...any), key, msg string) {
	if !c.quiet {
		warnOnce(logf, key, msg)
	}
}

// Probe opens counters for the cgroup dir on one CPU without logging and reports the
// mode colo would get, the reason for a fallback and the raw-stall table in use.
func Probe(dir string, cpu int, sys Sys) (mode Mode, reason, microarch string, err error) {
	if b, e := os.ReadFile("/proc/cpuinfo"); e == nil {
		microarch = DetectMicroarch(b)
	}
	c, err := OpenCgroup(dir, []int{cpu}, Options{Sys: sys, Microarch: microarch, Quiet: true})
	if err != nil {
		return ModeNone, err.Error(), microarch, err
	}
	defer c.Close()
	return c.Mode(), c.Reason(), microarch, nil
}
