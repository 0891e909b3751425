package policy

import "testing"

// FuzzParseMask: masks never panic and what parses formats back to the same mask.
func FuzzParseMask(f *testing.F) {
	for _, s := range []string{"0x600", "7ff", "0X1", "", "0x", "ffffffffffffffff", "1ffffffffffffffff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMask(s)
		if err != nil {
			return
		}
		again, err := ParseMask(FormatMask(m))
		if err != nil || again != m {
			t.Fatalf("%q -> %#x -> %q -> %#x, %v", s, m, FormatMask(m), again, err)
		}
	})
}
