package sched

import (
	"testing"

	"colo/machine"
)

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
