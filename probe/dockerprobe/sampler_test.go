package dockerprobe

import (
	"context"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"colo/metric"
	"colo/perf"
	"colo/perf/perftest"
	"colo/probe"
	"colo/stress"
	"colo/workload"
)

// The rate sampler pairs each progress line with the CPU time read at its arrival and
// returns the change since the previous Sample: work per CPU ns is the state machine's
// per-sample "IPC".
func TestRateSampler(t *testing.T) {
	s := newBare()
	s.waitNewMax = 2 * time.Second
	lines := make(chan stress.Report)
	cpus := make(chan float64, 8) // the CPU time read when each line arrives
	s.consume(lines, func() (float64, error) { return <-cpus, nil })
	wall := 0.0 // the target's elapsed seconds: 2 ms per line
	send := func(work, cpuNs float64) {
		cpus <- cpuNs
		wall += 0.002
		lines <- stress.Report{Work: work, Unit: "accesses", Elapsed: wall}
	}
	go send(100, 1e6)
	if err := s.waitFirst(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	first, err := s.Sample()
	if err != nil || first.Instructions != 100 || first.Cycles != 1e6 {
		t.Fatalf("first sample %+v, %v: want the work and CPU since the start", first, err)
	}
	// No new line yet: Sample waits for one.
	go func() { time.Sleep(20 * time.Millisecond); send(300, 2e6) }()
	c, err := s.Sample()
	if err != nil || c.Instructions != 200 || c.Cycles != 1e6 {
		t.Fatalf("sample %+v, %v: want work 200 over 1e6 CPU ns", c, err)
	}
	if r := metric.IPC(c.Instructions, c.Cycles) * 1e9; r != 2e5 {
		t.Fatalf("work per CPU second %v, want 2e5", r)
	}
	// A line without CPU progress is not a sample on its own: it joins the next one.
	go func() { send(350, 2e6); send(500, 3e6) }()
	c, err = s.Sample()
	if err != nil || c.Instructions != 200 || c.Cycles != 1e6 {
		t.Fatalf("sample %+v, %v: want the two lines merged (work 200 over 1e6 ns)", c, err)
	}
	s.mu.Lock()
	unit := s.unit
	s.mu.Unlock()
	if unit != "accesses" {
		t.Fatalf("unit %q", unit)
	}
	// Segment 1: the straddling sample does not count towards its CPU share; then the
	// target has its core to itself (1e6 CPU ns over 1 ms).
	s.segment(1)
	go send(600, 4e6)
	if _, err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	go func() { cpus <- 5e6; wall += 0.001; lines <- stress.Report{Work: 700, Elapsed: wall} }()
	if _, err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	// Baseline: 3e6 CPU ns over four lines of 2 ms.
	if sh := s.cpuShare(); sh[0] != 3e6/8e6 || sh[1] != 1 || sh[2] != 0 {
		t.Fatalf("CPU share per segment %v, want [0.375 1 0 ...]", sh)
	}
	close(lines)
	if _, err := s.Sample(); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("after the target's output ended: %v", err)
	}
}

// The metric follows what the target's counters can open, on perf's fake PMU: IPCE with
// the stall events (and the samples carry the counters' true ratios), IPC without them,
// work per CPU second from task-clock without any hardware event.
func TestMetricFromCounters(t *testing.T) {
	H, R, S := uint32(unix.PERF_TYPE_HARDWARE), uint32(unix.PERF_TYPE_RAW), uint32(unix.PERF_TYPE_SOFTWARE)
	hw := map[perftest.Key]float64{
		{Type: H, Config: unix.PERF_COUNT_HW_INSTRUCTIONS}:        2.0e9,
		{Type: H, Config: unix.PERF_COUNT_HW_CPU_CYCLES}:          2.5e9,
		{Type: H, Config: unix.PERF_COUNT_HW_CACHE_REFERENCES}:    4e7,
		{Type: H, Config: unix.PERF_COUNT_HW_CACHE_MISSES}:        1e7,
		{Type: H, Config: unix.PERF_COUNT_HW_BRANCH_INSTRUCTIONS}: 3e8,
		{Type: H, Config: unix.PERF_COUNT_HW_BRANCH_MISSES}:       3e6,
	}
	open := func(rates map[perftest.Key]float64) *sampler {
		t.Helper()
		var now time.Time
		pmu := perftest.New(rates, 1)
		pmu.Now = func() time.Time { return now }
		c, err := perf.OpenCgroup(t.TempDir(), []int{0}, perf.Options{Sys: pmu, Microarch: "icelake-sp", Quiet: true})
		if err != nil {
			t.Fatal(err)
		}
		s := newBare()
		if err := s.useCounter(c, workload.Cgroup{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.close)
		if s.hw {
			s.Sample()
			now = now.Add(50 * time.Millisecond) // one 50 ms sample on the fake clock
		}
		return s
	}

	withStalls := maps.Clone(hw)
	withStalls[perftest.Key{Type: R, Config: 0x40004a3}] = 1.0e9 // cycle_activity.stalls_total (Ice Lake-SP)
	s := open(withStalls)
	if s.metric != probe.MetricIPCE {
		t.Fatalf("PMU with stall events: metric %s (%s)", s.metric, s.why)
	}
	c, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if ipc, ipce := metric.IPC(c.Instructions, c.Cycles), metric.IPCE(c.StallCycles, c.Cycles); math.Abs(ipc-0.8) > 1e-9 || math.Abs(ipce-0.6) > 1e-9 {
		t.Fatalf("sample %+v: IPC %v (want 0.8), IPCE %v (want 1 − 1.0/2.5 = 0.6)", c, ipc, ipce)
	}

	if s := open(hw); s.metric != probe.MetricIPC {
		t.Fatalf("PMU without stall events: metric %s (%s)", s.metric, s.why)
	}
	s = open(map[perftest.Key]float64{{Type: S, Config: unix.PERF_COUNT_SW_TASK_CLOCK}: 1e9})
	if s.metric != probe.MetricCPURate || s.hw || !strings.Contains(s.why, "no hardware PMU") {
		t.Fatalf("no PMU: metric %s, hw %v (%s)", s.metric, s.hw, s.why)
	}
}
