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
	if LargestRun(0b110111110011, 12) != 5 || LongestRun(0b110111110011, 12) != 0b000111110000 {
		t.Error("LargestRun/LongestRun")
	}
	// ties go to the highest run (system/default keeps the top ways, next to the reserve)
	if m := LongestRun(0b111000111, 12); m != 0b111000000 {
		t.Errorf("LongestRun tie = %#b", m)
	}
	if LongestRun(0, 12) != 0 || LongestRun(0xfff, 8) != 0xff {
		t.Error("LongestRun of empty or wider mask")
	}
	if Low(0) != -1 || Low(0x1c0) != 6 {
		t.Error("Low")
	}
}
