package sched

import (
	"fmt"
	"math/bits"
)

// BestFit returns a contiguous mask of n ways taken from the free ways of a cache of
// totalWays ways: the start of the smallest run of free ways whose length is ≥ n (best
// fit), ties to the lowest start (thesis Listing A.4 findBestFitBitmaskForWays,
// seed000.md §2.5). It scans maximal runs once, O(W). (The thesis code restarts its
// scan at every free bit, which can count the tail of a long run as a "smaller run" and
// place the group at the run's top; colo takes the run's start, the stated rule.)
// ok is false when no free run is long enough.
func BestFit(free uint64, totalWays, n int) (mask uint64, ok bool) {
	if n <= 0 || n > totalWays {
		return 0, false
	}
	bestStart, bestLen := -1, totalWays+1
	for i := 0; i < totalWays; {
		if free&(1<<uint(i)) == 0 {
			i++
			continue
		}
		j := i
		for j < totalWays && free&(1<<uint(j)) != 0 {
			j++
		}
		if l := j - i; l >= n && l < bestLen {
			bestStart, bestLen = i, l
		}
		i = j
	}
	if bestStart < 0 {
		return 0, false
	}
	return RunMask(bestStart, n), true
}

// RunMask is the contiguous mask of n ways starting at way start.
func RunMask(start, n int) uint64 {
	if n <= 0 {
		return 0
	}
	if n >= 64 {
		return ^uint64(0) << uint(start)
	}
	return ((uint64(1) << uint(n)) - 1) << uint(start)
}

// LargestRun is the length of the longest run of set bits among the low totalWays bits.
func LargestRun(m uint64, totalWays int) int {
	best, cur := 0, 0
	for i := 0; i < totalWays; i++ {
		if m&(1<<uint(i)) != 0 {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}

// Contiguous reports whether the set bits of m form one run (an empty mask is not contiguous).
func Contiguous(m uint64) bool {
	if m == 0 {
		return false
	}
	m >>= uint(bits.TrailingZeros64(m))
	return m&(m+1) == 0
}

// Ways is the number of ways in m.
func Ways(m uint64) int { return bits.OnesCount64(m) }

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
	if n <= 0 || n > Ways(m) || !Contiguous(m) {
		return 0, fmt.Errorf("cannot take %d ways from mask %#x", n, m)
	}
	return RunMask(Low(m), n), nil
}
