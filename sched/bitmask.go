package sched

import (
	"fmt"
	"math/bits"

	"colo/machine"
	"colo/resctrl"
)

// Capacity-bitmask helpers the scheduler needs beyond the shared ones: placement is
// resctrl.BestFit, run construction resctrl.Contiguous, the contiguity test
// machine.Contiguous (an empty mask counts as contiguous there, as in the kernel's
// cbm_validate, which rejects 0 through min_cbm_bits instead; anchors.md §4.4).

// LargestRun is the length of the longest run of set bits among the low totalWays bits.
func LargestRun(m uint64, totalWays int) int { return bits.OnesCount64(LongestRun(m, totalWays)) }

// LongestRun is the longest run of set bits among the low totalWays bits, as a mask; on a
// tie the highest run wins (0 for an empty mask).
func LongestRun(m uint64, totalWays int) uint64 {
	best, bestStart, cur := 0, 0, 0
	for i := 0; i < totalWays; i++ {
		if m&(1<<uint(i)) != 0 {
			cur++
			if cur >= best {
				best, bestStart = cur, i-cur+1
			}
		} else {
			cur = 0
		}
	}
	return resctrl.Contiguous(bestStart, best)
}

// Low is the lowest way of m (−1 for an empty mask).
func Low(m uint64) int {
	if m == 0 {
		return -1
	}
	return bits.TrailingZeros64(m)
}

// LowestWays returns the mask of the n lowest ways of the contiguous mask m (a probe
// segment inside its buffer). It is an error if m holds fewer than n ways.
func LowestWays(m uint64, n int) (uint64, error) {
	if n <= 0 || n > bits.OnesCount64(m) || !machine.Contiguous(m) {
		return 0, fmt.Errorf("cannot take %d ways from mask %#x: the mask must be one run of at least %d ways", n, m, max(n, 1))
	}
	return resctrl.Contiguous(Low(m), n), nil
}
