package policy

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"colo/machine"
)

// ParseMask reads a capacity bitmask in hex ("0x600" or "600").
func ParseMask(s string) (uint64, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0x"), "0X")
	v, err := strconv.ParseUint(t, 16, 64)
	if err != nil || t == "" {
		return 0, fmt.Errorf("mask %q is not a hex bitmask (e.g. 0x600)", s)
	}
	return v, nil
}

// FormatMask prints a mask as PBBCache and resctrl do, in lower-case hex with 0x.
func FormatMask(m uint64) string { return fmt.Sprintf("%#x", m) }

// CheckMask validates a capacity bitmask on a machine (anchors.md, resctrl semantics):
// no bits beyond the cache's ways, at least min_cbm_bits set, and one contiguous run of
// ones unless the vendor accepts sparse masks.
func CheckMask(m *machine.Profile, mask uint64) error {
	if mask&^m.FullMask() != 0 {
		return fmt.Errorf("mask %s is wider than the %d-way cache of %s (cbm_mask %s)", FormatMask(mask), m.LLC.Ways, m.Name, FormatMask(m.FullMask()))
	}
	if n := bits.OnesCount64(mask); n < m.CAT.MinCBMBits || n == 0 {
		return fmt.Errorf("mask %s has %d bits set, %s needs at least %d", FormatMask(mask), n, m.Name, max(1, m.CAT.MinCBMBits))
	}
	if !m.CAT.SparseMasks && !Contiguous(mask) {
		return fmt.Errorf("mask %s is not contiguous: %s (vendor %s) only accepts one run of ones", FormatMask(mask), m.Name, m.Vendor)
	}
	return nil
}

// Contiguous reports whether the set bits of mask form one run.
func Contiguous(mask uint64) bool {
	if mask == 0 {
		return true
	}
	m := mask >> bits.TrailingZeros64(mask)
	return m&(m+1) == 0
}

// ClusterIDs numbers the distinct masks of a workload in order of first appearance and
// returns each application's cluster index: applications with identical masks form one
// cluster (MODEL.md §1). Partially overlapping masks are different clusters.
func ClusterIDs(masks []uint64) []int {
	of := make([]int, len(masks))
	seen := map[uint64]int{}
	for a, m := range masks {
		id, ok := seen[m]
		if !ok {
			id = len(seen)
			seen[m] = id
		}
		of[a] = id
	}
	return of
}

// PackMasks lays out clusters of the given way counts contiguously without overlap, the
// first cluster at the highest ways and each next one below it, as LFOC+'s kernel code and
// PBBCache do (seed001.md §1.5 enforce_cluster_partitioning; readme-example.md: ways 2,2,1,1,4,1
// → 0x600, 0x180, 0x40, 0x20, 0x1e, 0x1). It fails if the ways do not fit.
func PackMasks(m *machine.Profile, ways []int) ([]uint64, error) {
	top := m.LLC.Ways
	out := make([]uint64, len(ways))
	for i, w := range ways {
		if w < max(1, m.CAT.MinCBMBits) {
			return nil, fmt.Errorf("cluster %d has %d ways, %s needs at least %d", i+1, w, m.Name, max(1, m.CAT.MinCBMBits))
		}
		if w > top {
			return nil, fmt.Errorf("clusters need more than the %d ways of %s", m.LLC.Ways, m.Name)
		}
		top -= w
		out[i] = ((uint64(1) << uint(w)) - 1) << uint(top)
	}
	return out, nil
}
