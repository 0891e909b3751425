package emu

import (
	"fmt"
	"slices"
	"strings"

	"colo/cbm"
	"colo/machine"
)

// CacheRes is one cache-allocation resource (L3 or L2) as the hardware enumerates it.
type CacheRes struct {
	Level int // 3 or 2
	// Domains is the number of cache instances.
	Domains int
	// IDs are the kernel's domain ids of the instances, ascending (nil: 0..Domains-1).
	// They are the cache ids of /sys/devices/system/cpu/cpu*/cache/index3/id, not NUMA
	// node ids, and real parts have gaps (libvirt's AMD tree: 0,2,…,14).
	IDs []int
	// CBMLen is the number of bits in the capacity bitmask (info/*/cbm_mask has CBMLen ones).
	CBMLen int
	// MinCBMBits is info/*/min_cbm_bits: 1 on Intel and MPAM, 0 on AMD.
	MinCBMBits int
	// Sparse is info/*/sparse_masks: non-contiguous masks accepted (AMD, MPAM).
	Sparse bool
	// ShareableBits is info/*/shareable_bits (bits used by other agents, e.g. I/O).
	ShareableBits uint64
	// NumCLOSIDs is the hardware CLOSID count of this resource (halved under CDP).
	NumCLOSIDs int
	// SizeBytes is the capacity of one cache instance (for the size file and ways↔bytes).
	SizeBytes uint64
	// CDPCapable: the hardware supports code/data prioritisation. The kernel then
	// reserves the width of the CODE/DATA suffix when aligning schemata names even
	// without the cdp mount option ("    L3:0=ff").
	CDPCapable bool
	// IOAlloc is AMD's SDCIAE (L3 only): info/L3/io_alloc and io_alloc_cbm exist; I/O
	// allocation, once enabled, takes the highest CLOSID.
	IOAlloc bool
}

// BWRes is a memory-bandwidth resource (MB, or SMBA on AMD).
type BWRes struct {
	Domains int
	// IDs are the kernel's domain ids (nil: 0..Domains-1), as CacheRes.IDs.
	IDs         []int
	Min         uint32 // info/MB/min_bandwidth
	Max         uint32 // largest accepted value (100 % on Intel/MPAM, 2048 on AMD)
	Gran        uint32 // info/MB/bandwidth_gran
	DelayLinear bool   // info/MB/delay_linear
	// ThrottleMode is info/MB/thread_throttle_mode ("max" or "per-thread"); empty means the
	// file is absent (AMD, MPAM).
	ThrottleMode string
	NumCLOSIDs   int
	// NeedsLinear: the architecture rejects non-linear delay scales (Intel).
	NeedsLinear bool
}

// MonRes is the L3 monitoring capability (info/L3_MON).
type MonRes struct {
	NumRMIDs int
	// Features is info/L3_MON/mon_features, e.g. llc_occupancy, mbm_total_bytes, mbm_local_bytes.
	Features []string
	// MaxThresholdOccupancy is the limbo threshold in bytes (info/L3_MON/max_threshold_occupancy).
	MaxThresholdOccupancy uint64
	// BMEC: the bandwidth monitoring event configuration files
	// info/L3_MON/mbm_{total,local}_bytes_config exist (AMD Zen 4 and later).
	BMEC bool
	// Counters is the number of assignable MBM counters per L3 domain (kernel
	// mbm_event mode: AMD ABMC, recent Intel); 0 means every RMID counts on its own.
	Counters int
}

// Profile is the hardware and mount configuration the emulator presents.
type Profile struct {
	Name   string
	Vendor machine.Vendor
	// CPUs is the number of online CPUs (logical); they are spread evenly over L3 domains.
	CPUs int
	L3   *CacheRes
	L2   *CacheRes
	MB   *BWRes
	SMBA *BWRes
	Mon  *MonRes
	// CDP and CDPL2 are the cdp / cdpl2 mount options (L3CODE/L3DATA, L2CODE/L2DATA).
	CDP, CDPL2 bool
	// MBAMBps is the mba_MBps mount option: MB values are MiB/s for the software controller.
	MBAMBps bool
	// PseudoLock: the CPU has the prefetch-disable bits cache pseudo-locking needs (the
	// kernel's get_prefetch_disable_bits: Broadwell-X, i.e. Xeon E5/E7 v4, and Atom
	// Goldmont / Goldmont Plus); elsewhere pseudo-locksetup is "Pseudo-locking not
	// supported".
	PseudoLock bool
	// Padded selects the older kernels' read format: zero-padded masks (%0*x) and
	// space-padded MB values (%*u). Newer kernels print both unpadded.
	Padded bool
	// SNC is the number of sub-NUMA clusters per L3 domain (Intel SNC2/SNC3); 0 or 1
	// means none. mon_data/mon_L3_XX then holds mon_sub_L3_YY per node and its files
	// read the sum; allocation still applies per L3 instance.
	SNC int
	// Sockets is the number of packages the L3 domains are spread over (0 means 1); it
	// shapes the topology WriteCPUDir writes, not the resctrl files.
	Sockets int
	// ReverseSchemata: schemata and size list the resources in reverse (SMBA, MB, L3),
	// as the kernel of libvirt's captured AMD tree prints them.
	ReverseSchemata bool
}

// Validate checks that the profile can be emulated.
func (p *Profile) Validate() error {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	if p.CPUs < 1 || p.CPUs > 4096 {
		bad("CPUs %d out of 1..4096", p.CPUs)
	}
	if p.L3 == nil && p.L2 == nil && p.MB == nil && p.SMBA == nil {
		bad("no allocation resource (L3, L2, MB or SMBA)")
	}
	for _, c := range []*CacheRes{p.L3, p.L2} {
		if c == nil {
			continue
		}
		if c.CBMLen < 1 || c.CBMLen > 32 {
			bad("L%d cbm length %d out of 1..32 (the kernel stores CBMs in a u32)", c.Level, c.CBMLen)
		}
		if c.Domains < 1 {
			bad("L%d needs at least one domain", c.Level)
		}
		if c.NumCLOSIDs < 1 {
			bad("L%d num_closids must be >= 1", c.Level)
		}
		if c.MinCBMBits < 0 || c.MinCBMBits > c.CBMLen {
			bad("L%d min_cbm_bits %d out of 0..%d", c.Level, c.MinCBMBits, c.CBMLen)
		}
		if err := checkIDs(c.IDs, c.Domains); err != "" {
			bad("L%d %s", c.Level, err)
		}
		if c.IOAlloc && c.Level != 3 {
			bad("io_alloc exists on L3 only")
		}
	}
	if p.CDP && p.L3 == nil {
		bad("cdp needs L3")
	}
	if p.CDPL2 && p.L2 == nil {
		bad("cdpl2 needs L2")
	}
	for _, b := range []*BWRes{p.MB, p.SMBA} {
		if b == nil {
			continue
		}
		if b.Domains < 1 || b.NumCLOSIDs < 1 || b.Gran < 1 || b.Max < b.Min {
			bad("bandwidth resource: domains %d, closids %d, gran %d, range %d..%d invalid", b.Domains, b.NumCLOSIDs, b.Gran, b.Min, b.Max)
		}
		if err := checkIDs(b.IDs, b.Domains); err != "" {
			bad("bandwidth resource %s", err)
		}
	}
	if p.MBAMBps && (p.MB == nil || p.Mon == nil) {
		bad("mba_MBps needs MB and L3 monitoring")
	}
	if p.Mon != nil && p.Mon.NumRMIDs < 1 {
		bad("num_rmids must be >= 1")
	}
	if p.Mon != nil && p.L3 == nil {
		bad("L3 monitoring needs an L3 cache")
	}
	if p.Mon != nil && p.Mon.Counters < 0 {
		bad("negative MBM counter count")
	}
	if p.SNC < 0 || p.SNC > 8 {
		bad("SNC %d out of 0..8", p.SNC)
	}
	if len(errs) > 0 {
		return fmt.Errorf("emulator profile %q: %s", p.Name, strings.Join(errs, "; "))
	}
	return nil
}

// checkIDs says what is wrong with a list of domain ids ("" when nothing).
func checkIDs(ids []int, n int) string {
	if ids == nil {
		return ""
	}
	if len(ids) != n {
		return fmt.Sprintf("has %d domain ids for %d domains", len(ids), n)
	}
	for i, id := range ids {
		if id < 0 || i > 0 && id <= ids[i-1] {
			return fmt.Sprintf("domain ids %v are not ascending non-negative numbers", ids)
		}
	}
	return ""
}

// domainIDs returns ids, or 0..n-1 when ids is nil.
func domainIDs(ids []int, n int) []int {
	if ids != nil {
		return slices.Clone(ids)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// L3IDs returns the L3 domain ids (nil without L3).
func (p *Profile) L3IDs() []int {
	if p.L3 == nil {
		return nil
	}
	return domainIDs(p.L3.IDs, p.L3.Domains)
}

// Clone returns a deep copy that can be changed without touching p.
func (p *Profile) Clone() *Profile {
	c := *p
	c.L3, c.L2, c.MB, c.SMBA, c.Mon = clone(p.L3), clone(p.L2), clone(p.MB), clone(p.SMBA), clone(p.Mon)
	if p.Mon != nil {
		c.Mon.Features = slices.Clone(p.Mon.Features)
	}
	for _, r := range []*CacheRes{c.L3, c.L2} {
		if r != nil {
			r.IDs = slices.Clone(r.IDs)
		}
	}
	for _, r := range []*BWRes{c.MB, c.SMBA} {
		if r != nil {
			r.IDs = slices.Clone(r.IDs)
		}
	}
	return &c
}

// clone is a copy of *p (nil for nil).
func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	x := *p
	return &x
}

var allMonFeatures = []string{"llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"}

// Variants understood by ProfileFromMachine, comma separated.
const (
	VariantCDP      = "cdp"      // mount -o cdp
	VariantNoMBA    = "nomba"    // drop the MB resource
	VariantMBps     = "mbps"     // mount -o mba_MBps
	VariantSMBA     = "smba"     // add AMD SMBA (Genoa and later)
	VariantNoMon    = "nomon"    // no L3 monitoring
	VariantUnpadded = "unpadded" // newer kernels' unpadded read format
	VariantL2       = "l2"       // add an L2 CAT resource (8-bit masks, one instance per two cores)
)

// ProfileFromMachine derives the emulated resctrl of a machine profile. The variant is a
// comma-separated list of VariantCDP, VariantNoMBA, VariantMBps, VariantSMBA,
// VariantNoMon, VariantUnpadded, VariantL2 (empty for the machine as built).
//
// Vendor rules (../shared/research/anchors.md §4.5): Intel MB is a percentage with
// min = gran = the machine's step and a per-thread throttle mode; AMD MB is in 1/8 GB/s,
// min 0, gran 1, 2048 = unlimited, masks sparse with min_cbm_bits 0; Arm MPAM masks are
// sparse with min_cbm_bits 1, all bits shareable, MB in percent with min = gran.
func ProfileFromMachine(m *machine.Profile, variant string) (*Profile, error) {
	if m == nil {
		return nil, fmt.Errorf("emu: nil machine profile")
	}
	p := &Profile{
		Name:    m.Name,
		Vendor:  m.Vendor,
		CPUs:    m.Cores() * max(m.ThreadsPerCore, 1),
		Padded:  true,
		Sockets: m.Sockets,
		// INTEL_BROADWELL_X (model 0x4F) is Broadwell-EP/EX: Xeon E5 v4 and E7 v4
		PseudoLock: m.Vendor == machine.Intel && (strings.Contains(m.CPU, "Xeon E5-") || strings.Contains(m.CPU, "Xeon E7-")) &&
			strings.HasSuffix(m.CPU, " v4"),
	}
	if variant != "" {
		p.Name += "+" + variant
	}
	p.L3 = &CacheRes{
		Level:         3,
		Domains:       m.LLCDomains(),
		CBMLen:        m.LLC.Ways,
		MinCBMBits:    m.CAT.MinCBMBits,
		Sparse:        m.CAT.SparseMasks,
		ShareableBits: m.CAT.ShareableBits,
		NumCLOSIDs:    m.CAT.NumCLOSIDs,
		SizeBytes:     uint64(m.LLC.SizeBytes),
		// Intel server parts since Broadwell and AMD Zen support L3 CDP; MPAM is
		// modelled without it.
		CDPCapable: m.Vendor != machine.Arm || m.CAT.CDP,
	}
	if m.Vendor == machine.AMD {
		p.L3.MinCBMBits = 0
		p.L3.Sparse = true
	}
	if m.Vendor == machine.Arm {
		p.L3.MinCBMBits = 1
		p.L3.Sparse = true
		p.L3.ShareableBits = uint64(cbm.Full(p.L3.CBMLen))
	}
	if m.MBA != nil {
		p.MB = bwFor(m.Vendor, m.MBA, p.L3.Domains)
	}
	if m.NumRMIDs > 0 {
		p.Mon = &MonRes{
			NumRMIDs:              m.NumRMIDs,
			Features:              append([]string(nil), allMonFeatures...),
			MaxThresholdOccupancy: uint64(m.LLC.SizeBytes) / uint64(m.LLC.Ways) / 8,
		}
	}
	for _, v := range strings.Split(variant, ",") {
		switch strings.TrimSpace(v) {
		case "":
		case VariantCDP:
			p.CDP = true
		case VariantNoMBA:
			p.MB = nil
		case VariantMBps:
			p.MBAMBps = true
		case VariantSMBA:
			if m.Vendor != machine.AMD {
				return nil, fmt.Errorf("emu: variant smba exists on AMD only, machine %s is %s", m.Name, m.Vendor)
			}
			p.SMBA = &BWRes{Domains: p.L3.Domains, Min: 0, Max: 2048, Gran: 1, NumCLOSIDs: m.CAT.NumCLOSIDs}
		case VariantNoMon:
			p.Mon = nil
		case VariantUnpadded:
			p.Padded = false
		case VariantL2:
			p.L2 = &CacheRes{Level: 2, Domains: max(p.CPUs/2, 1), CBMLen: 8, MinCBMBits: p.L3.MinCBMBits,
				Sparse: p.L3.Sparse, NumCLOSIDs: p.L3.NumCLOSIDs, SizeBytes: 1 << 20}
		default:
			return nil, fmt.Errorf("emu: unknown variant %q (known: cdp, nomba, mbps, smba, nomon, unpadded, l2)", v)
		}
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

func bwFor(v machine.Vendor, m *machine.MBA, domains int) *BWRes {
	switch v {
	case machine.AMD:
		return &BWRes{Domains: domains, Min: 0, Max: 2048, Gran: 1, NumCLOSIDs: m.NumCLOSIDs}
	case machine.Arm:
		g := uint32(max(m.Gran, 1))
		return &BWRes{Domains: domains, Min: g, Max: 100, Gran: g, DelayLinear: true, NumCLOSIDs: m.NumCLOSIDs}
	default:
		g := uint32(max(m.Gran, 1))
		return &BWRes{Domains: domains, Min: g, Max: 100, Gran: g, DelayLinear: true, // Intel SKUs with a non-linear table are not modelled
			ThrottleMode: "per-thread", NumCLOSIDs: m.NumCLOSIDs, NeedsLinear: true}
	}
}

// mpamMachine is an Arm Neoverse-class server with MPAM: 64 cores, 2 L3 (SLC) partitions.
// No Arm machine ships in colo/machine yet; this geometry is illustrative (anchors.md §4.5).
func mpamMachine() *machine.Profile {
	return &machine.Profile{
		Name: "mpam-n2", Vendor: machine.Arm, Sockets: 1, CoresPerSocket: 64, ThreadsPerCore: 1,
		LLC: machine.Cache{SizeBytes: 32 << 20, Ways: 16, DomainsPerSocket: 2, LineBytes: 64},
		CAT: machine.CAT{NumCLOSIDs: 32, MinCBMBits: 1, SparseMasks: true},
		MBA: &machine.MBA{Min: 5, Max: 100, Gran: 5, Unit: machine.MBAPercent, NumCLOSIDs: 32, DelayLinear: true},
		// MPAM monitors (PMG x PARTID) are scarce on current parts (inferred, anchors.md §4.5).
		NumRMIDs: 16, MemBWPerSocketMBps: 150000,
	}
}

// named profiles: name -> (machine, variant).
var named = map[string][2]string{
	"intel":         {"icx-4314-2s", ""},
	"intel-cdp":     {"icx-4314-2s", VariantCDP},
	"intel-mbps":    {"icx-4314-2s", VariantMBps},
	"intel-nomba":   {"xeon-e2378", ""},
	"intel-l2":      {"icx-4314-2s", VariantL2},
	"intel-skx":     {"skx-6138", ""},
	"intel-bdw":     {"bdw-2697v4", ""},
	"intel-newfmt":  {"icx-4314-2s", VariantUnpadded},
	"amd":           {"epyc-7543", ""},
	"amd-smba":      {"epyc-7543", VariantSMBA},
	"amd-cdp":       {"epyc-7543", VariantCDP},
	"mpam":          {"", ""},
	"mpam-unpadded": {"", VariantUnpadded},
}

// ProfileFor names the emulator profile of a machine (colo resctrl emulate --profile): the
// vendor profile that emulates it unchanged ("intel-skx" for skx-6138), else the machine's
// own name (every machine name is a profile).
func ProfileFor(machineName string) string {
	var out []string
	for k, nv := range named {
		if nv[0] == machineName && nv[1] == "" {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return machineName
	}
	slices.Sort(out)
	return out[0]
}

// ProfileNames lists the built-in emulator profiles.
func ProfileNames() []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range named {
			if !yield(k) {
				return
			}
		}
		for k := range realProfiles {
			if !yield(k) {
				return
			}
		}
	})
}

// ConformanceProfiles are the profiles the conformance suite runs against: all of them.
func ConformanceProfiles() []string {
	return ProfileNames()
}

// NamedProfile returns a built-in profile: a vendor profile name (see ProfileNames), or
// a machine name from colo/machine optionally followed by "+variant" (e.g. "skx-6138+cdp").
func NamedProfile(name string) (*Profile, error) {
	if f, ok := realProfiles[name]; ok {
		p := f()
		if err := p.Validate(); err != nil {
			return nil, err
		}
		return p, nil
	}
	if nv, ok := named[name]; ok {
		var m *machine.Profile
		if nv[0] == "" {
			m = mpamMachine()
		} else {
			var err error
			if m, err = machine.Get(nv[0]); err != nil {
				return nil, err
			}
		}
		p, err := ProfileFromMachine(m, nv[1])
		if err != nil {
			return nil, err
		}
		p.Name = name
		return p, nil
	}
	mn, variant, _ := strings.Cut(name, "+")
	m, err := machine.Get(mn)
	if err != nil {
		return nil, fmt.Errorf("unknown emulator profile %q (known: %s, or a machine name [+variant])", name, strings.Join(ProfileNames(), ", "))
	}
	return ProfileFromMachine(m, variant)
}
