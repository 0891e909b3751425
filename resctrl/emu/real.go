// Profiles of real servers' resctrl shapes that colo did not generate itself: sparse
// domain ids, fewer MBA than L3 classes, sub-NUMA clustering, assignable MBM counters,
// I/O allocation. Each says where its facts come from; what no source gives is marked
// illustrative.

package emu

import "colo/machine"

// evenIDs returns 0, step, 2·step, … (n ids).
func evenIDs(n, step int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i * step
	}
	return out
}

// amdBW is an AMD bandwidth resource: 1/8 GB/s units, 0..2048, granularity 1.
func amdBW(ids []int, closids int) *BWRes {
	return &BWRes{Domains: len(ids), IDs: ids, Min: 0, Max: 2048, Gran: 1, NumCLOSIDs: closids}
}

// amdGenoa is libvirt's captured AMD tree (tests/vircaps2xmldata/linux-resctrl-amd):
// eight L3 domains with ids 0,2,4,…,14, masks ffff (16 bits), MB and SMBA at 2048 on
// every domain, BMEC files mbm_{total,local}_bytes_config at 0x7f / 0x15, 16 MiB per
// L3 (cpu*/cache/index3/size 16384K), and the kernel that produced it prints the
// schemata lines in reverse (SMBA, MB, L3). AMD rules: min_cbm_bits 0, sparse masks.
// The CPU count (64, eight per L3) and 16 CLOSIDs / 256 RMIDs are illustrative.
func amdGenoa() *Profile {
	ids := evenIDs(8, 2)
	return &Profile{
		Name: "amd-genoa", Vendor: machine.AMD, CPUs: 64, Padded: true, ReverseSchemata: true,
		L3: &CacheRes{Level: 3, Domains: 8, IDs: ids, CBMLen: 16, MinCBMBits: 0, Sparse: true,
			NumCLOSIDs: 16, SizeBytes: 16 << 20, CDPCapable: true},
		MB:   amdBW(ids, 16),
		SMBA: amdBW(ids, 16),
		Mon: &MonRes{NumRMIDs: 256, Features: append([]string(nil), allMonFeatures...),
			MaxThresholdOccupancy: (16 << 20) / 16 / 8, BMEC: true},
	}
}

// amdGap is the AMD server of koordinator issue 1777: L3 domain ids 0–7 and 16–23
// (two sockets of eight CCDs; cache ids are not NUMA ids), on which koordlet failed with
// "L3 masks of node 8 is missing". 16-bit masks and AMD MB; 128 CPUs, 32 MiB per L3,
// 16 CLOSIDs and 256 RMIDs are illustrative (EPYC 7003-class).
func amdGap() *Profile {
	ids := append(evenIDs(8, 1), 16, 17, 18, 19, 20, 21, 22, 23)
	return &Profile{
		Name: "amd-gap", Vendor: machine.AMD, CPUs: 128, Padded: true, Sockets: 2,
		L3: &CacheRes{Level: 3, Domains: 16, IDs: ids, CBMLen: 16, Sparse: true,
			NumCLOSIDs: 16, SizeBytes: 32 << 20, CDPCapable: true},
		MB: amdBW(ids, 16),
		Mon: &MonRes{NumRMIDs: 256, Features: append([]string(nil), allMonFeatures...),
			MaxThresholdOccupancy: (32 << 20) / 16 / 8},
	}
}

// intelSNC2 is an Intel part with sub-NUMA clustering in SNC2 mode and sparse_masks 1
// (Sapphire/Granite Rapids-class; resctrl.rst "Sub-NUMA Clustering": mon_L3_XX holds
// mon_sub_L3_YY per node and reads their sum, CAT and MBA still apply per L3, and the
// kernel's selftest L3_NONCONT_CAT checks sparse_masks against CPUID). Geometry (2
// sockets, 64 CPUs, 15 ways, 60 MiB, 16 CLOSIDs, 8 MBA CLOSIDs, 256 RMIDs per node) is
// illustrative.
func intelSNC2() *Profile {
	return &Profile{
		Name: "intel-snc2", Vendor: machine.Intel, CPUs: 64, Padded: true, SNC: 2, Sockets: 2,
		L3: &CacheRes{Level: 3, Domains: 2, CBMLen: 15, MinCBMBits: 1, Sparse: true,
			NumCLOSIDs: 16, SizeBytes: 60 << 20, CDPCapable: true},
		MB: &BWRes{Domains: 2, Min: 10, Max: 100, Gran: 10, DelayLinear: true, ThrottleMode: "per-thread",
			NumCLOSIDs: 8, NeedsLinear: true},
		Mon: &MonRes{NumRMIDs: 256, Features: append([]string(nil), allMonFeatures...),
			MaxThresholdOccupancy: (60 << 20) / 15 / 8},
	}
}

// intel6252N is the Xeon Gold 6252N of intel-cmt-cat's tests/example.json: 16 L3
// classes but 8 MBA classes (so 8 usable CLOSIDs: the minimum over enabled resources)
// and 11 ways. Two sockets of 24 cores with two threads, 35.75 MiB L3 (Intel ark) and
// MBA 10..100 step 10; 176 RMIDs is illustrative.
func intel6252N() *Profile {
	return &Profile{
		Name: "intel-6252n", Vendor: machine.Intel, CPUs: 96, Padded: true, Sockets: 2,
		L3: &CacheRes{Level: 3, Domains: 2, CBMLen: 11, MinCBMBits: 1, NumCLOSIDs: 16,
			SizeBytes: 35_651_584 + 786_432, CDPCapable: true},
		MB: &BWRes{Domains: 2, Min: 10, Max: 100, Gran: 10, DelayLinear: true, ThrottleMode: "per-thread",
			NumCLOSIDs: 8, NeedsLinear: true},
		Mon: &MonRes{NumRMIDs: 176, Features: append([]string(nil), allMonFeatures...),
			MaxThresholdOccupancy: 37_486_592 / 11 / 8},
	}
}

// amdABMC is an AMD part with assignable bandwidth monitoring counters (ABMC; the
// kernel's mbm_event mode, resctrl.rst "mbm_assign_mode"): 32 counters per L3 domain
// for 256 RMIDs, so at most 16 groups can count both MBM events on a domain. Counters
// are assigned on mkdir (mbm_assign_on_mkdir 1) while free; an event without one reads
// "Unassigned"; BMEC's *_config files are hidden in this mode. Eight L3 domains of 32
// MiB and 128 CPUs (Zen 5-class) are illustrative.
func amdABMC() *Profile {
	ids := evenIDs(8, 1)
	return &Profile{
		Name: "amd-abmc", Vendor: machine.AMD, CPUs: 128, Padded: true,
		L3: &CacheRes{Level: 3, Domains: 8, IDs: ids, CBMLen: 16, Sparse: true,
			NumCLOSIDs: 16, SizeBytes: 32 << 20, CDPCapable: true},
		MB: amdBW(ids, 16),
		Mon: &MonRes{NumRMIDs: 256, Features: append([]string(nil), allMonFeatures...),
			MaxThresholdOccupancy: (32 << 20) / 16 / 8, BMEC: true, Counters: 32},
	}
}

// amdIOAlloc is an AMD part with L3 Smart Data Cache Injection allocation enforcement
// (SDCIAE; resctrl.rst "io_alloc"): info/L3/io_alloc and io_alloc_cbm, "*=" for every
// domain, the highest CLOSID taken while enabled, mirrored to L3CODE/L3DATA under CDP.
// Geometry as amd-abmc without counters (illustrative).
func amdIOAlloc(cdp bool) *Profile {
	p := amdABMC()
	p.Name, p.CDP = "amd-ioalloc", cdp
	if cdp {
		p.Name = "amd-ioalloc-cdp"
	}
	p.L3.IOAlloc = true
	p.Mon.Counters = 0
	return p
}

// realProfiles are the built-in real-shape profiles by name.
var realProfiles = map[string]func() *Profile{
	"amd-genoa":       amdGenoa,
	"amd-gap":         amdGap,
	"intel-snc2":      intelSNC2,
	"intel-6252n":     intel6252N,
	"amd-abmc":        amdABMC,
	"amd-ioalloc":     func() *Profile { return amdIOAlloc(false) },
	"amd-ioalloc-cdp": func() *Profile { return amdIOAlloc(true) },
}
