package sched

import "testing"

func TestLowestWaysAndLargestRun(t *testing.T) {
	if m, err := LowestWays(0x1c0, 2); err != nil || m != 0x0c0 {
		t.Errorf("LowestWays(0x1c0,2) = %#x, %v", m, err)
	}
	for _, bad := range []struct {
		m uint64
		n int
	}{{0x1c0, 4}, {0xc03, 2}, {0, 1}, {0x1c0, 0}} {
		if _, err := LowestWays(bad.m, bad.n); err == nil {
			t.Errorf("LowestWays(%#x, %d) succeeded", bad.m, bad.n)
		}
	}
	if LargestRun(0b110111110011, 12) != 5 {
		t.Error("LargestRun")
	}
	if Low(0) != -1 || Low(0x1c0) != 6 {
		t.Error("Low")
	}
}
