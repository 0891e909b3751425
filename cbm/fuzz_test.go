package cbm

import "testing"

// FuzzParseMask: masks never panic and what parses prints back to the same mask.
func FuzzParseMask(f *testing.F) {
	for _, s := range []string{"0x600", "7ff", "0X1", "", "0x", "ffffffffffffffff", "1ffffffffffffffff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(m.String())
		if err != nil || again != m {
			t.Fatalf("%q -> %#x -> %q -> %#x, %v", s, uint64(m), m.String(), uint64(again), err)
		}
	})
}
