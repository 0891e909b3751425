package resctrl

import (
	"fmt"

	"colo/cbm"
)

// Place picks n ways for a resource from the free bits: contiguous best fit, falling
// back to a sparse mask where the resource allows one. It enforces min_cbm_bits.
func Place(r *ResourceInfo, free uint64, n int) (uint64, error) {
	if r == nil || !r.Cache {
		return 0, fmt.Errorf("resctrl: masks are for cache resources")
	}
	if n < r.MinCBMBits {
		return 0, fmt.Errorf("resctrl: %s needs at least %d ways (min_cbm_bits), asked %d", r.Name, r.MinCBMBits, n)
	}
	if n == 0 {
		return 0, nil
	}
	if m, ok := cbm.BestFit(cbm.Mask(free), r.CBMLen, n); ok {
		return uint64(m), nil
	}
	if r.SparseMasks {
		if m, ok := cbm.Sparse(cbm.Mask(free), r.CBMLen, n); ok {
			return uint64(m), nil
		}
	}
	return 0, fmt.Errorf("resctrl: no room for %d ways in %s (free mask %x of %x%s); shrink other groups first",
		n, r.Name, free&r.CBMMask, r.CBMMask, map[bool]string{true: "", false: ", contiguous masks only"}[r.SparseMasks])
}

// WayBytes is the capacity of one way (one mask bit) of a cache of sizeBytes with
// cbmLen bits: size/cbm_len, as the kernel's size file computes it
// (rdtgroup_cbm_to_size: cache_size / cbm_len * popcount(cbm)).
func WayBytes(sizeBytes uint64, cbmLen int) uint64 {
	if cbmLen <= 0 {
		return 0
	}
	return sizeBytes / uint64(cbmLen)
}

// MaskBytes is the capacity a mask gives: popcount(mask) × WayBytes.
func MaskBytes(mask, sizeBytes uint64, cbmLen int) uint64 {
	return uint64(cbm.Mask(mask).Ones()) * WayBytes(sizeBytes, cbmLen)
}

// BytesToWays is the smallest number of ways that holds b bytes (ceil(b / WayBytes)),
// capped at cbmLen.
func BytesToWays(b, sizeBytes uint64, cbmLen int) int {
	w := WayBytes(sizeBytes, cbmLen)
	if w == 0 {
		return 0
	}
	n := int((b + w - 1) / w)
	return min(n, cbmLen)
}

// UsedBits returns, per domain, the union of the masks of resource res over all groups
// except skip (the bits other groups use), read from their schemata.
func (c *Client) UsedBits(res string, skip string) (map[int]uint64, error) {
	gs, err := c.Groups()
	if err != nil {
		return nil, err
	}
	used := map[int]uint64{}
	for _, g := range gs {
		if g.Mon || g.Path == skip {
			continue
		}
		s, err := c.Schemata(g.Path)
		if err != nil {
			return nil, err
		}
		if l, ok := s.Line(res); ok {
			for _, dv := range l.Values {
				used[dv.Domain] |= dv.Value
			}
		}
	}
	return used, nil
}
