package dockerprobe

import (
	"context"
	"strings"
	"testing"
	"time"

	"colo/metric"
	"colo/stress"
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
