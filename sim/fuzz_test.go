package sim

import "testing"

// FuzzParseSize: sizes never panic, and what parses is in 1..MaxSize (issue #13:
// 8589934592G overflowed to a negative size).
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"6M", "60MB", "1GiB", "4096", "8589934592G", "-1", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && (n < 1 || n > MaxSize) {
			t.Fatalf("%q -> %d", s, n)
		}
	})
}

// FuzzParseWorkload: a workload spec (neighbor:6M:1g, table models...) never panics.
func FuzzParseWorkload(f *testing.F) {
	for _, s := range []string{"neighbor:6M:1g", "neighbor:8589934592G", "neighbor:6M:2m:stride", "compute", "stream:64M"} {
		f.Add(s, 1)
	}
	f.Fuzz(func(t *testing.T, s string, threads int) {
		_, _ = ParseWorkload(s, threads%1024, nil)
	})
}
