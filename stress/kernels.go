// Package stress holds colo's built-in memory-interference generators and probes: the
// Bubble-Up source of interference (SoI, "bubble") with a working-set dial, the four
// Bubble-Up reporters, the thesis's five sensitivity stressors, and two reference "apps"
// (a cache-insensitive compute loop and a cache-hungry random-access loop) that report their
// own progress rate.
//
// Every kernel works on memory allocated and pre-faulted before any timing starts, indexes
// only inside its own slices (Go bounds checks would panic otherwise, and the tests check the
// index ranges), and never allocates inside a timed loop. Working sets are given in MB of
// 10^6 bytes (the thesis's convention, seed002.md §1.2: FOOTPRINT_SIZE = size_mb·1e6/8) and
// mean bytes actually touched, unlike the original SoI whose "X MB" was a nominal label
// (seed002.md §1.3).
package stress

// MB is the unit of every working-set dial: 10^6 bytes (seed002.md §1.2).
const MB = 1_000_000

// lfsrSeed is the Bubble-Up LFSR seed (seed002.md §1.2, "the seed is 0xACE1").
const lfsrSeed = 0xACE1

// lfsrNext is one step of the 32-bit Galois LFSR of the Bubble-Up SoI and random reporter,
// lfsr' = (lfsr >> 1) ^ (−(lfsr & 1) & 0xd0000001) (seed002.md §1.2). Its period is 2^32−1
// for any non-zero seed.
func lfsrNext(l uint32) uint32 { return (l >> 1) ^ (-(l & 1) & 0xd0000001) }

// streamCopy is the STREAM "copy" step of the Bubble-Up streaming process and streaming
// reporter, dst[i] = s·src[i] (seed002.md §1.2–1.3). It returns the bytes moved (read+write).
func streamCopy(dst, src []float64, s float64) int64 {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = s * src[i]
	}
	return int64(len(dst)) * 16
}

// randomAccess performs n LFSR-indexed read-modify-writes dump[k] += data[r]++ with
// r = lfsr mod len(data) (the Bubble-Up random process and Type 2 reporter, seed002.md
// §1.2–1.3). dump stays in L1. It returns the updated LFSR state. r < len(data) always, so
// the access never leaves the slice (the original ran 320 KB past its buffer, §1.3).
func randomAccess(data []uint32, dump *[10]uint32, lfsr uint32, n int) uint32 {
	m := uint32(len(data))
	k := 0
	for i := 0; i < n; i++ {
		lfsr = lfsrNext(lfsr)
		r := lfsr % m
		v := data[r]
		data[r] = v + 1
		dump[k] += v
		k++
		if k == len(dump) {
			k = 0
		}
	}
	return lfsr
}

// lbmOffsets are the 19 destination offsets (in float64 elements) of the lbm-like hybrid
// reporter: a D3Q19 lattice (rest, 6 faces, 12 edges) over cells of 20 doubles on a
// 100×100 plane, i.e. off_k = k + 20·(dx + 100·dy + 10000·dz). This reproduces the shape
// Mars & Soffa describe for SPEC lbm (streaming reads, scattered writes up to ±200 000
// elements away; seed002.md §1.3 Type 4); the exact published offsets are not all known.
var lbmOffsets = func() [19]int {
	dirs := [19][3]int{{0, 0, 0},
		{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1},
		{1, 1, 0}, {-1, 1, 0}, {1, -1, 0}, {-1, -1, 0},
		{1, 0, 1}, {-1, 0, 1}, {1, 0, -1}, {-1, 0, -1},
		{0, 1, 1}, {0, -1, 1}, {0, 1, -1}, {0, -1, -1}}
	var off [19]int
	for k, d := range dirs {
		off[k] = k + 20*(d[0]+100*d[1]+10000*d[2])
	}
	return off
}()

// lbmMargin is the number of elements kept free on each side of the hybrid grids so that
// i + off_k stays inside them: max |off_k| rounded up to a cell.
const lbmMargin = 20 * (1 + 100 + 10000 + 1)

// lbmSweep is the lbm-like hybrid kernel over cells [from, to) (element indices relative to
// the interior, multiples of 20): dst[m+i+off_k] = src[m+i+k] for k = 0..18 (seed002.md §1.3
// Type 4, with the grids sized in elements, not bytes, and allocated once outside the loop).
// It returns the bytes moved.
func lbmSweep(dst, src []float64, from, to int) int64 {
	for i := from + lbmMargin; i < to+lbmMargin; i += 20 {
		s := src[i : i+19]
		for k, o := range lbmOffsets {
			dst[i+o] = s[k]
		}
	}
	return int64((to-from)/20) * 19 * 16
}

// lineWalk increments one 64-byte line at a time in LFSR order over buf (len multiple of 8
// uint64s): the built-in LLC stressor, a cache-sized random read-modify-write walk like
// stress-ng --cache (seed000.md §2.6 Table 4.2). Returns the new LFSR state.
func lineWalk(buf []uint64, lfsr uint32, n int) uint32 {
	lines := uint32(len(buf) / 8)
	for i := 0; i < n; i++ {
		lfsr = lfsrNext(lfsr)
		buf[(lfsr%lines)*8]++
	}
	return lfsr
}

// readSum streams through buf and returns the sum of its words (memory-read stressor).
func readSum(buf []uint64) uint64 {
	var s0, s1, s2, s3 uint64
	i := 0
	for ; i+4 <= len(buf); i += 4 {
		s0 += buf[i]
		s1 += buf[i+1]
		s2 += buf[i+2]
		s3 += buf[i+3]
	}
	for ; i < len(buf); i++ {
		s0 += buf[i]
	}
	return s0 + s1 + s2 + s3
}

// fill writes v to every word of buf (memory-write stressor). Go has no non-temporal
// stores, so unlike stress-ng's write64nt this pays the read-for-ownership.
func fill(buf []uint64, v uint64) {
	for i := range buf {
		buf[i] = v
	}
}

// triad is the STREAM triad a[i] = b[i] + s·c[i] (the prefetch/stream stressor, like
// stress-ng --stream). It returns the bytes moved.
func triad(a, b, c []float64, s float64) int64 {
	b, c = b[:len(a)], c[:len(a)]
	for i := range a {
		a[i] = b[i] + s*c[i]
	}
	return int64(len(a)) * 24
}

// computeLoop runs n rounds of a xorshift-multiply mix on registers only: no memory
// traffic, hence insensitive to cache and bandwidth contention.
func computeLoop(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		x *= 0x2545F4914F6CDD1D
	}
	return x
}
