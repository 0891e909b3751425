package stress

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DetectLLCBytes reads the size of the largest cache of CPU 0 from sysfs
// (/sys/devices/system/cpu/cpu0/cache/index*/size, e.g. "32768K"). It returns 0 when sysfs
// has no cache information (then the llc stressor needs --mb).
func DetectLLCBytes() int64 {
	return detectLLCBytes("/sys/devices/system/cpu/cpu0/cache")
}

func detectLLCBytes(dir string) int64 {
	idx, _ := filepath.Glob(filepath.Join(dir, "index*"))
	var best int64
	for _, d := range idx {
		b, err := os.ReadFile(filepath.Join(d, "size"))
		if err != nil {
			continue
		}
		n, err := parseCacheSize(strings.TrimSpace(string(b)))
		if err == nil && n > best {
			best = n
		}
	}
	return best
}

// parseCacheSize parses sysfs cache sizes such as "32768K", "2M" or "512".
func parseCacheSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("cache size %q: not a size", s)
	}
	return n * mult, nil
}
