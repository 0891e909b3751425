package policy

import (
	"math/bits"
	"math/rand"
	"testing"

	"colo/perfmodel"
	"colo/profile"
)

// lagBound must bound the STP of every allocation under the simple model from above, at
// every node on the allocation's path (its first clusters placed, the rest left to the
// DP tables of every band), with the bands kept whatever the incumbent (random clusterings
// of random workloads with a binding limit, seeded). It must also be below the bound
// without a model somewhere, or it would prove nothing the other bounds do not.
func TestLagBoundBrackets(t *testing.T) {
	set, _ := profile.Default()
	rng := rand.New(rand.NewSource(18))
	m := skx(t)
	W := m.LLC.Ways
	checked, tighter := 0, 0
	for trial := 0; trial < 10; trial++ {
		n := 5 + rng.Intn(5)
		apps := randomWorkload(rng, set, n)
		model := perfmodel.Options{BW: perfmodel.Simple, MaxBW: 8000 + float64(rng.Intn(16000))}
		s := &searchState{in: Input{Machine: m, Apps: apps, Model: model}, obj: MaxSTP, n: n, W: W}
		s.bus = newBusBounds(apps, model)
		if s.bus.inert {
			continue
		}
		lo := s.lowestPressure(1)
		g := newLagBound(apps, W, model.MaxBW, 1)
		g.build(lo, s.bus.Pmax, func(float64) bool { return false }, 1)
		if len(g.bands) == 0 {
			t.Fatalf("trial %d: no bands", trial)
		}
		for a := 0; a < 200; a++ {
			k := 1 + rng.Intn(min(n, W))
			cl := make([]uint32, k)
			for i := 0; i < n; i++ {
				gi := i
				if i >= k {
					gi = rng.Intn(k)
				}
				cl[gi] |= 1 << uint(i)
			}
			ways := make([]int, k)
			for i := range ways {
				ways[i] = 1
			}
			for left := W - k; left > 0; left-- {
				ways[rng.Intn(k)]++
			}
			path := canonical(cl, ways)
			pc := make([]perfmodel.Cluster, len(path))
			for i, ch := range path {
				pc[i] = perfmodel.Cluster{Apps: appsOf(uint(ch.c)), Ways: int(ch.k)}
			}
			r, err := perfmodel.Evaluate(apps, pc, model)
			if err != nil {
				continue // refused by the model: not an allocation
			}
			var p [4]float64
			R, rr := (1<<uint(n))-1, W
			for _, ch := range path {
				g.add(&p, int(ch.c), int(ch.k))
				R ^= int(ch.c)
				rr -= int(ch.k)
				b := g.bound(&p, R, rr)
				if b < r.STP-1e-9 {
					t.Fatalf("trial %d (%s %v MB/s): allocation %v with STP %v above the bound %v at the node with rest %#x",
						trial, model.BW, model.MaxBW, path, r.STP, b, R)
				}
				checked++
			}
			inv := 0.0
			for _, x := range r.Apps {
				inv += 1 / x.SlowdownCache
			}
			if g.bound(&p, 0, 0) < inv-1e-9 {
				tighter++
			}
			if bits.OnesCount(uint(R)) != 0 || rr != 0 {
				t.Fatal("path does not place everything")
			}
		}
	}
	t.Logf("%d checks, %d tighter", checked, tighter)
	if checked < 500 || tighter == 0 {
		t.Errorf("%d checks, %d below the bound without a model", checked, tighter)
	}
}
