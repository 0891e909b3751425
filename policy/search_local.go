package policy

import (
	"math/bits"
	"sort"
)

// improve refines the incumbent by local search before the exact search starts, with the
// full model (a better incumbent prunes more; the exact search still proves the optimum):
// best-improvement hill climbing over moving one way between clusters, moving one
// application to another or to a new cluster (taking a way from a cluster with two), and
// swapping two applications of different clusters.
func (s *searchState) improve(w *worker) {
	if s.best == nil {
		return
	}
	n := s.n
	cl := make([]uint32, 0, s.W)
	ways := make([]int, 0, s.W)
	for _, ch := range s.best {
		cl = append(cl, ch.c)
		ways = append(ways, int(ch.k))
	}
	bu, bs := s.bu, s.bs
	type sol struct {
		cl   []uint32
		ways []int
	}
	var cands []sol
	add := func(c []uint32, k []int) {
		cands = append(cands, sol{append([]uint32(nil), c...), append([]int(nil), k...)})
	}
	for iter := 0; iter < 200; iter++ {
		cands = cands[:0]
		C := len(cl)
		for a := 0; a < C; a++ {
			for b := 0; b < C; b++ {
				if a != b && ways[a] > 1 {
					ways[a]--
					ways[b]++
					add(cl, ways)
					ways[a]++
					ways[b]--
				}
			}
		}
		for i := 0; i < n; i++ {
			bit := uint32(1) << uint(i)
			a := 0
			for cl[a]&bit == 0 {
				a++
			}
			for b := 0; b < C; b++ {
				if b == a {
					continue
				}
				c2 := append([]uint32(nil), cl...)
				w2 := append([]int(nil), ways...)
				c2[a] &^= bit
				c2[b] |= bit
				if c2[a] == 0 {
					w2[b] += w2[a]
					c2 = append(c2[:a], c2[a+1:]...)
					w2 = append(w2[:a], w2[a+1:]...)
				}
				add(c2, w2)
			}
			if cl[a] != bit {
				for d := 0; d < C; d++ {
					if ways[d] > 1 {
						c2 := append(append([]uint32(nil), cl...), bit)
						w2 := append(append([]int(nil), ways...), 1)
						c2[a] &^= bit
						w2[d]--
						add(c2, w2)
					}
				}
			}
			for j := i + 1; j < n; j++ {
				bj := uint32(1) << uint(j)
				if cl[a]&bj != 0 {
					continue
				}
				c2 := append([]uint32(nil), cl...)
				for b := range c2 {
					if c2[b]&bj != 0 {
						c2[b] = c2[b]&^bj | bit
					}
				}
				c2[a] = c2[a]&^bit | bj
				add(c2, ways)
			}
		}
		improved := false
		var nc []uint32
		var nw []int
		for _, cd := range cands {
			path := canonical(cd.cl, cd.ways)
			u, st, err := w.evaluate(path)
			if err != nil {
				continue // the model refuses this allocation: not a candidate
			}
			if s.obj.Better(u, st, bu, bs) {
				bu, bs, nc, nw, improved = u, st, cd.cl, cd.ways, true
			}
		}
		if !improved {
			break
		}
		cl, ways = nc, nw
		s.offer(canonical(cl, ways), bu, bs)
	}
}

// canonical is the search's path of a clustering: clusters ordered by their lowest
// application.
func canonical(cl []uint32, ways []int) []choice {
	p := make([]choice, len(cl))
	for i := range cl {
		p[i] = choice{cl[i], int8(ways[i])}
	}
	sort.Slice(p, func(a, b int) bool {
		return bits.TrailingZeros32(p[a].c) < bits.TrailingZeros32(p[b].c)
	})
	return p
}
