package policy

import (
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"

	"colo/perfmodel"
	"colo/profile"
)

// bruteForce evaluates every clustering (restricted growth strings) and every split of all
// W ways among its clusters with the full model, as PBBCache's optc-* do, and returns the
// best (unfairness, STP) under o and the number of solutions.
func bruteForce(t *testing.T, in Input, o Objective) (bu, bs float64, count int) {
	n, W := len(in.Apps), in.Machine.LLC.Ways
	bu, bs = math.Inf(1), math.Inf(-1)
	first := true
	rgs := make([]int, n)
	var rec func(i, k int)
	rec = func(i, k int) {
		if i == n {
			if k > W {
				return
			}
			groups := make([][]int, k)
			for a, g := range rgs {
				groups[g] = append(groups[g], a)
			}
			compositions(W, k, func(w []int) bool {
				cl := make([]perfmodel.Cluster, k)
				for g := range cl {
					cl[g] = perfmodel.Cluster{Apps: groups[g], Ways: w[g]}
				}
				r, err := perfmodel.Evaluate(in.Apps, cl, in.Model)
				if err != nil {
					t.Fatal(err)
				}
				count++
				if first || o.Better(r.Unfairness, r.STP, bu, bs) {
					bu, bs, first = r.Unfairness, r.STP, false
				}
				return true
			})
			return
		}
		for g := 0; g <= k && g < W; g++ {
			rgs[i] = g
			nk := k
			if g == k {
				nk = k + 1
			}
			rec(i+1, nk)
		}
	}
	rec(0, 0)
	return bu, bs, count
}

func randomWorkload(rng *rand.Rand, set *profile.Set, n int) []*profile.Table {
	names := set.Names()
	out := make([]*profile.Table, n)
	for i := range out {
		t, _ := set.Get(names[rng.Intn(len(names))]) // duplicates allowed: distinct instances
		out[i] = t
	}
	return out
}

// Property (issue 4): the exact search equals brute force on random workloads of up to 8
// applications drawn from the data set, seeded, for both objectives, with and without a
// bandwidth model, with one and two workers.
func TestSearchMatchesBruteForce(t *testing.T) {
	set, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(20260422))
	m := skx(t)
	type tc struct {
		n     int
		model perfmodel.Options
		frac  float64 // > 0: the limit is this fraction of the sum of the largest demands
	}
	cases := []tc{{2, perfmodel.Options{}, 0}, {3, perfmodel.Options{}, 0}, {4, perfmodel.Options{}, 0}, {5, perfmodel.Options{}, 0},
		{6, perfmodel.Options{}, 0}, {7, perfmodel.Options{}, 0},
		{3, perfmodel.Options{BW: perfmodel.Stalls, MaxBW: 20000}, 0}, {4, perfmodel.Options{BW: perfmodel.Stalls, MaxBW: 35000}, 0},
		{5, perfmodel.Options{BW: perfmodel.Morad, MaxBW: 25000}, 0}, {5, perfmodel.Options{BW: perfmodel.Simple, MaxBW: 12000}, 0},
		{6, perfmodel.Options{BW: perfmodel.Stalls, MaxBW: 35000}, 0}, {7, perfmodel.Options{BW: perfmodel.Stalls, MaxBW: 25000}, 0},
		{6, perfmodel.Options{BW: perfmodel.Simple, MaxBW: 15000}, 0}, {7, perfmodel.Options{BW: perfmodel.Simple, MaxBW: 20000}, 0},
		{7, perfmodel.Options{BW: perfmodel.Morad, MaxBW: 30000}, 0},
		// the simple model binds (lagBound) only when the largest demands exceed the limit
		{5, perfmodel.Options{BW: perfmodel.Simple}, 0.8}, {6, perfmodel.Options{BW: perfmodel.Simple}, 0.7},
		{7, perfmodel.Options{BW: perfmodel.Simple}, 0.85}, {7, perfmodel.Options{BW: perfmodel.Simple}, 0.75}}
	if !testing.Short() {
		cases = append(cases, tc{8, perfmodel.Options{}, 0}, tc{8, perfmodel.Options{BW: perfmodel.Simple}, 0.8})
	}
	for ci, c := range cases {
		in := Input{Machine: m, Apps: randomWorkload(rng, set, c.n), Model: c.model}
		if ci%3 == 2 { // identical applications: symmetry breaking
			in.Apps[c.n-1] = in.Apps[0]
			in.Apps[c.n/2] = in.Apps[1]
		}
		if c.frac > 0 {
			sum := 0.0
			for _, a := range in.Apps {
				sum += slices.Max(a.Col(profile.BandwidthMBps))
			}
			in.Model.MaxBW = c.frac * sum
		}
		names := make([]string, c.n)
		for i, a := range in.Apps {
			names[i] = a.Name
		}
		for _, o := range []Objective{MaxSTP, MinUnf} {
			bu, bs, count := bruteForce(t, in, o)
			var prev []uint64
			for _, jobs := range []int{1, 2} {
				s, r := searchEvaluated(t, in, o, jobs)
				ok := math.Abs(r.STP-bs) <= 1e-9
				if o == MinUnf {
					ok = math.Abs(r.Unfairness-bu) <= 1e-9 && (r.STP >= bs-1e-9)
				}
				if !ok {
					t.Errorf("%v %s obj %d jobs %d: search unf %.9f STP %.9f, brute force (%d solutions) unf %.9f STP %.9f",
						names, c.model.BW, o, jobs, r.Unfairness, r.STP, count, bu, bs)
				}
				masks := s.AppMasks(c.n)
				if prev != nil && !equalU(prev, masks) {
					t.Errorf("%v obj %d: 1 and 2 workers differ: %#x vs %#x", names, o, prev, masks)
				}
				prev = masks
			}
		}
	}
}

func equalU(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// With no bandwidth model the STP objective is additive: the DP is the optimum, so the
// search explores almost nothing beyond its first dive.
func TestSearchSTPIsDP(t *testing.T) {
	set, _ := profile.Default()
	rng := rand.New(rand.NewSource(7))
	in := Input{Machine: skx(t), Apps: randomWorkload(rng, set, 10)}
	s, err := Search(in, MaxSTP, Options{Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes > 1000 {
		t.Errorf("explored %d nodes, want only ties with the DP optimum", s.Nodes)
	}
}

func TestSearchRefusesHugeWorkloads(t *testing.T) {
	set, _ := profile.Default()
	rng := rand.New(rand.NewSource(1))
	in := Input{Machine: skx(t), Apps: randomWorkload(rng, set, MaxOptcApps+1)}
	if _, err := Run("optc-unf", in, DefaultOptions()); err == nil {
		t.Error("want an error above MaxOptcApps")
	}
}

// busBounds must bracket the true factor of every application in every allocation:
// lowFactor(P_0) ≤ F_i ≤ highFactor ≤ hiMax(i), and at every pressure level whose additive
// test the allocation passes, lowFactor(P_l) ≤ F_i (random clusterings of random
// workloads, all three models, seeded).
func TestBandwidthBoundsBracket(t *testing.T) {
	set, _ := profile.Default()
	rng := rand.New(rand.NewSource(99))
	m := skx(t)
	checked := 0
	for trial := 0; trial < 600; trial++ {
		n := 2 + rng.Intn(12)
		apps := randomWorkload(rng, set, n)
		model := perfmodel.Options{BW: []perfmodel.BWModel{perfmodel.Morad, perfmodel.Stalls, perfmodel.Simple}[trial%3], MaxBW: 10000 + float64(rng.Intn(30000))}
		b := newBusBounds(apps, model)
		b.addLevels(8)
		// random clustering with at most 11 clusters and a random composition of 11 ways
		k := 1 + rng.Intn(min(n, m.LLC.Ways))
		groups := make([][]int, k)
		for a := 0; a < n; a++ {
			g := a
			if a >= k {
				g = rng.Intn(k)
			}
			groups[g] = append(groups[g], a)
		}
		ways := make([]int, k)
		for i := range ways {
			ways[i] = 1
		}
		for left := m.LLC.Ways - k; left > 0; left-- {
			ways[rng.Intn(k)]++
		}
		cl := make([]perfmodel.Cluster, k)
		for g := range cl {
			cl[g] = perfmodel.Cluster{Apps: groups[g], Ways: ways[g]}
		}
		r, err := perfmodel.Evaluate(apps, cl, model)
		if err != nil {
			continue // a demand above the limit: refused, nothing to bound
		}
		for l := range b.P {
			if l > 0 {
				q := 0.0
				for _, a := range r.Apps {
					q += b.q(b.P[l], a.BandwidthMBps)
				}
				if q < b.thr(b.P[l]) {
					continue
				}
			}
			for i, a := range r.Apps {
				F, q := b.factorAndQ(b.P[l], &a)
				if lo := b.lowFactor(b.P[l], &a); lo > a.BWFactor*(1+1e-12) || F != lo || q != b.q(b.P[l], a.BandwidthMBps) {
					t.Fatalf("trial %d %s app %d level %d (P %v): factor %v below the bound %v", trial, model.BW, i, l, b.P[l], a.BWFactor, lo)
				}
				checked++
			}
		}
		for i, a := range r.Apps {
			if hi := b.highFactor(&a); a.BWFactor > hi || hi > b.hiMax(i) {
				t.Fatalf("trial %d %s app %d: factor %v above %v (max %v)", trial, model.BW, i, a.BWFactor, hi, b.hiMax(i))
			}
		}
	}
	if checked < 1000 {
		t.Errorf("only %d factor checks", checked)
	}
}

// lowestPressure (and the lowered Pmax) must bound the bus pressure of every allocation (random
// clusterings of random workloads, all three models, seeded), and above the trivial one
// somewhere.
func TestLowestPressureBounds(t *testing.T) {
	set, _ := profile.Default()
	rng := rand.New(rand.NewSource(5))
	m := skx(t)
	raised := 0
	for trial := 0; trial < 12; trial++ {
		n := 4 + rng.Intn(5)
		apps := randomWorkload(rng, set, n)
		model := perfmodel.Options{BW: []perfmodel.BWModel{perfmodel.Morad, perfmodel.Stalls, perfmodel.Simple}[trial%3], MaxBW: 8000 + float64(rng.Intn(20000))}
		s := &searchState{in: Input{Machine: m, Apps: apps, Model: model}, n: n, W: m.LLC.Ways}
		s.bus = newBusBounds(apps, model)
		if s.bus.inert {
			continue
		}
		lo := s.lowestPressure(1)
		if lo > s.bus.P[0] {
			raised++
		}
		for a := 0; a < 300; a++ {
			k := 1 + rng.Intn(min(n, m.LLC.Ways))
			cl := make([]perfmodel.Cluster, k)
			for i := 0; i < n; i++ {
				g := i
				if i >= k {
					g = rng.Intn(k)
				}
				cl[g].Apps = append(cl[g].Apps, i)
			}
			for g := range cl {
				cl[g].Ways = 1
			}
			for left := m.LLC.Ways - k; left > 0; left-- {
				cl[rng.Intn(k)].Ways++
			}
			r, err := perfmodel.Evaluate(apps, cl, model)
			if err != nil {
				continue
			}
			d := make([]float64, n)
			for i, x := range r.Apps {
				d[i] = x.BandwidthMBps
			}
			P := perfmodel.SimplePressure(d, model.MaxBW)
			if model.BW != perfmodel.Simple {
				P, _, _ = perfmodel.MoradRoot(d, model.MaxBW)
			}
			if P < lo*(1-1e-9) || P > s.bus.Pmax*(1+1e-9) {
				t.Fatalf("trial %d %s: allocation with pressure %v outside the bounds [%v, %v]", trial, model.BW, P, lo, s.bus.Pmax)
			}
		}
	}
	if raised == 0 {
		t.Error("the bound never improved on the per-application minimum")
	}
}

// A search stopped by its time limit returns a valid solution whose proven gap contains
// the optimum: STP_opt ≤ STP·(1 + gap), unf_opt ≥ unf·(1 − gap). A limit of 1 ns stops
// it right after the incumbent (dive and local search), before any root subtree.
func TestSearchTimeLimitGap(t *testing.T) {
	set, _ := profile.Default()
	apps, err := set.Lookup(benchNames[:8])
	if err != nil {
		t.Fatal(err)
	}
	stopped := 0
	for _, model := range []perfmodel.Options{{}, {BW: perfmodel.Stalls, MaxBW: 25000}, {BW: perfmodel.Simple, MaxBW: 15000}} {
		in := Input{Machine: skx(t), Apps: apps, Model: model}
		for _, o := range []Objective{MaxSTP, MinUnf} {
			opt, err := Search(in, o, Options{Jobs: 1})
			if err != nil {
				t.Fatal(err)
			}
			ro, _ := Evaluate(in, opt)
			lim, err := Search(in, o, Options{Jobs: 2, TimeLimit: time.Nanosecond})
			if err != nil {
				t.Fatal(err)
			}
			rl, err := Evaluate(in, lim)
			if err != nil {
				t.Fatal(err)
			}
			if lim.Gap > 0 {
				stopped++
				t.Logf("%s obj %d: incumbent STP %.5f unf %.5f, gap %.3g; optimum STP %.5f unf %.5f", model.BW, o, rl.STP, rl.Unfairness, lim.Gap, ro.STP, ro.Unfairness)
			}
			if opt.Gap != 0 || lim.Gap < 0 {
				t.Errorf("%s obj %d: gaps %v (full) and %v (limited)", model.BW, o, opt.Gap, lim.Gap)
			}
			if o == MaxSTP && ro.STP > rl.STP*(1+lim.Gap)+1e-9 || o == MinUnf && ro.Unfairness < rl.Unfairness*(1-lim.Gap)-1e-9 {
				t.Errorf("%s obj %d: optimum (STP %v, unf %v) outside the gap %v of the incumbent (STP %v, unf %v)",
					model.BW, o, ro.STP, ro.Unfairness, lim.Gap, rl.STP, rl.Unfairness)
			}
		}
	}
	if stopped == 0 {
		t.Error("the time limit never stopped a search")
	}
}

// searchEvaluated runs the exact search with jobs workers and evaluates its solution.
func searchEvaluated(t *testing.T, in Input, o Objective, jobs int) (*Solution, *perfmodel.Result) {
	t.Helper()
	s, err := Search(in, o, Options{Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Evaluate(in, s)
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}
