package machine

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DefaultMemBWPerSocketMBps is the memory bandwidth assumed for a detected machine: sysfs
// does not expose it. 20,000 MB/s is a conservative figure for two channels of DDR4; pass
// the real value with a profile file when it matters.
const DefaultMemBWPerSocketMBps = 20000

// Detect describes the host from sysfs and, when resctrl is mounted, from its info
// directory. sysfsRoot is the sysfs mount ("/sys"); the topology is read from
// sysfsRoot/devices/system/cpu: the online CPUs, each CPU's topology/physical_package_id and
// core_id, and the highest-level cache of cpu0 (cache/index*/level, size,
// ways_of_associativity, coherency_line_size, shared_cpu_list; the L3 domains are the
// distinct shared_cpu_list sets). The vendor comes from devices/system/cpu/modalias
// (x86 vendor 0 = Intel, 2 = AMD; aarch64 = Arm).
//
// resctrlRoot is the resctrl mount ("/sys/fs/resctrl"); an empty string or a directory
// without info/ means "not mounted": the profile then reports no CAT (one CLOS, full
// mask) and no MBA. When mounted, info/L3/cbm_mask gives the allocatable ways (which can
// differ from the associativity, e.g. 11 of Skylake-SP's ways), and min_cbm_bits,
// num_closids, shareable_bits, sparse_masks, info/L3CODE (CDP), info/MB/min_bandwidth,
// bandwidth_gran, num_closids, delay_linear and info/L3_MON/num_rmids fill the rest.
//
// Not in sysfs and therefore assumed (and said so in Description): memory bandwidth
// (DefaultMemBWPerSocketMBps), LLC slices (one per core of the domain, seed000.md §7.1)
// and the clock when cpufreq is absent.
func Detect(sysfsRoot, resctrlRoot string) (*Profile, error) {
	return DetectDirs(filepath.Join(sysfsRoot, "devices", "system", "cpu"), resctrlRoot)
}

// DetectDirs is Detect with the CPU directory given directly (a capture's DIR/cpu, a
// copy of /sys/devices/system/cpu).
func DetectDirs(cpuDir, resctrlRoot string) (*Profile, error) {
	cpus, err := onlineCPUs(cpuDir)
	if err != nil {
		return nil, err
	}
	type coreKey struct{ pkg, core int }
	pkgs := map[int]bool{}
	cores := map[coreKey]bool{}
	for _, c := range cpus {
		top := filepath.Join(cpuDir, fmt.Sprintf("cpu%d", c), "topology")
		pkg, err := readInt(filepath.Join(top, "physical_package_id"))
		if err != nil {
			return nil, err
		}
		core, err := readInt(filepath.Join(top, "core_id"))
		if err != nil {
			return nil, err
		}
		pkgs[pkg] = true
		cores[coreKey{pkg, core}] = true
	}
	p := &Profile{
		Name:           "host",
		Vendor:         detectVendor(cpuDir),
		CPU:            "unknown (not in sysfs)",
		Sockets:        len(pkgs),
		ThreadsPerCore: max(1, len(cpus)/len(cores)),
		NumRMIDs:       0,
		Source:         "detected from " + cpuDir,
	}
	p.CoresPerSocket = len(cores) / p.Sockets
	var assumed []string

	llc, domains, err := detectLLC(cpuDir, cpus)
	if err != nil {
		return nil, err
	}
	p.LLC = llc
	// Domains per socket: distinct LLC sharing sets divided over the packages.
	p.LLC.DomainsPerSocket = max(1, domains/p.Sockets)
	if p.CoresPerSocket%p.LLC.DomainsPerSocket != 0 {
		p.LLC.DomainsPerSocket = 1
	}
	p.LLC.Slices = p.CoresPerDomain()
	assumed = append(assumed, "llc slices = cores per domain")

	p.ClockGHz = 0
	if khz, err := readInt(filepath.Join(cpuDir, "cpu0", "cpufreq", "cpuinfo_max_freq")); err == nil {
		p.ClockGHz = float64(khz) / 1e6
	} else {
		p.ClockGHz = 2.0
		assumed = append(assumed, "clock 2.0 GHz")
	}
	p.MemBWPerSocketMBps = DefaultMemBWPerSocketMBps
	assumed = append(assumed, fmt.Sprintf("memory bandwidth %d MB/s per socket", DefaultMemBWPerSocketMBps))

	// CAT without resctrl: one class (the default group) holding every way.
	p.CAT = CAT{NumCLOSIDs: 1, MinCBMBits: 1}
	if resctrlRoot != "" {
		if err := detectResctrl(p, resctrlRoot); err != nil {
			return nil, err
		}
	}
	if p.MBA == nil || p.CAT.NumCLOSIDs == 1 {
		p.Description = "detected host, resctrl not mounted"
	} else {
		p.Description = "detected host with resctrl"
	}
	p.Description += "; assumed: " + strings.Join(assumed, ", ")
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("detected topology under %s is inconsistent: %w", cpuDir, err)
	}
	return p, nil
}

// onlineCPUs reads devices/system/cpu/online, or lists the cpuN directories if it is absent.
func onlineCPUs(cpuDir string) ([]int, error) {
	if b, err := os.ReadFile(filepath.Join(cpuDir, "online")); err == nil {
		l, err := ParseCPUList(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(cpuDir, "online"), err)
		}
		if len(l) > 0 {
			return l, nil
		}
	}
	ents, err := os.ReadDir(cpuDir)
	if err != nil {
		return nil, fmt.Errorf("reading CPU topology: %w (is sysfs mounted at the given root?)", err)
	}
	var out []int
	for _, e := range ents {
		if n, ok := strings.CutPrefix(e.Name(), "cpu"); ok {
			if c, err := strconv.Atoi(n); err == nil {
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no cpuN directories in %s (is sysfs mounted at the given root?)", cpuDir)
	}
	sort.Ints(out)
	return out, nil
}

// detectLLC reads the highest-level cache of the first CPU and counts the distinct sets
// of CPUs sharing such a cache (the LLC domains).
func detectLLC(cpuDir string, cpus []int) (Cache, int, error) {
	first := filepath.Join(cpuDir, fmt.Sprintf("cpu%d", cpus[0]), "cache")
	idx, level, err := llcIndex(first)
	if err != nil {
		return Cache{}, 0, err
	}
	dir := filepath.Join(first, idx)
	size, err := readSize(filepath.Join(dir, "size"))
	if err != nil {
		return Cache{}, 0, err
	}
	ways, err := readInt(filepath.Join(dir, "ways_of_associativity"))
	if err != nil {
		return Cache{}, 0, err
	}
	line, err := readInt(filepath.Join(dir, "coherency_line_size"))
	if err != nil {
		line = 64
	}
	domains := map[string]bool{}
	for _, c := range cpus {
		cdir := filepath.Join(cpuDir, fmt.Sprintf("cpu%d", c), "cache")
		ci, cl, err := llcIndex(cdir)
		if err != nil || cl != level {
			return Cache{}, 0, fmt.Errorf("%s: no level-%d cache like cpu%d's", cdir, level, cpus[0])
		}
		b, err := os.ReadFile(filepath.Join(cdir, ci, "shared_cpu_list"))
		if err != nil {
			return Cache{}, 0, err
		}
		domains[strings.TrimSpace(string(b))] = true
	}
	return Cache{SizeBytes: size, Ways: ways, LineBytes: line}, len(domains), nil
}

// llcIndex finds the cache/indexN directory with the highest level (unified or data).
func llcIndex(cacheDir string) (string, int, error) {
	ents, err := os.ReadDir(cacheDir)
	if err != nil {
		return "", 0, fmt.Errorf("reading caches: %w", err)
	}
	best, bestLevel := "", -1
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "index") {
			continue
		}
		l, err := readInt(filepath.Join(cacheDir, e.Name(), "level"))
		if err != nil {
			continue
		}
		if t, err := os.ReadFile(filepath.Join(cacheDir, e.Name(), "type")); err == nil && strings.TrimSpace(string(t)) == "Instruction" {
			continue
		}
		if l > bestLevel {
			best, bestLevel = e.Name(), l
		}
	}
	if best == "" {
		return "", 0, fmt.Errorf("no cache/index*/level files in %s", cacheDir)
	}
	return best, bestLevel, nil
}

// detectVendor reads the CPU modalias: "cpu:type:x86,venVVVV..." (the kernel's X86_VENDOR_*
// numbers: 0 Intel, 2 AMD, 9 Hygon) or "cpu:type:aarch64:...".
func detectVendor(cpuDir string) Vendor {
	b, err := os.ReadFile(filepath.Join(cpuDir, "modalias"))
	if err != nil {
		return Intel
	}
	s := string(b)
	switch {
	case strings.Contains(s, "aarch64"):
		return Arm
	case strings.Contains(s, "ven0002"), strings.Contains(s, "ven0009"):
		return AMD
	}
	return Intel
}

// detectResctrl fills CAT, MBA and the RMID count from resctrlRoot/info.
func detectResctrl(p *Profile, root string) error {
	info := filepath.Join(root, "info")
	if _, err := os.Stat(info); errors.Is(err, fs.ErrNotExist) {
		return nil // not mounted
	} else if err != nil {
		return err
	}
	l3 := filepath.Join(info, "L3")
	if _, err := os.Stat(l3); err != nil {
		// CDP splits L3 into L3CODE/L3DATA with the same masks.
		if _, err2 := os.Stat(filepath.Join(info, "L3DATA")); err2 == nil {
			l3 = filepath.Join(info, "L3DATA")
			p.CAT.CDP = true
		} else {
			l3 = ""
		}
	}
	if l3 != "" {
		mask, err := readHex(filepath.Join(l3, "cbm_mask"))
		if err != nil {
			return err
		}
		if mask == 0 || mask&(mask+1) != 0 {
			return fmt.Errorf("%s: cbm_mask %#x is not a contiguous run of ones from bit 0", filepath.Join(l3, "cbm_mask"), mask)
		}
		p.LLC.Ways = bits.OnesCount64(mask)
		if p.CAT.NumCLOSIDs, err = readInt(filepath.Join(l3, "num_closids")); err != nil {
			return err
		}
		if p.CAT.MinCBMBits, err = readInt(filepath.Join(l3, "min_cbm_bits")); err != nil {
			return err
		}
		if sb, err := readHex(filepath.Join(l3, "shareable_bits")); err == nil {
			p.CAT.ShareableBits = sb
		}
		if sm, err := readInt(filepath.Join(l3, "sparse_masks")); err == nil {
			p.CAT.SparseMasks = sm == 1
		} else {
			// Older kernels lack the file; AMD has always accepted sparse masks.
			p.CAT.SparseMasks = p.Vendor == AMD
		}
	}
	if mon, err := readInt(filepath.Join(info, "L3_MON", "num_rmids")); err == nil {
		p.NumRMIDs = mon
	}
	// sub-NUMA clustering: the default group's first mon_L3_XX holds one mon_sub_L3_YY
	// per node sharing that L3
	if doms, err := filepath.Glob(filepath.Join(root, "mon_data", "mon_L3_*")); err == nil && len(doms) > 0 {
		sort.Strings(doms)
		if subs, _ := filepath.Glob(filepath.Join(doms[0], "mon_sub_L3_*")); len(subs) > 1 {
			p.LLC.SNCNodes = len(subs)
		}
	}
	mb := filepath.Join(info, "MB")
	if _, err := os.Stat(mb); err == nil {
		m := &MBA{Max: 100, Unit: MBAPercent}
		var err error
		if m.Min, err = readInt(filepath.Join(mb, "min_bandwidth")); err != nil {
			return err
		}
		if m.Gran, err = readInt(filepath.Join(mb, "bandwidth_gran")); err != nil {
			return err
		}
		if m.NumCLOSIDs, err = readInt(filepath.Join(mb, "num_closids")); err != nil {
			return err
		}
		if dl, err := os.ReadFile(filepath.Join(mb, "delay_linear")); err == nil {
			m.DelayLinear = strings.TrimSpace(string(dl)) == "1"
		}
		if p.Vendor == AMD {
			// AMD PQoS: limits in 1/8 GB/s, 2048 = unlimited (anchors.md §4).
			m.Unit, m.Max = MBAEighthGBps, 2048
			m.Min = max(m.Min, 1)
		}
		if mountedWithMBps(root) {
			m.Unit = MBAMBps
			m.Max = int(p.MemBWPerSocketMBps)
		}
		p.MBA = m
	}
	return nil
}

// mountedWithMBps reports whether /proc/mounts shows resctrl at root with mba_MBps. A fake
// root in tests is never in /proc/mounts.
func mountedWithMBps(root string) bool {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return false
	}
	for _, ln := range strings.Split(string(b), "\n") {
		f := strings.Fields(ln)
		if len(f) >= 4 && f[2] == "resctrl" && f[1] == root && strings.Contains(f[3], "mba_MBps") {
			return true
		}
	}
	return false
}

// ParseCPUList parses a kernel CPU list such as "0-3,8,10-11" (the cpulist format of sysfs,
// cgroup cpuset.cpus and resctrl cpus_list). Negative numbers, descending ranges and
// ranges longer than 65536 CPUs are errors.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad CPU list %q: %q is not a CPU number", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("bad CPU list %q: %q is not a CPU number", s, hi)
			}
		}
		if b < a {
			return nil, fmt.Errorf("bad CPU list %q: range %s is descending", s, part)
		}
		if b-a > 1<<16 {
			return nil, fmt.Errorf("bad CPU list %q: range %s spans more than 65536 CPUs", s, part)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// FormatCPUList prints CPUs as a kernel CPU list of ranges: [0 1 2 3 8] → "0-3,8"
// (sorted; duplicates merged).
func FormatCPUList(cpus []int) string {
	l := append([]int(nil), cpus...)
	sort.Ints(l)
	var parts []string
	for i := 0; i < len(l); {
		j := i
		for j+1 < len(l) && l[j+1] <= l[j]+1 {
			j++
		}
		if l[j] == l[i] {
			parts = append(parts, strconv.Itoa(l[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", l[i], l[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not an integer", path, strings.TrimSpace(string(b)))
	}
	return n, nil
}

func readHex(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimPrefix(strings.TrimSpace(string(b)), "0x")
	n, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a hexadecimal mask", path, s)
	}
	return n, nil
}

// readSize reads a sysfs cache size file (ParseCacheSize).
func readSize(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := ParseCacheSize(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// ParseCacheSize parses a sysfs cache size such as "32768K", "24M", "1G" or "512" (bytes;
// the kernel's cacheinfo "size" attribute, Documentation/ABI/testing/sysfs-devices-system-cpu).
func ParseCacheSize(s string) (int64, error) {
	mult := int64(1)
	num := s
	switch {
	case strings.HasSuffix(s, "K"):
		mult, num = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, num = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, num = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a cache size (want a whole number of bytes, optionally with K, M or G)", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a cache size: it overflows 64 bits", s)
	}
	return n * mult, nil
}
