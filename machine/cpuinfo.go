package machine

import (
	"bufio"
	"os"
	"strings"
)

// CPUModel returns the first "model name" of a /proc/cpuinfo-format file ("AMD EPYC 7B13
// 64-Core Processor"), with runs of spaces collapsed; "" when the file has none (some
// architectures name the CPU elsewhere) or cannot be read.
func CPUModel(cpuinfo string) string {
	f, err := os.Open(cpuinfo)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}
