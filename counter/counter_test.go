package counter

import (
	"math"
	"testing"
	"time"
)

// Memory bandwidth is ΔMBM over the time between the two monitoring reads, not the
// interval: a read every fourth interval of a steady 400 MB/s stream gives 400, and an
// interval without a new read gives 0 (the agent keeps its last rate).
func TestBetweenBandwidthOverMonitoringReads(t *testing.T) {
	ms := time.Millisecond
	prev := Reading{At: 150 * ms, MonAt: 0, MBMTotalBytes: 0, CPUTime: 10 * ms}
	cur := Reading{At: 200 * ms, MonAt: 200 * ms, MBMTotalBytes: 80e6, CPUTime: 20 * ms}
	s, ok := Between(prev, cur)
	if !ok || s.Interval != 50*ms || math.Abs(s.MemBandwidthMBps-400) > 1e-9 {
		t.Errorf("read after 200ms of 400 MB/s: %+v (ok %v), want 400 over an interval of 50ms", s, ok)
	}
	same := Reading{At: 250 * ms, MonAt: 200 * ms, MBMTotalBytes: 80e6}
	if s, _ := Between(cur, same); s.MemBandwidthMBps != 0 {
		t.Errorf("no new monitoring read: bandwidth %v, want 0", s.MemBandwidthMBps)
	}
	if _, ok := Between(cur, cur); ok {
		t.Error("a zero interval gave a sample")
	}
}

// Between is every counter's increase over the interval, occupancy at its end, and never
// a negative count (a counter that went back: 0).
func TestBetweenDeltas(t *testing.T) {
	prev := Reading{At: time.Second, Instructions: 1e9, Cycles: 2e9, LLCMisses: 5e6, L2Misses: 7, LLCOccupancy: 4 << 20}
	cur := Reading{At: 3 * time.Second, Instructions: 3e9, Cycles: 3e9, LLCMisses: 4e6, L2Misses: 10, LLCOccupancy: 1 << 20}
	s, ok := Between(prev, cur)
	if !ok || s.Interval != 2*time.Second || s.At != 3*time.Second || s.Instructions != 2e9 || s.Cycles != 1e9 ||
		s.LLCMisses != 0 || s.L2Misses != 3 || s.LLCOccupancy != 1<<20 || s.MemBandwidthMBps != 0 {
		t.Errorf("Between = %+v, %v", s, ok)
	}
}
