package machine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Sizes as the kernel's cacheinfo writes them ("48K", "2048K", "24M"), and what is not one.
func TestParseCacheSize(t *testing.T) {
	for s, want := range map[string]int64{"48K": 48 << 10, "32768K": 32 << 20, "24M": 24 << 20, "1G": 1 << 30, "512": 512} {
		if n, err := ParseCacheSize(s); err != nil || n != want {
			t.Errorf("ParseCacheSize(%q) = %d, %v; want %d", s, n, err, want)
		}
	}
	for _, s := range []string{"lots", "", "K", "-1K", "1.5M"} {
		if _, err := ParseCacheSize(s); err == nil {
			t.Errorf("ParseCacheSize(%q) accepted", s)
		}
	}
	p := filepath.Join(t.TempDir(), "size")
	os.WriteFile(p, []byte("12X\n"), 0o644)
	if _, err := readSize(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), `"12X"`) {
		t.Errorf("readSize of a bad file: %v, want the path and the value", err)
	}
}
