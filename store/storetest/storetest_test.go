package storetest

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"colo/store"
)

// Same seed, same run; another seed, another run. MasksAt replays removals.
func TestGenerateDeterministic(t *testing.T) {
	read := func(seed uint64) ([]store.Sample, []store.Allocation) {
		dir := filepath.Join(t.TempDir(), "run")
		if _, err := Generate(dir, Options{Seed: seed, Jobs: 8, Schedulers: []string{"dynamic"}, Priority: 0.5}); err != nil {
			t.Fatal(err)
		}
		st, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		s, _ := st.Samples(1)
		a, _ := st.Allocations(1)
		return s, a
	}
	s1, a1 := read(9)
	s2, a2 := read(9)
	s3, _ := read(10)
	// %v prints NaN as NaN, so equal runs print equal (reflect.DeepEqual has NaN != NaN).
	if fmt.Sprintf("%v", s1) != fmt.Sprintf("%v", s2) || fmt.Sprintf("%v", a1) != fmt.Sprintf("%v", a2) {
		t.Error("same seed gave different runs")
	}
	if fmt.Sprintf("%v", s1) == fmt.Sprintf("%v", s3) {
		t.Error("different seeds gave the same run")
	}
	allocs := []store.Allocation{
		{T: 0, Socket: 0, CLOS: "a", Mask: 0x3},
		{T: time.Second, Socket: 0, CLOS: "b", Mask: 0xc},
		{T: 2 * time.Second, Socket: 0, CLOS: "a", Mask: 0},
	}
	if m := MasksAt(allocs, 1500*time.Millisecond); len(m[0]) != 2 || m[0]["a"] != 0x3 {
		t.Errorf("at 1.5 s: %v", m)
	}
	if m := MasksAt(allocs, 2*time.Second); len(m[0]) != 1 || m[0]["b"] != 0xc {
		t.Errorf("at 2 s: %v", m)
	}
}
