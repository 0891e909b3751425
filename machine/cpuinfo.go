package machine

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
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

// ModelClockGHz is the nominal clock an Intel model name states ("Intel(R) Xeon(R) CPU
// E5-2680 v2 @ 2.80GHz" → 2.8); false when the name states none (AMD names do not).
func ModelClockGHz(model string) (float64, bool) {
	_, after, ok := strings.Cut(model, "@")
	if !ok {
		return 0, false
	}
	f := strings.Fields(after)
	if len(f) == 0 {
		return 0, false
	}
	v, unit := f[0], 1.0
	switch {
	case strings.HasSuffix(v, "GHz"):
		v = strings.TrimSuffix(v, "GHz")
	case strings.HasSuffix(v, "MHz"):
		v, unit = strings.TrimSuffix(v, "MHz"), 1e-3
	default:
		return 0, false
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || x <= 0 {
		return 0, false
	}
	return x * unit, true
}

// NameCPU records the CPU's model name (sysfs does not name it; /proc/cpuinfo does) and,
// when the clock was assumed for want of cpufreq, takes the clock the name states.
func (p *Profile) NameCPU(model string) {
	if model == "" {
		return
	}
	p.CPU = model
	const assumed = "clock 2.0 GHz"
	if ghz, ok := ModelClockGHz(model); ok && strings.Contains(p.Description, assumed) {
		p.ClockGHz = ghz
		p.Description = strings.Replace(p.Description, assumed, fmt.Sprintf("clock %.2f GHz from the CPU's name (no cpufreq)", ghz), 1)
	}
}
