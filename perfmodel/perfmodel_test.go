package perfmodel

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"colo/profile"
)

func mustDefault(t testing.TB) *profile.Set {
	t.Helper()
	s, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var readmeWL = []string{"sphinx306", "lbm06", "libquantum06", "applu00", "soplex06", "milc06"}

func strict(ways ...int) []Cluster {
	c := make([]Cluster, len(ways))
	for i, w := range ways {
		c[i] = Cluster{Apps: []int{i}, Ways: w}
	}
	return c
}

// The PBBCache README example (data/pbbcache-skylake/reference/readme-example.md), stalls
// model, B = 35,000 MB/s: both rows to the printed 5 decimals (4 for the slowdowns).
func TestReadmeExample(t *testing.T) {
	set := mustDefault(t)
	apps, err := set.Lookup(readmeWL)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name           string
		ways           []int
		nb, sd         []float64
		stp, antt, unf float64
	}{
		{"ucp", []int{2, 2, 1, 1, 4, 1},
			[]float64{1.11045, 1.00697, 1.16813, 1.04627, 1.18749, 1.02608},
			[]float64{1.1605, 1.0409, 1.24338, 1.12323, 1.22376, 1.13648},
			5.21402, 1.15471, 1.19452},
		{"opt-stp-bf", []int{3, 1, 1, 1, 4, 1},
			[]float64{1.07895, 1.0097, 1.16813, 1.04627, 1.18749, 1.02608},
			[]float64{1.09653, 1.04493, 1.23916, 1.11914, 1.22186, 1.13067},
			5.27237, 1.14205, 1.18588},
	}
	for _, c := range cases {
		r, err := Evaluate(apps, strict(c.ways...), Options{BW: Stalls, MaxBW: 35000})
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range r.Apps {
			if math.Abs(a.SlowdownCache-c.nb[i]) > 5e-6 {
				t.Errorf("%s %s: SlowdownNB %.6f, want %v", c.name, readmeWL[i], a.SlowdownCache, c.nb[i])
			}
			if math.Abs(a.Slowdown-c.sd[i]) > 5e-6 {
				t.Errorf("%s %s: Slowdown %.6f, want %v", c.name, readmeWL[i], a.Slowdown, c.sd[i])
			}
		}
		for _, m := range []struct {
			n         string
			got, want float64
		}{{"STP", r.STP, c.stp}, {"ANTT", r.ANTT, c.antt}, {"unfairness", r.Unfairness, c.unf}} {
			if math.Abs(m.got-m.want) > 5e-6 {
				t.Errorf("%s %s = %.6f, want %v", c.name, m.n, m.got, m.want)
			}
		}
		if len(r.Warnings) != 0 {
			t.Errorf("%s: unexpected warnings %v", c.name, r.Warnings)
		}
	}
}

// With the simple model the README workload stays below 35,000 MB/s, so the final
// slowdowns are the cache-only ones (readme-example.md: "With the simple model ...").
func TestReadmeSimpleModel(t *testing.T) {
	apps, _ := mustDefault(t).Lookup(readmeWL)
	for _, c := range []struct {
		ways           []int
		antt, stp, unf float64
	}{
		{[]int{3, 1, 1, 1, 4, 1}, 1.08610, 5.54575, 1.17607},
		{[]int{2, 2, 1, 1, 4, 1}, 1.09090, 5.52215, 1.17927},
	} {
		r, err := Evaluate(apps, strict(c.ways...), Options{BW: Simple, MaxBW: 35000})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(r.ANTT-c.antt) > 5e-6 || math.Abs(r.STP-c.stp) > 5e-6 || math.Abs(r.Unfairness-c.unf) > 5e-6 {
			t.Errorf("%v: ANTT %.5f STP %.5f unf %.5f, want %v %v %v", c.ways, r.ANTT, r.STP, r.Unfairness, c.antt, c.stp, c.unf)
		}
		for _, a := range r.Apps {
			if a.BWFactor != 1 {
				t.Errorf("simple model below the limit: factor %v, want 1", a.BWFactor)
			}
		}
	}
}

func TestSimpleFactorsConserveLimit(t *testing.T) {
	b := []float64{9000, 4000, 12000, 500, 0}
	f, err := SimpleFactors(nil, b, 20000)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for i := range b {
		if b[i] > 0 {
			sum += b[i] / f[i]
		}
		if f[i] < 1 {
			t.Errorf("factor %d = %v < 1", i, f[i])
		}
	}
	if math.Abs(sum-20000) > 1e-6 {
		t.Errorf("reduced bandwidths sum to %v, want the limit 20000", sum)
	}
	if !(f[2] > f[0] && f[0] > f[1] && f[1] > f[3]) || f[4] != 1 {
		t.Errorf("heavier users must lose more: %v", f)
	}
	if _, err := SimpleFactors(nil, []float64{30000, 1000}, 500); err == nil {
		t.Error("demands far above the limit: want an error, got none")
	}
}

// The Morad root satisfies every equation of MODEL.md §4.2 in its original form, with
// u_i < x_i (factor > 1), and the factor grows with load.
func TestMoradPhysicalRoot(t *testing.T) {
	for _, B := range []float64{35000, 20000, 12000} {
		b := []float64{2297, 7225, 7141, 4516, 2526, 3847}
		f, err := MoradFactors(nil, b, B)
		if err != nil {
			t.Fatal(err)
		}
		U := 0.0
		u := make([]float64, len(b))
		for i := range b {
			u[i] = b[i] / B / f[i]
			U += u[i]
		}
		if U <= 0 || U >= 1 {
			t.Fatalf("B=%v: U=%v outside (0,1)", B, U)
		}
		for i := range b {
			x := b[i] / B
			p := u[i] * (u[i] + 1 - U)
			if got := p / (p + 1 - U); math.Abs(got-x) > 1e-9 {
				t.Errorf("B=%v app %d: equation gives x=%v, want %v", B, i, got, x)
			}
			if f[i] <= 1 {
				t.Errorf("B=%v app %d: factor %v, want > 1", B, i, f[i])
			}
		}
	}
	lo, _ := MoradFactors(nil, []float64{5000, 5000}, 40000)
	hi, _ := MoradFactors(nil, []float64{5000, 5000}, 12000)
	if !(hi[0] > lo[0]) {
		t.Errorf("factor must grow with load: %v at 40000, %v at 12000", lo[0], hi[0])
	}
	one, _ := MoradFactors(nil, []float64{9000, 0}, 10000)
	if one[0] != 1 || one[1] != 1 {
		t.Errorf("a single active application is not slowed: %v", one)
	}
	if _, err := MoradFactors(nil, []float64{40000, 10}, 35000); err == nil {
		t.Error("a demand above the limit must be refused")
	}
}

// At B = 20,000 the README workload oversubscribes the bus (MODEL.md §4.2): colo keeps the
// physical root (every factor ≥ 1) and warns that PBBCache's numbers may differ.
func TestOversubscribedWarns(t *testing.T) {
	apps, _ := mustDefault(t).Lookup(readmeWL)
	r, err := Evaluate(apps, strict(2, 2, 1, 1, 4, 1), Options{BW: Stalls, MaxBW: 20000})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "non-physical") {
		t.Errorf("warnings %v, want one about the non-physical root", r.Warnings)
	}
	for i, a := range r.Apps {
		if a.BWFactor < 1 || a.Slowdown < a.SlowdownCache {
			t.Errorf("%s: factor %v, slowdown %v < cache-only %v", readmeWL[i], a.BWFactor, a.Slowdown, a.SlowdownCache)
		}
	}
}

func TestStallsFactor(t *testing.T) {
	// Only the memory-bound part is stretched: T=0.5, M=0.2, f=1.5 → (0.5+0.1)/0.5.
	if got := StallsFactor(1.5, 0.5, 0.2); math.Abs(got-1.2) > 1e-12 {
		t.Errorf("StallsFactor = %v, want 1.2", got)
	}
	if got := StallsFactor(3, 0, 0); got != 1 {
		t.Errorf("no stalls: %v, want 1", got)
	}
	if got := MemStalls(0.3, 0.25, 0.1); got != 0.3 {
		t.Errorf("MemStalls is capped by the total: %v", got)
	}
}

// MODEL.md §3.1: two applications sharing 1 way split it in the ratio of their 1-way
// LLCMPKC; shares always sum to k; a lone application gets k; all-zero curves split equally.
func TestShares(t *testing.T) {
	a := []float64{30, 20, 10}
	b := []float64{10, 10, 10}
	s := Shares(make([]float64, 2), [][]float64{a, b}, 1)
	if math.Abs(s[0]-0.75) > 1e-12 || math.Abs(s[1]-0.25) > 1e-12 {
		t.Errorf("1-way split %v, want [0.75 0.25]", s)
	}
	// Second way: a is charged L_a(1.75) = 0.25·30 + 0.75·20 = 22.5, b L_b(1.25) = 10.
	s = Shares(make([]float64, 2), [][]float64{a, b}, 2)
	if want := 0.75 + 22.5/32.5; math.Abs(s[0]-want) > 1e-12 || math.Abs(s[0]+s[1]-2) > 1e-12 {
		t.Errorf("2-way split %v, want a=%v and sum 2", s, want)
	}
	if s := Shares(make([]float64, 1), [][]float64{a}, 3); s[0] != 3 {
		t.Errorf("lone app share %v, want 3", s[0])
	}
	z := []float64{0, 0, 0}
	if s := Shares(make([]float64, 3), [][]float64{z, z, z}, 2); math.Abs(s[0]-2.0/3) > 1e-12 {
		t.Errorf("zero curves: %v, want equal split", s)
	}
}

// A shared cluster evaluated through Evaluate uses the split and the interpolated columns.
func TestEvaluateSharedCluster(t *testing.T) {
	apps, _ := mustDefault(t).Lookup([]string{"lbm06", "xalancbmk06"})
	r, err := Evaluate(apps, []Cluster{{Apps: []int{0, 1}, Ways: 3}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.Apps[0].Share+r.Apps[1].Share-3) > 1e-12 {
		t.Errorf("shares %v do not sum to 3", r.Apps)
	}
	// lbm06 misses more than xalancbmk06 at every size, so it takes the larger share.
	if r.Apps[0].Share <= 1.5 {
		t.Errorf("lbm06 share %v, want > 1.5", r.Apps[0].Share)
	}
	x := apps[1]
	if want := x.At(profile.Slowdown, r.Apps[1].Share); r.Apps[1].SlowdownCache != want {
		t.Errorf("xalancbmk06 slowdown %v, want interpolated %v", r.Apps[1].SlowdownCache, want)
	}
	for _, bad := range [][]Cluster{
		{{Apps: []int{0}, Ways: 3}},
		{{Apps: []int{0, 1}, Ways: 12}},
		{{Apps: []int{0}, Ways: 2}, {Apps: []int{0, 1}, Ways: 2}},
		{{Apps: []int{0}, Ways: 0}, {Apps: []int{1}, Ways: 2}},
	} {
		if _, err := Evaluate(apps, bad, Options{}); err == nil {
			t.Errorf("clustering %v: want an error", bad)
		}
	}
}

func TestParseBWModel(t *testing.T) {
	for _, s := range []string{"simple", "morad", "stalls", "none", ""} {
		if _, err := ParseBWModel(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := ParseBWModel("newton"); err == nil {
		t.Error("unknown model accepted")
	}
}

// EvaluateMasks agrees with the cluster evaluation where both apply, and splits partial
// overlaps way by way.
func TestEvaluateMasksAgrees(t *testing.T) {
	apps, _ := mustDefault(t).Lookup([]string{"lbm06", "xalancbmk06", "mcf06", "povray06"})
	cl := []Cluster{{Apps: []int{0, 2}, Ways: 4}, {Apps: []int{1}, Ways: 5}, {Apps: []int{3}, Ways: 2}}
	want, err := Evaluate(apps, cl, Options{BW: Stalls, MaxBW: 35000})
	if err != nil {
		t.Fatal(err)
	}
	got, err := EvaluateMasks(apps, []uint64{0x780, 0x07c, 0x780, 0x3}, Options{BW: Stalls, MaxBW: 35000})
	if err != nil {
		t.Fatal(err)
	}
	for i := range apps {
		if math.Abs(got.Apps[i].Slowdown-want.Apps[i].Slowdown) > 1e-12 || math.Abs(got.Apps[i].Share-want.Apps[i].Share) > 1e-12 {
			t.Errorf("%s: masks %+v, clusters %+v", apps[i].Name, got.Apps[i], want.Apps[i])
		}
	}
	// Partial overlap: lbm06 0x7ff (all ways), xalancbmk06 0x7f0; lbm06 owns ways 0-3 alone.
	ov, err := EvaluateMasks(apps[:2], []uint64{0x7ff, 0x7f0}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := ov.Apps[0].Share + ov.Apps[1].Share; math.Abs(s-11) > 1e-9 || ov.Apps[0].Share < 4 || ov.Apps[1].Share > 7 {
		t.Errorf("overlap shares %v, %v", ov.Apps[0].Share, ov.Apps[1].Share)
	}
}

// The properties the exact search's bounds rest on: the Morad root grows with every
// demand, and one application's factor grows with U at a fixed demand.
func TestMoradMonotone(t *testing.T) {
	base := []float64{3000, 7000, 1200, 4500}
	U0, _, err := MoradRoot(base, 20000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range base {
		up := append([]float64(nil), base...)
		up[i] *= 1.3
		U1, _, _ := MoradRoot(up, 20000)
		if !(U1 > U0) {
			t.Errorf("raising demand %d: U %v → %v, want larger", i, U0, U1)
		}
	}
	for _, x := range []float64{0.01, 0.1, 0.3, 0.6} {
		prev := 0.0
		for U := 0.05; U < 1; U += 0.05 {
			f := MoradFactorAt(x, U)
			if f < prev {
				t.Errorf("x=%v: factor falls from %v to %v as U rises to %v", x, prev, f, U)
			}
			prev = f
		}
	}
}

// The additive pressure tests of the exact search (policy/search_bw.go): the Morad share
// u(x, U) grows with x and falls with U, so Σu(x_i, U₀) ≥ U₀ ⇔ U* ≥ U₀; and the simple
// model's factors are 1/(1 − b_i·h) with h = SimplePressure, whose level test
// Σ(b_i − h₀b_i²) ≥ B holds exactly when h ≥ h₀ (h₀ > 0). Random demands, seeded.
func TestPressureTests(t *testing.T) {
	rng := rand.New(rand.NewSource(18))
	for x := 0.01; x < 1; x += 0.07 {
		for U := 0.02; U < 0.98; U += 0.05 {
			u := MoradShareAt(x, U)
			if !(u > 0) || MoradShareAt(x+0.005, U) < u || MoradShareAt(x, U+0.01) > u {
				t.Fatalf("u(%v, %v) = %v not increasing in x / decreasing in U", x, U, u)
			}
		}
	}
	for trial := 0; trial < 500; trial++ {
		n := 2 + rng.Intn(12)
		d := make([]float64, n)
		for i := range d {
			d[i] = rng.Float64() * 9000
		}
		B := 5000 + rng.Float64()*40000
		U, _, err := MoradRoot(d, B)
		if err != nil {
			continue
		}
		for _, U0 := range []float64{U * 0.9, U * 0.999, U * 1.001, U * 1.1} {
			s := 0.0
			for _, b := range d {
				s += MoradShareAt(b/B, U0)
			}
			if (s >= U0) != (U >= U0) {
				t.Fatalf("demands %v B %v: Σu(U0=%v) = %v but root %v", d, B, U0, s, U)
			}
		}
		f, err := SimpleFactors(nil, d, B)
		if err != nil {
			continue
		}
		h := SimplePressure(d, B)
		for i, b := range d {
			if want := 1 / (1 - b*h); math.Abs(f[i]-want) > 1e-9*want {
				t.Fatalf("simple factor %v, 1/(1 − b·h) = %v", f[i], want)
			}
		}
		for _, h0 := range []float64{h * 0.9, h * 1.1} {
			if h0 <= 0 {
				continue
			}
			s := 0.0
			for _, b := range d {
				s += b - h0*b*b
			}
			if (s >= B) != (h >= h0) {
				t.Fatalf("simple level test at h0 = %v: Σ = %v vs B %v, h = %v", h0, s, B, h)
			}
		}
	}
}

// The simulator's bus (ContendedFactors) gives exactly eval's factors (BandwidthFactors)
// wherever the model applies, oversubscribed or not; outside the model's domain it gives
// the saturated bus, which never slows an application without demand.
func TestContendedFactorsAgreeWithEval(t *testing.T) {
	T, M := []float64{0.6, 0.5, 0.4}, []float64{0.3, 0.1, 0.2}
	for _, model := range []BWModel{None, Simple, Morad, Stalls} {
		for _, d := range [][]float64{{5000, 8000, 3000}, {15000, 12000, 9000}, {20000, 0, 30000}} {
			want, err := BandwidthFactors(model, d, T, M, 35000)
			if err != nil {
				t.Fatalf("%s %v: %v", model, d, err)
			}
			got, in := ContendedFactors(make([]float64, 1), model, d, T, M, 35000)
			if !in || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s %v: simulator %v (in model %v), eval %v", model, d, got, in, want)
			}
		}
	}
	// a solo demand above B: eval refuses, the bus saturates (Σb/B = 2 for the demanding)
	d := []float64{40000, 0, 30000}
	if _, err := BandwidthFactors(Morad, d, nil, nil, 35000); err == nil {
		t.Fatal("eval accepted a solo demand above the limit")
	}
	f, in := ContendedFactors(nil, Morad, d, nil, nil, 35000)
	if in || f[0] != 2 || f[1] != 1 || f[2] != 2 {
		t.Errorf("saturated bus %v (in model %v), want [2 1 2]", f, in)
	}
	// the stalls model stretches only the memory-bound stalls: (0.6 + 0.3·(2−1))/0.6 = 1.5
	f, _ = ContendedFactors(nil, Stalls, d, T, M, 35000)
	if math.Abs(f[0]-1.5) > 1e-12 || f[1] != 1 {
		t.Errorf("saturated stalls factors %v, want 1.5 and 1", f)
	}
}

// moradBisectPlain is the bisection moradBisect shortcuts: g evaluated at every step.
func moradBisectPlain(d []float64, iters int) (lo, hi float64) {
	lo, hi = 0.0, 1.0
	for it := 0; it < iters && hi-lo > 1e-15; it++ {
		mid := (lo + hi) / 2
		if moradG(d, mid) > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, hi
}

// The certified bisection returns exactly the bracket of the plain one, bit for bit, on
// random demand sets from 2 to 64 applications (light to saturated buses, tiny and
// near-limit demands) and every iteration budget the callers use.
func TestMoradBisectIsPlainBisection(t *testing.T) {
	rng := rand.New(rand.NewSource(34))
	for k := 0; k < 20000; k++ {
		n := 2 + rng.Intn(63)
		d := make([]float64, n)
		scale := math.Pow(10, -3+3*rng.Float64()) // per-application x from 1e-3·u to u
		for i := range d {
			x := math.Min(0.999999, scale*rng.Float64()+1e-9)
			if rng.Intn(20) == 0 {
				x = 1 - math.Pow(10, -1-5*rng.Float64()) // near the limit
			}
			d[i] = 1/x - 1
		}
		for _, iters := range []int{200, 60, 30, 8} {
			lo, hi := moradBisect(d, iters)
			plo, phi := moradBisectPlain(d, iters)
			if lo != plo || hi != phi {
				t.Fatalf("n=%d iters=%d: [%v, %v], plain bisection [%v, %v]", n, iters, lo, hi, plo, phi)
			}
		}
	}
}
