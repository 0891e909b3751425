package cbm

import (
	"fmt"
	"iter"
	"math/bits"
)

// Full is the mask of the n lowest ways (a cache of n ways: its cbm_mask).
func Full(n int) Mask { return Run(0, n) }

// Run is the mask of the n ways [lo, lo+n).
func Run(lo, n int) Mask {
	if n <= 0 {
		return 0
	}
	if n >= 64 {
		return Mask(^uint64(0) << uint(lo))
	}
	return Mask((uint64(1)<<uint(n) - 1) << uint(lo))
}

// Contiguous reports whether the ways of m form one run. The empty mask counts as
// contiguous; whether it is a valid mask is a rule of its own (Rules.Validate).
func (m Mask) Contiguous() bool {
	if m == 0 {
		return true
	}
	v := uint64(m) >> uint(bits.TrailingZeros64(uint64(m)))
	return v&(v+1) == 0
}

// FirstRun is the lowest run of ways of m (the run the kernel's cbm_validate measures
// against min_cbm_bits); 0 for an empty mask.
func (m Mask) FirstRun() Mask {
	if m == 0 {
		return 0
	}
	lo := m.Low()
	n := bits.TrailingZeros64(^(uint64(m) >> uint(lo)))
	return Run(lo, n)
}

// Runs yields each run of ways of m as the ways [lo, hi), lowest first.
func (m Mask) Runs() iter.Seq2[int, int] {
	return func(yield func(lo, hi int) bool) {
		for v := uint64(m); v != 0; {
			lo := bits.TrailingZeros64(v)
			hi := lo + bits.TrailingZeros64(^(v >> uint(lo)))
			if !yield(lo, hi) {
				return
			}
			if hi >= 64 {
				return
			}
			v &^= (uint64(1)<<uint(hi) - 1)
		}
	}
}

// LongestRun is the longest run of ways of m among its low width ways; on a tie the
// highest run wins (0 for an empty mask).
func (m Mask) LongestRun(width int) Mask {
	best, bestStart, cur := 0, 0, 0
	for i := 0; i < width; i++ {
		if m&(1<<uint(i)) != 0 {
			cur++
			if cur >= best {
				best, bestStart = cur, i-cur+1
			}
		} else {
			cur = 0
		}
	}
	return Run(bestStart, best)
}

// LowestWays is the n lowest ways of the contiguous mask m (a probe segment inside its
// buffer). It is an error if m is not one run of at least n ways.
func (m Mask) LowestWays(n int) (Mask, error) {
	if n <= 0 || n > m.Ones() || !m.Contiguous() {
		return 0, fmt.Errorf("cannot take %d ways from mask %s: the mask must be one run of at least %d ways", n, m, max(n, 1))
	}
	return Run(m.Low(), n), nil
}
