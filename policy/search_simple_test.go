package policy

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand"
	"runtime"
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
		g.build(lo, s.bus.Pmax, func(float64) bool { return false }, func() bool { return false }, 1)
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

// The answer of the exact search does not depend on the number of workers or of cores:
// 10–12 applications of the bench mix with every bandwidth model, both objectives, 1–4
// workers under GOMAXPROCS 1 and 2 give the same clustering and bit-identical objectives.
func TestSearchDeterministicAcrossWorkers(t *testing.T) {
	set, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		n     int
		model perfmodel.Options
	}
	cases := []tc{{12, perfmodel.Options{}}, {11, perfmodel.Options{BW: perfmodel.Stalls, MaxBW: 25000}},
		{10, perfmodel.Options{BW: perfmodel.Simple, MaxBW: 15000}}, {10, perfmodel.Options{BW: perfmodel.Morad, MaxBW: 30000}}}
	if testing.Short() {
		cases = cases[2:3]
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range cases {
		apps, err := set.Lookup(benchNames[:c.n])
		if err != nil {
			t.Fatal(err)
		}
		in := Input{Machine: skx(t), Apps: apps, Model: c.model}
		for _, o := range []Objective{MaxSTP, MinUnf} {
			var ref string
			for _, procs := range []int{1, 2} {
				runtime.GOMAXPROCS(procs)
				for jobs := 1; jobs <= 4; jobs++ {
					s, r := searchEvaluated(t, in, o, jobs)
					got := fmt.Sprintf("%#x STP %x unf %x", s.AppMasks(c.n), math.Float64bits(r.STP), math.Float64bits(r.Unfairness))
					if ref == "" {
						ref = got
					} else if got != ref {
						t.Errorf("%d apps %s obj %d: GOMAXPROCS %d, %d workers: %s; GOMAXPROCS 1, 1 worker: %s", c.n, c.model.BW, o, procs, jobs, got, ref)
					}
				}
			}
		}
	}
}

// opt-* report their progress: the last call has every composition of W into n parts.
func TestOptStrictProgress(t *testing.T) {
	set, _ := profile.Default()
	apps, err := set.Lookup(benchNames[:6])
	if err != nil {
		t.Fatal(err)
	}
	var done, total int64
	calls := 0
	opt := DefaultOptions()
	opt.Progress = func(d, tot int64) { done, total, calls = d, tot, calls+1 }
	s, err := Run("opt-unf", Input{Machine: skx(t), Apps: apps}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if total != 252 || done != total || s.Nodes != total || calls < 2 { // C(10, 5)
		t.Errorf("progress %d/%d after %d calls, %d nodes; want 252/252", done, total, calls, s.Nodes)
	}
}
