package cbm

import (
	"math/rand/v2"
	"testing"
)

// Best fit by hand: the placements the thesis scheduler makes (seed000.md §2.5).
func TestBestFitHandMade(t *testing.T) {
	cases := []struct {
		free  Mask
		total int
		n     int
		want  Mask
		ok    bool
	}{
		// 12 ways, everything free: lowest start
		{0xfff, 12, 3, 0x007, true},
		// runs: ways 0-1 (2), ways 4-8 (5), ways 10-11 (2): a 2-way request takes the
		// first smallest run (ways 0-1), a 3-way request the only run that fits
		{0b110111110011, 12, 2, 0x003, true},
		{0b110111110011, 12, 3, 0x070, true},
		// best fit beats first fit: run of 4 at 0-3, run of 2 at 6-7 -> 2 ways go to 6-7
		{0b000011001111, 12, 2, 0x0c0, true},
		// exact fit at the top
		{0b111000000000, 12, 3, 0xe00, true},
		// fragmented: 4 free ways but no run of 3
		{0b101010100000 | 0b1, 12, 3, 0, false},
		{0xfff, 12, 13, 0, false},
		{0xfff, 12, 0, 0, false},
		// free bits above the cache width are ignored
		{0xf000 | 0x3, 12, 3, 0, false},
		// thesis Fig. 4.14: default shrinks to fc0 after a 6-way exclusive group at 03f
		{0x7ff, 12, 6, 0x03f, true},
	}
	for _, c := range cases {
		got, ok := BestFit(c.free, c.total, c.n)
		if got != c.want || ok != c.ok {
			t.Errorf("BestFit(%#b, %d, %d) = %#x,%v want %#x,%v", c.free, c.total, c.n, got, ok, c.want, c.ok)
		}
	}
}

// bruteBestFit enumerates the maximal free runs (a run starts at a free way whose lower
// neighbour is not free) and keeps the smallest that fits, lowest start on ties: the rule
// of seed000.md §2.5, written independently of BestFit to cross-check it.
func bruteBestFit(free Mask, total, n int) (Mask, bool) {
	best, bestLen := -1, 1<<30
	for i := 0; i < total; i++ {
		if free&(1<<uint(i)) == 0 || (i > 0 && free&(1<<uint(i-1)) != 0) {
			continue
		}
		l := 0
		for j := i; j < total && free&(1<<uint(j)) != 0; j++ {
			l++
		}
		if l >= n && l < bestLen {
			best, bestLen = i, l
		}
	}
	if best < 0 || n <= 0 {
		return 0, false
	}
	var m Mask
	for k := 0; k < n; k++ {
		m |= 1 << uint(best+k)
	}
	return m, true
}

func TestBestFitMatchesThesisScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		total := 1 + r.IntN(20)
		free := Mask(r.Uint64()) & Full(total)
		n := 1 + r.IntN(total)
		a, aok := BestFit(free, total, n)
		b, bok := bruteBestFit(free, total, n)
		if aok != bok || a != b {
			t.Fatalf("free=%#b n=%d: %#x,%v vs brute %#x,%v", free, n, a, aok, b, bok)
		}
		if aok && (a&^free != 0 || !a.Contiguous() || a.Ones() != n) {
			t.Fatalf("free=%#b n=%d: bad mask %#x", free, n, a)
		}
	}
}

func TestSparseTakesTheLowestFreeWays(t *testing.T) {
	if m, ok := Sparse(0b1011_0110, 8, 3); !ok || m != 0b0001_0110 {
		t.Errorf("Sparse(0b10110110, 8, 3) = %#b, %v", m, ok)
	}
	if _, ok := Sparse(0b1_0000_0001, 8, 2); ok {
		t.Error("Sparse used a way above the cache width")
	}
}
