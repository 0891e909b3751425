package resctrl

import (
	"fmt"
	"math/bits"

	"colo/machine"
)

// IsContiguous reports whether the 1-bits of m form one run (0 counts as contiguous); it is
// machine.Contiguous.
func IsContiguous(m uint64) bool { return machine.Contiguous(m) }

// Ones returns the number of set bits (ways) of a mask.
func Ones(m uint64) int { return bits.OnesCount64(m) }

// Contiguous returns n ways starting at bit lo.
func Contiguous(lo, n int) uint64 {
	if n <= 0 {
		return 0
	}
	if n >= 64 {
		return ^uint64(0) << uint(lo)
	}
	return (uint64(1)<<uint(n) - 1) << uint(lo)
}

// BestFit places n contiguous ways inside the free bits of a cbmLen-bit mask: it picks
// the smallest run of free bits that holds n (best fit, so large holes stay whole for
// large requests; RMD's fragmentation argument, anchors.md §2.6), lowest bit first on
// ties, and takes the run's low end. ok is false when no run is long enough.
func BestFit(free uint64, cbmLen, n int) (mask uint64, ok bool) {
	if n <= 0 || n > cbmLen {
		return 0, false
	}
	free &= Contiguous(0, cbmLen)
	bestLo, bestLen := -1, cbmLen+1
	for i := 0; i < cbmLen; {
		if free&(1<<uint(i)) == 0 {
			i++
			continue
		}
		j := i
		for j < cbmLen && free&(1<<uint(j)) != 0 {
			j++
		}
		if l := j - i; l >= n && l < bestLen {
			bestLo, bestLen = i, l
		}
		i = j
	}
	if bestLo < 0 {
		return 0, false
	}
	return Contiguous(bestLo, n), true
}

// Sparse picks the n lowest free ways, contiguous or not (for platforms whose
// info/*/sparse_masks is 1).
func Sparse(free uint64, cbmLen, n int) (mask uint64, ok bool) {
	if n <= 0 || n > cbmLen {
		return 0, false
	}
	free &= Contiguous(0, cbmLen)
	for i := 0; i < cbmLen && Ones(mask) < n; i++ {
		if free&(1<<uint(i)) != 0 {
			mask |= 1 << uint(i)
		}
	}
	return mask, Ones(mask) == n
}

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
	if m, ok := BestFit(free, r.CBMLen, n); ok {
		return m, nil
	}
	if r.SparseMasks {
		if m, ok := Sparse(free, r.CBMLen, n); ok {
			return m, nil
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
	return uint64(Ones(mask)) * WayBytes(sizeBytes, cbmLen)
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
