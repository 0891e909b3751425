package cbm

// BestFit places n contiguous ways inside the free ways of a width-way cache: the smallest
// run of free ways that holds n (best fit, so that large holes stay whole for large
// requests; RMD's fragmentation argument, anchors.md §2.6), the lowest on ties, taking
// the run's low end. ok is false when no run is long enough.
func BestFit(free Mask, width, n int) (m Mask, ok bool) {
	if n <= 0 || n > width {
		return 0, false
	}
	free &= Full(width)
	bestLo, bestLen := -1, width+1
	for i := 0; i < width; {
		if free&(1<<uint(i)) == 0 {
			i++
			continue
		}
		j := i
		for j < width && free&(1<<uint(j)) != 0 {
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
	return Run(bestLo, n), true
}

// Sparse picks the n lowest free ways, contiguous or not (for caches whose
// info/*/sparse_masks is 1).
func Sparse(free Mask, width, n int) (m Mask, ok bool) {
	if n <= 0 || n > width {
		return 0, false
	}
	free &= Full(width)
	for i := 0; i < width && m.Ones() < n; i++ {
		if free&(1<<uint(i)) != 0 {
			m |= 1 << uint(i)
		}
	}
	return m, m.Ones() == n
}
