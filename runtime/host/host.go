// Package host reads the facts about a Linux host that decide how faithfully colo can
// measure and partition it (cgroup mode, CPU frequency governor and turbo, SMT, huge
// pages, resctrl), and turns them, together with Docker and perf probes, into the
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

	rt "colo/runtime"
)

// Facts are read from a root directory ("/" on a real host, a fixture tree in tests).
type Facts struct {
	CgroupMode rt.CgroupMode
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
	Resctrl        Resctrl
}

// Resctrl is what the host offers for RDT.
type Resctrl struct {
	Mounted   bool
	MountDir  string
	CPUFlags  []string // rdt_a, cat_l3, cdp_l3, mba, cqm_llc, cqm_occup_llc, cqm_mbm_total, cqm_mbm_local
	Resources []string // info/<resource> directories when mounted (L3, MB, L3_MON, ...)
}

// Read gathers the facts below root.
func Read(root string) Facts {
	var f Facts
	p := func(s string) string { return filepath.Join(root, s) }
	if b, err := os.ReadFile(p("proc/self/mountinfo")); err == nil {
		f.CgroupMode = rt.Mode(rt.Mounts(b))
		f.Resctrl.MountDir = resctrlMount(b)
		f.Resctrl.Mounted = f.Resctrl.MountDir != ""
	} else {
		f.CgroupMode = rt.CgroupUnknown
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
	if b, err := os.ReadFile(p("proc/cpuinfo")); err == nil {
		f.Resctrl.CPUFlags = rdtFlags(b)
	}
	if f.Resctrl.Mounted {
		ents, _ := os.ReadDir(filepath.Join(root, f.Resctrl.MountDir, "info"))
		for _, e := range ents {
			if e.IsDir() {
				f.Resctrl.Resources = append(f.Resctrl.Resources, e.Name())
			}
		}
	}
	return f
}

func resctrlMount(mountinfo []byte) string {
	for _, l := range strings.Split(string(mountinfo), "\n") {
		f := strings.Fields(l)
		for i, x := range f {
			if x == "-" && i+1 < len(f) && f[i+1] == "resctrl" && len(f) > 4 {
				return f[4]
			}
		}
	}
	return ""
}

var rdtFlagNames = []string{"rdt_a", "cat_l3", "cat_l2", "cdp_l3", "mba", "cqm", "cqm_llc", "cqm_occup_llc", "cqm_mbm_total", "cqm_mbm_local", "smba", "bmec", "abmc"}

func rdtFlags(cpuinfo []byte) []string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "flags" {
			continue
		}
		have := map[string]bool{}
		for _, w := range strings.Fields(v) {
			have[w] = true
		}
		var out []string
		for _, n := range rdtFlagNames {
			if have[n] {
				out = append(out, n)
			}
		}
		return out
	}
	return nil
}
