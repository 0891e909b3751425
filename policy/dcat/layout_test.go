package dcat

import (
	"math/bits"
	"math/rand/v2"
	"testing"

	"colo/cbm"
)

func TestMovedWays(t *testing.T) {
	cases := []struct {
		old, new uint64
		want     int
	}{
		{0b0011, 0b0111, 0}, // grow in place
		{0b0111, 0b0011, 0}, // shrink in place
		{0b0011, 0b1100, 2}, // shifted by two
		{0b0011, 0b0110, 1}, // shifted by one
		{0, 0b111, 0},       // fresh
		{0b1110, 0b0111, 1}, // shifted and same size
	}
	for _, c := range cases {
		if got := MovedWays(c.old, c.new); got != c.want {
			t.Errorf("MovedWays(%b, %b) = %d, want %d", c.old, c.new, got, c.want)
		}
	}
}

// Growing A into a non-adjacent free way must shift the cheaper neighbour: A=[0,2) B=[2,3)
// free=[3,5) — A grows to 3: moving B (1 way) right costs 1, moving A costs 2.
func TestLayoutGrowIntoNonAdjacent(t *testing.T) {
	ps := []Placement{{"A", 3, 0b00011}, {"B", 1, 0b00100}}
	m, moved, err := Layout(ps, 5, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if m["A"] != 0b00111 || m["B"] != 0b01000 || moved != 1 {
		t.Fatalf("A=%b B=%b moved=%d, want A=111 B=1000 moved=1", m["A"], m["B"], moved)
	}
	// Sparse: A takes the free way 3, nobody moves.
	m, moved, err = Layout(ps, 5, 0, true)
	if err != nil || moved != 0 || m["A"] != 0b01011 || m["B"] != 0b00100 {
		t.Fatalf("sparse: A=%b B=%b moved=%d err=%v", m["A"], m["B"], moved, err)
	}
}

func TestLayoutErrors(t *testing.T) {
	if _, _, err := Layout([]Placement{{"A", 4, 0}, {"B", 2, 0}}, 5, 0, false); err == nil {
		t.Fatal("6 ways in 5 accepted")
	}
	if _, _, err := Layout([]Placement{{"A", 0, 0}}, 5, 0, false); err == nil {
		t.Fatal("0 ways accepted")
	}
	if _, _, err := Layout([]Placement{{"A", 1, 0}}, 5, 0b00100, false); err == nil {
		t.Fatal("a reserved run in the middle accepted for contiguous masks")
	}
	if _, _, err := Layout([]Placement{{"A", 4, 0}}, 5, 0b10000, false); err != nil {
		t.Fatal(err)
	}
}

// Property: for random current layouts and random new sizes, the cost is never above the best
// placement that keeps the order (brute force) nor below the best over all orders, the
// reported cost is the masks' cost, and the masks are disjoint runs.
func TestLayoutMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	improved := 0
	defer func() { t.Logf("%d layouts where another order moves fewer ways", improved) }()
	for iter := 0; iter < 300; iter++ {
		n := 4 + rng.IntN(7) // 4..10 ways
		k := 1 + rng.IntN(4) // 1..4 workloads
		if k > n {
			k = n
		}
		// Random current layout: k disjoint runs in order.
		sizes := make([]int, k)
		rest := n
		for i := range sizes {
			sizes[i] = 1
			rest--
		}
		for rest > 0 && rng.IntN(3) > 0 {
			sizes[rng.IntN(k)]++
			rest--
		}
		ps := make([]Placement, k)
		pos := 0
		for i := range ps {
			pos += rng.IntN(2) * min(1, n-pos-sumFrom(sizes, i))
			ps[i] = Placement{ID: string(rune('a' + i)), Old: uint64(cbm.Run(pos, sizes[i]))}
			pos += sizes[i]
		}
		// Random new sizes that fit.
		total := 0
		for i := range ps {
			ps[i].Ways = 1 + rng.IntN(3)
			total += ps[i].Ways
		}
		for total > n {
			for i := range ps {
				if ps[i].Ways > 1 && total > n {
					ps[i].Ways--
					total--
				}
			}
		}
		m, cost, err := Layout(ps, n, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		var union uint64
		got := 0
		for _, p := range ps {
			if m[p.ID]&union != 0 || bits.OnesCount64(m[p.ID]) != p.Ways || m[p.ID] != uint64(cbm.Run(bits.TrailingZeros64(m[p.ID]), p.Ways)) {
				t.Fatalf("bad mask %b for %+v", m[p.ID], p)
			}
			union |= m[p.ID]
			got += MovedWays(p.Old, m[p.ID])
		}
		if got != cost {
			t.Fatalf("reported cost %d, masks cost %d", cost, got)
		}
		fixed := bruteForce(ps, 0, 0, n) // ps is in the current left-to-right order
		best := fixed
		permute(ps, 0, func(q []Placement) { best = min(best, bruteForce(q, 0, 0, n)) })
		if cost > fixed || cost < best {
			t.Fatalf("iter %d: cost %d outside [best over all orders %d, best in the kept order %d] (ps %+v, n %d)", iter, cost, best, fixed, ps, n)
		}
		if fixed > 0 && best < fixed {
			improved++
		}
	}
}

func sumFrom(s []int, i int) int {
	t := 0
	for _, x := range s[i:] {
		t += x
	}
	return t
}

func bruteForce(ps []Placement, i, from, n int) int {
	if i == len(ps) {
		return 0
	}
	best := 1 << 30
	for s := from; s+ps[i].Ways <= n; s++ {
		c := MovedWays(ps[i].Old, uint64(cbm.Run(s, ps[i].Ways))) + bruteForce(ps, i+1, s+ps[i].Ways, n)
		best = min(best, c)
	}
	return best
}

func permute(ps []Placement, k int, f func([]Placement)) {
	if k == len(ps) {
		f(ps)
		return
	}
	for i := k; i < len(ps); i++ {
		q := append([]Placement(nil), ps...)
		q[k], q[i] = q[i], q[k]
		permute(q, k+1, f)
	}
}
