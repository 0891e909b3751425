package policy

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"colo/internal/machinetest"
	"colo/machine"
	"colo/perfmodel"
	"colo/profile"
)

func skx(t testing.TB) *machine.Profile {
	return machinetest.Get(t, "skx-6138")
}

// synth builds an 11-way table whose slowdown curve is sd (min(sd) must be 1, so that
// IPC = 1/sd gives back sd) and whose LLCMPKC curve is mpkc (LLCMPKI = LLCMPKC/IPC).
// Other columns: bandwidth 100 MB/s, stalls 0.2 total, 0.05 memory, l2-miss stall l2.
func synth(t testing.TB, name string, sd, mpkc []float64, l2 float64) *profile.Table {
	t.Helper()
	cols := map[profile.Column][]float64{}
	n := len(sd)
	fill := func(v float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	ipc, mpki := make([]float64, n), make([]float64, n)
	for i := range sd {
		ipc[i] = 1 / sd[i]
		mpki[i] = mpkc[i] / ipc[i]
	}
	cols[profile.IPC] = ipc
	cols[profile.LLCMPKI] = mpki
	cols[profile.LLCMPKC] = mpkc
	cols[profile.LLCRPKI], cols[profile.LLCRPKC] = fill(50), fill(50)
	cols[profile.LLCUsageKB] = fill(1000)
	cols[profile.BandwidthMBps], cols[profile.LLCMBandwidth] = fill(100), fill(100)
	cols[profile.StallsL2Miss] = fill(l2)
	cols[profile.StallsL3Miss], cols[profile.StallsStoreBuf] = fill(0.04), fill(0.01)
	cols[profile.StallsTotal] = fill(0.2)
	tb, err := profile.NewTable(name, cols)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func flat(v float64) []float64 {
	out := make([]float64, 11)
	for i := range out {
		out[i] = v
	}
	return out
}

// knee is a curve that falls linearly from hi at 1 way to 1 at k ways and stays there.
func knee(hi float64, k int) []float64 {
	out := make([]float64, 11)
	for w := 1; w <= 11; w++ {
		if w >= k {
			out[w-1] = 1
		} else {
			out[w-1] = hi - (hi-1)*float64(w-1)/float64(k-1)
		}
	}
	return out
}

func waysOf(s *Solution, n int) []int { return s.AppWays(n) }

func run(t *testing.T, name string, in Input) *Solution {
	t.Helper()
	s, err := Run(name, in, DefaultOptions())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

func TestSharedAndEqual(t *testing.T) {
	m := skx(t)
	a := synth(t, "a", flat(1), flat(1), 0.1)
	in := Input{Machine: m, Apps: []*profile.Table{a, a, a}}
	s := run(t, "shared", in)
	if len(s.Clusters) != 1 || s.Clusters[0].Mask != 0x7ff || len(s.Clusters[0].Apps) != 3 {
		t.Errorf("shared: %+v", s.Clusters)
	}
	s = run(t, "equal", in)
	if got := waysOf(s, 3); !reflect.DeepEqual(got, []int{4, 4, 3}) {
		t.Errorf("equal ways %v, want 4 4 3", got)
	}
	if got := s.AppMasks(3); !reflect.DeepEqual(got, []uint64{0x780, 0x78, 0x7}) {
		t.Errorf("equal masks %#x", got)
	}
}

// UCP on hand-made miss curves: a's LLCMPKI falls by 10 per way up to 5 ways, b's by 1
// per way up to 3 ways, c is flat. Lookahead gives a 4 more ways (MU 10), then b 2 (MU 1),
// and the 2 leftover ways go one each to the first applications.
func TestUCPKnownAnswer(t *testing.T) {
	m := skx(t)
	mk := func(name string, drop float64, upto int) *profile.Table {
		c := make([]float64, 11)
		for w := 1; w <= 11; w++ {
			c[w-1] = 60 - drop*float64(min(w, upto)-1)
		}
		return synth(t, name, flat(1), c, 0.1)
	}
	in := Input{Machine: m, Apps: []*profile.Table{mk("a", 10, 5), mk("b", 1, 3), mk("c", 0, 1)}}
	if got := waysOf(run(t, "ucp", in), 3); !reflect.DeepEqual(got, []int{6, 4, 1}) {
		t.Errorf("ucp ways %v, want 6 4 1", got)
	}
	// Lookahead sees past a plateau: d gains nothing from 1 to 2 ways but 30 at 3 ways.
	d := make([]float64, 11)
	for w := 1; w <= 11; w++ {
		d[w-1] = 40
		if w >= 3 {
			d[w-1] = 10
		}
	}
	got := Lookahead([][]float64{d, flat(5)}, 4)
	if !reflect.DeepEqual(got, []int{3, 1}) {
		t.Errorf("lookahead over a plateau: %v, want 3 1", got)
	}
}

// UCP-Slowdown: a's slowdown falls to 1 at 6 ways, b's at 3 ways: 5 + 2 extra ways, and
// the 2 leftover ways one each to a and b.
func TestUCPSlowdownKnownAnswer(t *testing.T) {
	in := Input{Machine: skx(t), Apps: []*profile.Table{
		synth(t, "a", knee(1.5, 6), flat(5), 0.1), synth(t, "b", knee(1.2, 3), flat(5), 0.1)}}
	if got := waysOf(run(t, "ucp-slowdown", in), 2); !reflect.DeepEqual(got, []int{7, 4}) {
		t.Errorf("ucp-slowdown ways %v, want 7 4", got)
	}
}

// The README example: ucp and opt-stp rows (stalls model, 35,000 MB/s).
func TestReadmeRows(t *testing.T) {
	set, _ := profile.Default()
	apps, _ := set.Lookup([]string{"sphinx306", "lbm06", "libquantum06", "applu00", "soplex06", "milc06"})
	in := Input{Machine: skx(t), Apps: apps, Model: perfmodel.Options{BW: perfmodel.Stalls, MaxBW: 35000}}
	for _, c := range []struct {
		pol       string
		ways      []int
		masks     []uint64
		stp, unf  float64
		nodesWant int64
	}{
		{"ucp", []int{2, 2, 1, 1, 4, 1}, []uint64{0x600, 0x180, 0x40, 0x20, 0x1e, 0x1}, 5.21402, 1.19452, 1},
		{"opt-stp", []int{3, 1, 1, 1, 4, 1}, []uint64{0x700, 0x80, 0x40, 0x20, 0x1e, 0x1}, 5.27237, 1.18588, 252},
	} {
		s := run(t, c.pol, in)
		if got := waysOf(s, 6); !reflect.DeepEqual(got, c.ways) {
			t.Errorf("%s ways %v, want %v", c.pol, got, c.ways)
		}
		if got := s.AppMasks(6); !reflect.DeepEqual(got, c.masks) {
			t.Errorf("%s masks %#x, want %#x", c.pol, got, c.masks)
		}
		r, err := Evaluate(in, s)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(r.STP-c.stp) > 5e-6 || math.Abs(r.Unfairness-c.unf) > 5e-6 {
			t.Errorf("%s: STP %.5f unf %.5f, want %v %v", c.pol, r.STP, r.Unfairness, c.stp, c.unf)
		}
		if s.Nodes != c.nodesWant {
			t.Errorf("%s explored %d, want %d (C(10,5) compositions for opt-stp)", c.pol, s.Nodes, c.nodesWant)
		}
	}
}

// Hand-made optimum: a gains 0.05 of slowdown per way up to 11 ways, b nothing. The
// STP-optimal strict partitioning gives a 10 ways; the fairest gives a all it can too
// (b's slowdown is 1 whatever it gets, so unfairness = S_a).
func TestOptStrictKnownAnswer(t *testing.T) {
	a := synth(t, "a", knee(1.5, 11), flat(5), 0.1)
	b := synth(t, "b", flat(1), flat(1), 0.1)
	in := Input{Machine: skx(t), Apps: []*profile.Table{a, b}}
	for _, p := range []string{"opt-stp", "opt-unf"} {
		if got := waysOf(run(t, p, in), 2); !reflect.DeepEqual(got, []int{10, 1}) {
			t.Errorf("%s ways %v, want 10 1", p, got)
		}
	}
	// opt-unf balances two equally sensitive applications: 6/5 or 5/6 — the fairest split
	// of a linear curve is the most even one, and ties go to the higher STP.
	in.Apps = []*profile.Table{a, a}
	if got := waysOf(run(t, "opt-unf", in), 2); got[0]+got[1] != 11 || got[0] < 5 || got[0] > 6 {
		t.Errorf("opt-unf on twins: %v", got)
	}
}

func TestStrictPoliciesRefuseTooManyApps(t *testing.T) {
	a := synth(t, "a", flat(1), flat(1), 0.1)
	apps := make([]*profile.Table, 12)
	for i := range apps {
		apps[i] = a
	}
	in := Input{Machine: skx(t), Apps: apps}
	for _, p := range []string{"equal", "ucp", "ucp-slowdown", "opt-stp", "opt-unf"} {
		if _, err := Run(p, in, DefaultOptions()); err == nil || !strings.Contains(err.Error(), "12 applications do not fit in the 11 ways") {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range []string{"shared", "kpart", "dunn", "cpa", "lfoc", "lfoc+"} {
		if _, err := Run(p, in, DefaultOptions()); err != nil {
			t.Errorf("%s with 12 apps: %v", p, err)
		}
	}
	if _, err := Run("best", in, DefaultOptions()); err == nil || !strings.Contains(err.Error(), "unknown policy") {
		t.Errorf("unknown policy: %v", err)
	}
}

// LFOC / LFOC+ streaming handling and light-sharing gap filling (seed001.md §1.5): 6
// streaming apps need ⌈6/5⌉ = 2 partitions; LFOC makes two 1-way clusters of 3, LFOC+ one
// 2-way cluster of 6. Light apps fill the streaming cluster first:
// LFOC+: (5·2 − 6 + 1)·2 = 10 slots; LFOC: (5·1 − 3 + 1)·2 = 6 per cluster.
func TestLFOCStreamingAndLight(t *testing.T) {
	st := AppCurves{Slowdown: flat(1), LLCMPKC: flat(30)}
	se := AppCurves{Slowdown: knee(1.4, 6), LLCMPKC: flat(5)}
	li := AppCurves{Slowdown: flat(1), LLCMPKC: flat(0.5)}
	var cls []Class
	var cv []AppCurves
	add := func(c Class, a AppCurves, k int) {
		for i := 0; i < k; i++ {
			cls, cv = append(cls, c), append(cv, a)
		}
	}
	add(Streaming, st, 6)
	add(Sensitive, se, 2)
	add(Light, li, 13)
	plus, err := LFOCPlus(cls, cv, 11, DefaultLFOCParams())
	if err != nil {
		t.Fatal(err)
	}
	if plus[0].Ways != 2 || len(plus[0].Apps) != 6+10 {
		t.Errorf("lfoc+ streaming cluster %+v, want 2 ways, 6 streaming + 10 light", plus[0])
	}
	rest := 0
	for _, c := range plus[1:] {
		rest += len(c.Apps)
	}
	if rest != 2+3 {
		t.Errorf("lfoc+ sensitive clusters hold %d apps, want 2 sensitive + 3 light", rest)
	}
	lf, err := LFOCClusters(false, cls, cv, 11, DefaultLFOCParams())
	if err != nil {
		t.Fatal(err)
	}
	if lf[0].Ways != 1 || lf[1].Ways != 1 || len(lf[0].Apps) != 3+6 || len(lf[1].Apps) != 3+6 {
		t.Errorf("lfoc streaming clusters %+v %+v, want 1 way, 3 streaming + 6 light each", lf[0], lf[1])
	}
	// The two sensitive apps are alike: UCP-Slowdown gives them 9 ways between them.
	if len(lf) != 4 || lf[2].Ways+lf[3].Ways != 9 {
		t.Errorf("lfoc sensitive clusters %+v", lf[2:])
	}
	// Without sensitive apps there is no partitioning.
	none, _ := LFOCPlus([]Class{Streaming, Light}, []AppCurves{st, li}, 11, DefaultLFOCParams())
	if len(none) != 1 || none[0].Ways != 11 {
		t.Errorf("no sensitive app: %+v", none)
	}
}

// Pair clustering: two very sensitive apps and two that only need one way. T1 cannot help
// (every donor holds one way or would suffer more), the light-needing pair shares one way
// (T2: negative cost since neither loses anything) and the freed way goes to the most
// slowed-down application.
func TestPairClusteringMergesCheapPair(t *testing.T) {
	hi := AppCurves{Slowdown: knee(2.0, 11), LLCMPKC: flat(20)}
	lo := AppCurves{Slowdown: flat(1), LLCMPKC: flat(0.1)}
	cl := PairClustering([]int{0, 1, 2, 3}, []AppCurves{hi, hi, lo, lo}, 11, 0.07)
	var pair *Cluster
	for i := range cl {
		if len(cl[i].Apps) == 2 {
			pair = &cl[i]
		}
	}
	if pair == nil || !reflect.DeepEqual(pair.Apps, []int{2, 3}) || pair.Ways != 1 {
		t.Fatalf("clusters %+v: want {2,3} sharing 1 way", cl)
	}
	tot := 0
	for _, c := range cl {
		tot += c.Ways
	}
	if tot != 11 {
		t.Errorf("clusters use %d ways", tot)
	}
}

// T1 transfer (Algorithm 3): after lookahead, a way moves to the most slowed-down app when
// the donor loses less than the receiver gains.
func TestInitialPartitioningT1(t *testing.T) {
	// a: 1.3 → 1.0 linearly over 11 ways; b falls steeply to 1 at 3 ways, so lookahead
	// gives b 2 extra ways first (MU 0.1 > 0.03). i = a; donor b at 3 ways would rise to
	// 1.1 > S_a: not eligible, so no transfer.
	a := knee(1.3, 11)
	b := knee(1.2, 3)
	w := InitialPartitioning([][]float64{a, b}, 11, 0.07)
	if w[0]+w[1] != 11 {
		t.Fatalf("ways %v", w)
	}
	w2 := Lookahead([][]float64{a, b}, 11)
	if !reflect.DeepEqual(w, w2) {
		t.Errorf("no eligible donor: T1 changed %v into %v", w2, w)
	}
	// a falls 0.01 per way from 1.3, b 0.02 per way from 1.1 to 1.0 at 6 ways. Lookahead
	// serves b first (MU 0.02): b 6, a 5. a is the most slowed down (1.26); moving one way
	// from b costs −0.01 + 0.02 = 0.01 ≤ 0.07 and b would end at 1.02 ≤ 1.26: a 6, b 5.
	la, lb := make([]float64, 11), make([]float64, 11)
	for w := 1; w <= 11; w++ {
		la[w-1] = 1.3 - 0.01*float64(w-1)
		lb[w-1] = math.Max(1, 1.1-0.02*float64(w-1))
	}
	if base := Lookahead([][]float64{la, lb}, 11); !reflect.DeepEqual(base, []int{5, 6}) {
		t.Fatalf("lookahead %v, want 5 6", base)
	}
	if got := InitialPartitioning([][]float64{la, lb}, 11, 0.07); !reflect.DeepEqual(got, []int{6, 5}) {
		t.Errorf("T1: %v, want 6 5", got)
	}
	// With a threshold below the cost (0.01) the transfer is not made.
	if got := InitialPartitioning([][]float64{la, lb}, 11, 0.005); !reflect.DeepEqual(got, []int{5, 6}) {
		t.Errorf("T1 above threshold: %v, want 5 6", got)
	}
}

// Dunn: two well separated groups of L2-miss stall fractions give two clusters; the high
// centroid (normalised ≈ 1) gets round(4.0966·e^1.1954 − 2.4816) = 11 ways, the low one
// (≈ 0) round(1.615) = 2, so the second mask overlaps the first (placed from the bottom).
func TestDunnKnownAnswer(t *testing.T) {
	var apps []*profile.Table
	for _, l2 := range []float64{0.50, 0.01, 0.51, 0.00, 0.02} {
		apps = append(apps, synth(t, "x", flat(1), flat(1), l2))
	}
	s := run(t, "dunn", Input{Machine: skx(t), Apps: apps})
	if len(s.Clusters) != 2 {
		t.Fatalf("clusters %+v", s.Clusters)
	}
	if c := s.Clusters[0]; !reflect.DeepEqual(c.Apps, []int{0, 2}) || c.Mask != 0x7ff {
		t.Errorf("high cluster %+v, want apps 0,2 with 0x7ff", c)
	}
	if c := s.Clusters[1]; !reflect.DeepEqual(c.Apps, []int{1, 3, 4}) || c.Mask != 0x3 {
		t.Errorf("low cluster %+v, want apps 1,3,4 with 0x3", c)
	}
}

// CPA's 11-way table: one highly sensitive (S ≥ 1.15 at w ≥ 2), one medium, two
// streaming, one light: key (1,1) → non-critical 0x01f, sensitive 0x7f0, medium 0x700;
// streaming apps take 0x1 and 0x2.
func TestCPAKnownAnswer(t *testing.T) {
	apps := []*profile.Table{
		synth(t, "light", flat(1), flat(0.5), 0.1),
		synth(t, "str1", flat(1), flat(30), 0.1),
		synth(t, "sens", knee(1.6, 8), flat(5), 0.1),
		synth(t, "med", knee(1.12, 8), flat(5), 0.1),
		synth(t, "str2", flat(1), flat(30), 0.1),
	}
	s := run(t, "cpa", Input{Machine: skx(t), Apps: apps})
	if got := s.AppMasks(5); !reflect.DeepEqual(got, []uint64{0x01f, 0x1, 0x7f0, 0x700, 0x2}) {
		t.Errorf("cpa masks %#x", got)
	}
}

// KPart merges the applications whose combined miss curve equals their partitioned one
// first: two cache-insensitive apps with no misses merge at distance 0, and the result
// never has more clusters than ways.
func TestKPart(t *testing.T) {
	z := synth(t, "zero", flat(1), flat(0), 0.1)
	s1 := synth(t, "s1", knee(1.5, 6), knee(20, 6), 0.1)
	s2 := synth(t, "s2", knee(1.3, 4), knee(10, 4), 0.1)
	s := run(t, "kpart", Input{Machine: skx(t), Apps: []*profile.Table{s1, z, s2, z}})
	cl := s.AppClusters(4)
	if cl[1] != cl[3] {
		t.Errorf("zero-miss apps not together: %v", cl)
	}
	// The last level (everyone in one 11-way cluster) is the shared solution, so the level
	// KPart keeps is at least as good.
	in := Input{Machine: skx(t), Apps: []*profile.Table{s1, z, s2, z}}
	rk, _ := Evaluate(in, s)
	rs, _ := Evaluate(in, run(t, "shared", in))
	if rk.STP < rs.STP-1e-12 {
		t.Errorf("kpart STP %v below shared %v", rk.STP, rs.STP)
	}
	var many []*profile.Table
	for i := 0; i < 14; i++ {
		many = append(many, s1, z)
	}
	s = run(t, "kpart", Input{Machine: skx(t), Apps: many[:14]})
	if len(s.Clusters) > 11 {
		t.Errorf("%d clusters on 11 ways", len(s.Clusters))
	}
}

func TestPackMasks(t *testing.T) {
	m := skx(t)
	// readme-example.md: ways 2,2,1,1,4,1 → 0x600, 0x180, 0x40, 0x20, 0x1e, 0x1
	got, err := PackMasks(m, []int{2, 2, 1, 1, 4, 1})
	want := []uint64{0x600, 0x180, 0x40, 0x20, 0x1e, 0x1}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PackMasks = %#x, %v; want %#x", got, err, want)
	}
	if _, err := PackMasks(m, []int{6, 6}); err == nil {
		t.Error("12 ways packed into 11")
	}
}
