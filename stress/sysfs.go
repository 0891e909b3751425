package stress

import (
	"os"
	"path/filepath"
	"strings"

	"colo/machine"
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
		n, err := machine.ParseCacheSize(strings.TrimSpace(string(b)))
		if err == nil && n > best {
			best = n
		}
	}
	return best
}
