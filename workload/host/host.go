// Package host reads the facts about a Linux host that decide how faithfully colo can
// measure and partition it (cgroup mode, CPU frequency governor and turbo, SMT, huge
// pages), and turns them, together with the Docker, perf and resctrl probes, into the
// checks `colo doctor` prints: what each finding means for colo and how to fix it.
package host

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"colo/workload"
)

// Facts are read from a root directory ("/" on a real host, a fixture tree in tests).
type Facts struct {
	CgroupMode workload.CgroupMode
	// Governors are the distinct scaling_governor values over CPUs (nil: no cpufreq).
	Governors []string
	// Turbo is "on", "off" or "" (unknown: no intel_pstate/no_turbo nor cpufreq/boost).
	Turbo string
	// SMT is the content of smt/control (on, off, forceoff, notsupported) or "".
	SMT       string
	SMTActive bool
	// HugePagesTotal and HugePageSizeKB come from /proc/meminfo; THP is the selected
	// transparent_hugepage mode.
	HugePagesTotal int
	HugePagesFree  int
	HugePageSizeKB int
	THP            string
}

// Read gathers the facts below root.
func Read(root string) Facts {
	var f Facts
	p := func(s string) string { return filepath.Join(root, s) }
	if b, err := os.ReadFile(p("proc/self/mountinfo")); err == nil {
		f.CgroupMode = workload.Mode(workload.Mounts(b))
	} else {
		f.CgroupMode = workload.CgroupUnknown
	}
	govs := map[string]bool{}
	matches, _ := filepath.Glob(p("sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"))
	for _, m := range matches {
		if b, err := os.ReadFile(m); err == nil {
			govs[strings.TrimSpace(string(b))] = true
		}
	}
	for g := range govs {
		f.Governors = append(f.Governors, g)
	}
	sort.Strings(f.Governors)
	if b, err := os.ReadFile(p("sys/devices/system/cpu/intel_pstate/no_turbo")); err == nil {
		f.Turbo = map[bool]string{true: "off", false: "on"}[strings.TrimSpace(string(b)) == "1"]
	} else if b, err := os.ReadFile(p("sys/devices/system/cpu/cpufreq/boost")); err == nil {
		f.Turbo = map[bool]string{true: "on", false: "off"}[strings.TrimSpace(string(b)) == "1"]
	}
	if b, err := os.ReadFile(p("sys/devices/system/cpu/smt/control")); err == nil {
		f.SMT = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(p("sys/devices/system/cpu/smt/active")); err == nil {
		f.SMTActive = strings.TrimSpace(string(b)) == "1"
	}
	if b, err := os.ReadFile(p("proc/meminfo")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			n, _ := strconv.Atoi(strings.Fields(v + " 0")[0])
			switch k {
			case "HugePages_Total":
				f.HugePagesTotal = n
			case "HugePages_Free":
				f.HugePagesFree = n
			case "Hugepagesize":
				f.HugePageSizeKB = n
			}
		}
	}
	if b, err := os.ReadFile(p("sys/kernel/mm/transparent_hugepage/enabled")); err == nil {
		for _, w := range strings.Fields(string(b)) {
			if strings.HasPrefix(w, "[") {
				f.THP = strings.Trim(w, "[]")
			}
		}
	}
	return f
}
