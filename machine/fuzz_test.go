package machine

import "testing"

// FuzzParseCacheSize: sysfs cache sizes never panic and never parse to a negative size.
func FuzzParseCacheSize(f *testing.F) {
	for _, s := range []string{"32768K", "24M", "1G", "512", "9999999999999G", "-1K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseCacheSize(s); err == nil && n < 0 {
			t.Fatalf("%q -> %d", s, n)
		}
	})
}
