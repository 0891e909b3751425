// Package machine describes the topology and the cache/memory-bandwidth geometry of a
// server: sockets, cores, last-level cache (size, ways, slices, per-socket or per-CCX
// domains), the vendor's CAT semantics (contiguous or sparse capacity bitmasks, minimum
// bits) and MBA (range, granularity, units). Built-in profiles are embedded YAML files
// under profiles/; Detect reads the host's own topology from sysfs.
package machine

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"colo/cbm"

	"gopkg.in/yaml.v3"
)

// Vendor selects the resctrl semantics of a machine.
type Vendor string

const (
	Intel Vendor = "intel"
	AMD   Vendor = "amd"
	Arm   Vendor = "arm" // Arm MPAM
)

// MBAUnit is the unit of memory-bandwidth allocation values in the resctrl MB schemata line.
type MBAUnit string

const (
	// MBAPercent: Intel MBA, a throttling percentage of peak bandwidth (e.g. 10..100 step 10).
	MBAPercent MBAUnit = "percent"
	// MBAEighthGBps: AMD PQoS, an absolute limit in multiples of 1/8 GB/s; Max means unlimited.
	MBAEighthGBps MBAUnit = "1/8GBps"
	// MBAMBps: the mba_MBps mount option (software controller), MB/s.
	MBAMBps MBAUnit = "MBps"
)

// Cache is the geometry of one last-level cache domain (a socket on Intel, a CCX on AMD).
type Cache struct {
	SizeBytes int64 `yaml:"size_bytes" json:"size_bytes"`
	Ways      int   `yaml:"ways" json:"ways"`
	Slices    int   `yaml:"slices" json:"slices"`
	LineBytes int   `yaml:"line_bytes" json:"line_bytes"`
	// DomainsPerSocket is the number of L3 domains (resctrl domain ids) per socket:
	// 1 on Intel, one per CCX on AMD EPYC.
	DomainsPerSocket int `yaml:"domains_per_socket" json:"domains_per_socket"`
	// SNCNodes is the number of sub-NUMA clusters sharing one L3 domain (Intel SNC2 or
	// SNC3; 0 or 1: none). CAT still applies per L3 domain, but each node's memory maps to
	// its own share of the slices (resctrl.rst, "Sub-NUMA Clustering").
	SNCNodes int `yaml:"snc_nodes,omitempty" json:"snc_nodes,omitempty"`
}

// CAT is the cache-allocation capability as resctrl's info/L3 directory reports it.
type CAT struct {
	NumCLOSIDs int `yaml:"num_closids" json:"num_closids"`
	// MinCBMBits is info/L3/min_cbm_bits: 1 on Intel, 0 on AMD (an empty mask is legal).
	MinCBMBits int `yaml:"min_cbm_bits" json:"min_cbm_bits"`
	// SparseMasks is info/L3/sparse_masks: non-contiguous 1-bits accepted (AMD).
	SparseMasks bool `yaml:"sparse_masks" json:"sparse_masks"`
	// ShareableBits is info/L3/shareable_bits: ways used by other agents (e.g. I/O).
	ShareableBits uint64 `yaml:"shareable_bits" json:"shareable_bits"`
	CDP           bool   `yaml:"cdp" json:"cdp"`
}

// MBA is the memory-bandwidth-allocation capability (info/MB).
type MBA struct {
	Min        int     `yaml:"min" json:"min"`
	Max        int     `yaml:"max" json:"max"`
	Gran       int     `yaml:"gran" json:"gran"`
	Unit       MBAUnit `yaml:"unit" json:"unit"`
	NumCLOSIDs int     `yaml:"num_closids" json:"num_closids"`
	// DelayLinear is info/MB/delay_linear (Intel): the value is a linear delay scale.
	DelayLinear bool `yaml:"delay_linear" json:"delay_linear"`
}

// Profile is one machine.
type Profile struct {
	Name           string  `yaml:"name" json:"name"`
	Description    string  `yaml:"description" json:"description"`
	Vendor         Vendor  `yaml:"vendor" json:"vendor"`
	CPU            string  `yaml:"cpu" json:"cpu"`
	Sockets        int     `yaml:"sockets" json:"sockets"`
	CoresPerSocket int     `yaml:"cores_per_socket" json:"cores_per_socket"`
	ThreadsPerCore int     `yaml:"threads_per_core" json:"threads_per_core"`
	ClockGHz       float64 `yaml:"clock_ghz" json:"clock_ghz"`
	LLC            Cache   `yaml:"llc" json:"llc"`
	CAT            CAT     `yaml:"cat" json:"cat"`
	MBA            *MBA    `yaml:"mba,omitempty" json:"mba,omitempty"`
	// MemBWPerSocketMBps is the sustainable memory bandwidth of one socket in MB/s (10^6 B/s).
	MemBWPerSocketMBps float64 `yaml:"mem_bw_per_socket_mbps" json:"mem_bw_per_socket_mbps"`
	NumRMIDs           int     `yaml:"num_rmids" json:"num_rmids"`
	Source             string  `yaml:"source" json:"source"`
}

// BytesPerWay is the capacity one way of the capacity bitmask gives a workload:
//
//	bytes/way = LLC size / ways / SNC nodes
//
// With sub-NUMA clustering a workload's lines land in its node's share of the L3 only,
// so a CBM bit is worth cache/bits/nodes of one node's capacity (the kernel's resctrl.rst,
// "Sub-NUMA Clustering"); without SNC the divisor is 1.
func (p *Profile) BytesPerWay() int64 {
	return p.LLC.SizeBytes / int64(p.LLC.Ways) / int64(max(p.LLC.SNCNodes, 1))
}

// Cores is the total number of physical cores.
func (p *Profile) Cores() int { return p.Sockets * p.CoresPerSocket }

// LLCDomains is the total number of L3 domains (resctrl domain ids).
func (p *Profile) LLCDomains() int { return p.Sockets * p.LLC.DomainsPerSocket }

// CoresPerDomain is the number of cores sharing one LLC domain.
func (p *Profile) CoresPerDomain() int { return p.CoresPerSocket / p.LLC.DomainsPerSocket }

// FullMask is the capacity bitmask with every way set (info/L3/cbm_mask).
func (p *Profile) FullMask() uint64 { return uint64(cbm.Full(p.LLC.Ways)) }

// CBMRules are the L3's capacity-bitmask rules (info/L3/cbm_mask, min_cbm_bits,
// sparse_masks).
func (p *Profile) CBMRules() cbm.Rules {
	return cbm.Rules{Width: p.LLC.Ways, MinBits: p.CAT.MinCBMBits, Sparse: p.CAT.SparseMasks}
}

// CheckMask says why the kernel would reject mask as a capacity bitmask of this machine's
// L3 (cbm.Rules.Validate, the kernel's cbm_validate), or returns nil.
func (p *Profile) CheckMask(mask uint64) error {
	if err := p.CBMRules().Check(cbm.Mask(mask)); err != nil {
		return fmt.Errorf("%s (vendor %s): %w", p.Name, p.Vendor, err)
	}
	return nil
}

// SocketOfCore returns the socket of core c, numbering cores socket-major.
func (p *Profile) SocketOfCore(c int) int { return c / p.CoresPerSocket }

// DomainOfCore returns the LLC domain of core c, numbering cores socket-major.
func (p *Profile) DomainOfCore(c int) int { return c / p.CoresPerDomain() }

// Validate checks that a profile is internally consistent.
func (p *Profile) Validate() error {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	if p.Name == "" {
		bad("name is empty")
	}
	switch p.Vendor {
	case Intel, AMD, Arm:
	default:
		bad("vendor %q is not intel, amd or arm", p.Vendor)
	}
	if p.Sockets < 1 || p.CoresPerSocket < 1 {
		bad("sockets (%d) and cores_per_socket (%d) must be >= 1", p.Sockets, p.CoresPerSocket)
	}
	if p.LLC.Ways < 1 || p.LLC.Ways > 64 {
		bad("llc.ways %d must be in 1..64", p.LLC.Ways)
	}
	if p.LLC.SizeBytes <= 0 {
		bad("llc.size_bytes must be > 0")
	}
	if p.LLC.DomainsPerSocket < 1 || (p.CoresPerSocket > 0 && p.CoresPerSocket%max(p.LLC.DomainsPerSocket, 1) != 0) {
		bad("llc.domains_per_socket %d must divide cores_per_socket %d", p.LLC.DomainsPerSocket, p.CoresPerSocket)
	}
	if p.CAT.MinCBMBits < 0 || p.CAT.MinCBMBits > p.LLC.Ways {
		bad("cat.min_cbm_bits %d out of 0..%d", p.CAT.MinCBMBits, p.LLC.Ways)
	}
	if p.CAT.NumCLOSIDs < 1 {
		bad("cat.num_closids must be >= 1")
	}
	if m := p.MBA; m != nil {
		if m.Min <= 0 || m.Max < m.Min || m.Gran <= 0 {
			bad("mba range %d..%d step %d is invalid", m.Min, m.Max, m.Gran)
		}
		switch m.Unit {
		case MBAPercent, MBAEighthGBps, MBAMBps:
		default:
			bad("mba.unit %q unknown", m.Unit)
		}
	}
	if p.MemBWPerSocketMBps <= 0 {
		bad("mem_bw_per_socket_mbps must be > 0")
	}
	if len(errs) > 0 {
		return fmt.Errorf("machine %q: %s", p.Name, strings.Join(errs, "; "))
	}
	return nil
}

//go:embed profiles/*.yaml
var builtin embed.FS

var profiles = mustLoadBuiltin()

func mustLoadBuiltin() map[string]*Profile {
	m := map[string]*Profile{}
	ents, err := fs.ReadDir(builtin, "profiles")
	if err != nil {
		panic(err)
	}
	for _, e := range ents {
		b, err := builtin.ReadFile(path.Join("profiles", e.Name()))
		if err != nil {
			panic(err)
		}
		p, err := Parse(b)
		if err != nil {
			panic(fmt.Sprintf("built-in profile %s: %v", e.Name(), err))
		}
		m[p.Name] = p
	}
	return m
}

// Parse decodes and validates one profile in YAML; unknown keys are errors.
func Parse(b []byte) (*Profile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
	if p.LLC.LineBytes == 0 {
		p.LLC.LineBytes = 64
	}
	if p.ThreadsPerCore == 0 {
		p.ThreadsPerCore = 1
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Names lists the built-in profiles, sorted.
func Names() []string {
	return slices.Sorted(maps.Keys(profiles))
}

// Get returns a copy of a built-in profile, or an error listing the known names.
func Get(name string) (*Profile, error) {
	p, ok := profiles[name]
	if !ok {
		return nil, fmt.Errorf("unknown machine %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	c := *p
	if p.MBA != nil {
		m := *p.MBA
		c.MBA = &m
	}
	return &c, nil
}
