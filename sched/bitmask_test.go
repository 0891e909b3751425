package sched

import (
	"testing"

	"colo/machine"
)

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

func TestDefaultMask(t *testing.T) {
	m, err := machine.Get("skx-6138") // 11 ways, contiguous masks only
	if err != nil {
		t.Fatal(err)
	}
	// groups hold ways 2-4 and 8: free are 0-1, 5-7, 9-10; the longest run is 5-7
	if got := DefaultMask(m, 0x11c); got != 0x0e0 {
		t.Errorf("Intel DefaultMask(0x11c) = %#x, want 0xe0", got)
	}
	// ties go to the highest stretch: free 0-2 and 8-10
	if got := DefaultMask(m, 0x0f8); got != 0x700 {
		t.Errorf("Intel DefaultMask(0xf8) = %#x, want 0x700", got)
	}
	sparse := *m
	sparse.CAT.SparseMasks = true // AMD: every free way
	if got := DefaultMask(&sparse, 0x11c); got != 0x7ff&^0x11c {
		t.Errorf("sparse DefaultMask(0x11c) = %#x, want %#x", got, 0x7ff&^0x11c)
	}
}
