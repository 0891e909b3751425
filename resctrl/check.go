package resctrl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// rdtFlags are the /proc/cpuinfo flags of RDT (Intel) and PQoS (AMD) features.
var rdtFlags = []string{"rdt_a", "cat_l3", "cat_l2", "cdp_l3", "cdp_l2", "mba", "smba", "bmec", "abmc",
	"cqm", "cqm_llc", "cqm_occup_llc", "cqm_mbm_total", "cqm_mbm_local"}

// Status says whether resctrl is usable at a root, what it supports, and if not, why
// and what to do. colo doctor prints it.
type Status struct {
	Root string `json:"root"`
	// Mounted: the root holds a resctrl tree (info/ readable): the kernel's, or an
	// emulator mounted through FUSE (Emulated).
	Mounted      bool     `json:"mounted"`
	Emulated     bool     `json:"emulated"`
	FSType       string   `json:"fstype,omitempty"`
	MountOptions []string `json:"mount_options,omitempty"`
	// KernelSupport: /proc/filesystems lists resctrl (CONFIG_X86_CPU_RESCTRL or MPAM).
	KernelSupport bool `json:"kernel_support"`
	// CPUFlags are the RDT/PQoS flags /proc/cpuinfo reports.
	CPUFlags   []string `json:"cpu_flags"`
	Hypervisor bool     `json:"hypervisor"`
	// What the mount supports.
	Resources  []string `json:"resources,omitempty"`
	Monitoring []string `json:"monitoring,omitempty"`
	CLOSIDs    int      `json:"closids,omitempty"`
	RMIDs      int      `json:"rmids,omitempty"`
	CDP        bool     `json:"cdp,omitempty"`
	MBps       bool     `json:"mba_in_mbps,omitempty"`
	// Reason is empty when resctrl is usable, else why not and what to do.
	Reason string `json:"reason,omitempty"`
}

// Check inspects root (ResolveRoot applied) on this host.
func Check(root string) Status { return CheckWith(ResolveRoot(root), "/proc") }

// CheckWith is Check with another /proc (for tests).
func CheckWith(root, proc string) Status {
	st := Status{Root: root}
	if b, err := os.ReadFile(filepath.Join(proc, "cpuinfo")); err == nil {
		flags := map[string]bool{}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok || strings.TrimSpace(k) != "flags" {
				continue
			}
			for _, f := range strings.Fields(v) {
				flags[f] = true
			}
			break // all CPUs report the same flags
		}
		for _, f := range rdtFlags {
			if flags[f] {
				st.CPUFlags = append(st.CPUFlags, f)
			}
		}
		st.Hypervisor = flags["hypervisor"]
	}
	if b, err := os.ReadFile(filepath.Join(proc, "filesystems")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) > 0 && f[len(f)-1] == "resctrl" {
				st.KernelSupport = true
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(proc, "mounts")); err == nil {
		clean := filepath.Clean(root)
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 4 && filepath.Clean(f[1]) == clean {
				st.FSType = f[2]
				st.MountOptions = strings.Split(f[3], ",")
			}
		}
	}
	c := Open(root, Options{})
	in, err := c.Info()
	if err == nil {
		st.Mounted = true
		st.Emulated = st.FSType != "resctrl"
		for _, r := range in.Resources {
			st.Resources = append(st.Resources, r.Name)
		}
		st.CLOSIDs = in.CLOSIDs()
		st.CDP = in.CDP()
		st.MBps = in.MBps
		if in.Mon != nil {
			st.Monitoring = in.Mon.Features
			st.RMIDs = in.Mon.NumRMIDs
		}
		return st
	}
	switch {
	case len(st.CPUFlags) == 0 && st.Hypervisor:
		st.Reason = "no RDT/PQoS: this is a virtual machine (cpuinfo flag 'hypervisor') and the hypervisor exposes none of " +
			strings.Join(rdtFlags[:6], ", ") + ", cqm...; run on bare metal, or use the simulated testbed (colo resctrl emulate --profile intel --mount DIR, then --resctrl-root DIR or COLO_RESCTRL_ROOT=DIR)"
	case len(st.CPUFlags) == 0:
		st.Reason = "no RDT/PQoS: /proc/cpuinfo lists none of " + strings.Join(rdtFlags, ", ") +
			" (CPU without cache allocation or monitoring, or disabled with rdt=! / nordt on the kernel command line); use the emulator instead"
	case !st.KernelSupport:
		st.Reason = fmt.Sprintf("the CPU has %s but the kernel has no resctrl filesystem (build it with CONFIG_X86_CPU_RESCTRL=y)", strings.Join(st.CPUFlags, ","))
	case st.FSType != "":
		st.Reason = fmt.Sprintf("%s is mounted as %s, not resctrl: %v", root, st.FSType, err)
	default:
		st.Reason = fmt.Sprintf("resctrl is not mounted at %s: mount -t resctrl resctrl %s (add -o cdp or -o mba_MBps as needed)", root, root)
	}
	return st
}
