package resctrl

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"
)

// ResourceInfo is one info/<RES> directory.
type ResourceInfo struct {
	Name       string `json:"name"`
	Cache      bool   `json:"cache"`
	NumCLOSIDs int    `json:"num_closids"`
	// Cache resources (L3, L2, L3CODE, ...).
	CBMMask       uint64 `json:"cbm_mask,omitempty"`
	CBMLen        int    `json:"cbm_len,omitempty"`
	MinCBMBits    int    `json:"min_cbm_bits"`
	ShareableBits uint64 `json:"shareable_bits"`
	SparseMasks   bool   `json:"sparse_masks"`
	BitUsage      string `json:"bit_usage,omitempty"`
	// Bandwidth resources (MB, SMBA).
	MinBandwidth  int    `json:"min_bandwidth,omitempty"`
	BandwidthGran int    `json:"bandwidth_gran,omitempty"`
	DelayLinear   bool   `json:"delay_linear,omitempty"`
	ThrottleMode  string `json:"thread_throttle_mode,omitempty"`
}

// MonInfo is info/L3_MON.
type MonInfo struct {
	NumRMIDs              int      `json:"num_rmids"`
	Features              []string `json:"mon_features"`
	MaxThresholdOccupancy uint64   `json:"max_threshold_occupancy"`
}

// Info is what a resctrl mount supports.
type Info struct {
	Resources []ResourceInfo `json:"resources"`
	Mon       *MonInfo       `json:"monitoring,omitempty"`
	// MBps is true when MB values are MiB/s (mount option mba_MBps): detected by the
	// mba_MBps_event file of the default group.
	MBps bool `json:"mba_in_mbps"`
}

// Resource returns the info of a resource by name.
func (in *Info) Resource(name string) *ResourceInfo {
	for i := range in.Resources {
		if in.Resources[i].Name == name {
			return &in.Resources[i]
		}
	}
	return nil
}

// CDP reports whether L3 code/data prioritisation is on (L3CODE/L3DATA present).
func (in *Info) CDP() bool { return in.Resource("L3CODE") != nil }

// CLOSIDs is the number of groups (including the default one) the kernel allows: the
// smallest num_closids of the enabled resources.
func (in *Info) CLOSIDs() int {
	n := 0
	for _, r := range in.Resources {
		if n == 0 || r.NumCLOSIDs < n {
			n = r.NumCLOSIDs
		}
	}
	return n
}

// ParseResourceInfo decodes the files of one info/<RES> directory (file name →
// content). Missing optional files keep their zero value; a malformed value is an
// error naming the file.
func ParseResourceInfo(name string, files map[string]string) (ResourceInfo, error) {
	r := ResourceInfo{Name: name, Cache: !IsBandwidth(name)}
	num := func(f string, dst *int) error {
		s, ok := files[f]
		if !ok {
			return nil
		}
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 0 {
			return fmt.Errorf("info/%s/%s: %q is not a non-negative integer", name, f, strings.TrimSpace(s))
		}
		*dst = v
		return nil
	}
	hex := func(f string, dst *uint64) error {
		s, ok := files[f]
		if !ok {
			return nil
		}
		t := strings.TrimSpace(s)
		v, err := strconv.ParseUint(strings.TrimPrefix(t, "0x"), 16, 64)
		if err != nil {
			return fmt.Errorf("info/%s/%s: %q is not a hexadecimal mask", name, f, t)
		}
		*dst = v
		return nil
	}
	type field[T any] struct {
		file string
		dst  *T
	}
	var sparse, delayLinear int
	nums := []field[int]{{"num_closids", &r.NumCLOSIDs}}
	var masks []field[uint64]
	if r.Cache {
		nums = append(nums, field[int]{"min_cbm_bits", &r.MinCBMBits}, field[int]{"sparse_masks", &sparse})
		masks = []field[uint64]{{"cbm_mask", &r.CBMMask}, {"shareable_bits", &r.ShareableBits}}
	} else {
		nums = append(nums, field[int]{"min_bandwidth", &r.MinBandwidth}, field[int]{"bandwidth_gran", &r.BandwidthGran},
			field[int]{"delay_linear", &delayLinear})
	}
	for _, f := range nums {
		if err := num(f.file, f.dst); err != nil {
			return r, err
		}
	}
	for _, f := range masks {
		if err := hex(f.file, f.dst); err != nil {
			return r, err
		}
	}
	if !r.Cache {
		r.DelayLinear = delayLinear == 1
		r.ThrottleMode = strings.TrimSpace(files["thread_throttle_mode"])
		return r, nil
	}
	if r.CBMMask != 0 && r.CBMMask&(r.CBMMask+1) != 0 {
		return r, fmt.Errorf("info/%s/cbm_mask %x is not a contiguous mask from bit 0", name, r.CBMMask)
	}
	r.CBMLen = bits.Len64(r.CBMMask)
	r.SparseMasks = sparse == 1
	if bu, ok := files["bit_usage"]; ok {
		r.BitUsage = strings.TrimSpace(bu)
		if _, err := ParseBitUsage(r.BitUsage); err != nil {
			return r, fmt.Errorf("info/%s/bit_usage: %w", name, err)
		}
	}
	return r, nil
}

// ParseBitUsage decodes info/*/bit_usage ("0=SSSSSSEE;1=SSSSSSEE") into one string per
// domain, most significant bit first, each character one of 0 H X S E P.
func ParseBitUsage(s string) (map[int]string, error) {
	out := map[int]string{}
	for _, part := range strings.Split(strings.TrimSpace(s), ";") {
		if part == "" {
			continue
		}
		id, v, ok := strings.Cut(part, "=")
		d, err := strconv.Atoi(id)
		if !ok || err != nil || d < 0 {
			return nil, fmt.Errorf("entry %q is not id=usage", part)
		}
		if _, dup := out[d]; dup {
			return nil, fmt.Errorf("domain %d given twice", d)
		}
		for _, c := range v {
			if !strings.ContainsRune("0HXSEP", c) {
				return nil, fmt.Errorf("domain %d: usage character %q is not one of 0 H X S E P", d, c)
			}
		}
		out[d] = v
	}
	return out, nil
}

// Info reads info/ of the mount.
func (c *Client) Info() (*Info, error) {
	names, err := c.fs.ReadDir("info")
	if err != nil {
		return nil, fmt.Errorf("resctrl at %s: cannot read info/: %w (is resctrl mounted? see colo doctor)", c.where(), err)
	}
	in := &Info{}
	for _, n := range names {
		if !isDirName(n) {
			continue
		}
		dir := strings.TrimSuffix(n, "/")
		files, err := c.readDirFiles("info/" + dir)
		if err != nil {
			return nil, err
		}
		if dir == "L3_MON" {
			m := &MonInfo{}
			if s, ok := files["num_rmids"]; ok {
				m.NumRMIDs, _ = strconv.Atoi(strings.TrimSpace(s))
			}
			m.Features = strings.Fields(files["mon_features"])
			if s, ok := files["max_threshold_occupancy"]; ok {
				m.MaxThresholdOccupancy, _ = strconv.ParseUint(strings.TrimSpace(s), 10, 64)
			}
			in.Mon = m
			continue
		}
		if strings.HasSuffix(dir, "_MON") {
			continue
		}
		r, err := ParseResourceInfo(dir, files)
		if err != nil {
			return nil, err
		}
		in.Resources = append(in.Resources, r)
	}
	sort.Slice(in.Resources, func(i, j int) bool { return in.Resources[i].Name < in.Resources[j].Name })
	if root, err := c.fs.ReadDir(""); err == nil {
		for _, n := range root {
			if n == "mba_MBps_event" {
				in.MBps = true
			}
		}
	}
	return in, nil
}

func (c *Client) readDirFiles(dir string) (map[string]string, error) {
	names, err := c.fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("resctrl at %s: %w", c.where(), err)
	}
	files := map[string]string{}
	for _, n := range names {
		if isDirName(n) {
			continue
		}
		b, err := c.fs.ReadFile(dir + "/" + n)
		if err != nil {
			continue // write-only or racing files are skipped
		}
		files[n] = string(b)
	}
	return files, nil
}
