package placement

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"testing"

	"colo/data"
	"colo/predict"
)

func dataset(t testing.TB) *predict.Dataset {
	t.Helper()
	d, err := predict.LoadDir(data.FS, data.BubbleUp, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func lib(t testing.TB) *Library {
	t.Helper()
	l, err := FromDataset(dataset(t))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A pair's prediction is the thesis's: the raw curve of A read at C's recorded score.
func TestPairMatchesPredictOnRawCurves(t *testing.T) {
	d, l := dataset(t), lib(t)
	if len(l.Profiles) != len(d.Recorded) {
		t.Fatalf("%d profiles, %d recorded scores", len(l.Profiles), len(d.Recorded))
	}
	for _, a := range []string{"605.mcf_s", "620.omnetpp_s", "644.nab_s"} {
		for _, c := range []string{"619.lbm_s", "654.roms_s", "657.xz_s"} {
			want, err := predict.Predict(d.Curves[a], d.Recorded[c], predict.MethodLinear)
			if err != nil {
				t.Fatal(err)
			}
			ta, tc := l.Tenant("a", "batch", 0, a), l.Tenant("c", "batch", 0, c)
			got := Evaluate([]Tenant{tc}, ta).PodPerf
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("%s next to %s: %v, predict says %v", a, c, got, want)
			}
			p := NodePerfs([]Tenant{ta, tc})
			if math.Abs(p[0]-want) > 1e-12 {
				t.Errorf("NodePerfs %s next to %s: %v, want %v", a, c, p[0], want)
			}
		}
	}
}

// More than two: Govindan's reduction adds the co-runners' scores, saturating at 112 MB.
func TestGovindanReductionAndCost(t *testing.T) {
	d, l := dataset(t), lib(t)
	mcf, lbm, roms := l.Tenant("mcf", "priority", 0, "605.mcf_s"), l.Tenant("lbm", "batch", 0, "619.lbm_s"), l.Tenant("roms", "batch", 0, "654.roms_s")
	sum := d.Recorded["619.lbm_s"] + d.Recorded["654.roms_s"] // 100 MB
	want, _ := predict.Predict(d.Curves["605.mcf_s"], sum, predict.MethodLinear)
	if got := Evaluate([]Tenant{lbm, roms}, mcf).PodPerf; math.Abs(got-want) > 1e-12 {
		t.Fatalf("mcf next to lbm+roms: %v, want %v", got, want)
	}
	// Saturation: three times lbm is 180 MB, read at the last dial.
	sat, _ := predict.Predict(d.Curves["605.mcf_s"], 112, predict.MethodLinear)
	if got := Evaluate([]Tenant{lbm, lbm, lbm}, mcf).PodPerf; math.Abs(got-sat) > 1e-12 {
		t.Fatalf("saturated: %v, want %v", got, sat)
	}
	// The cost is the weighted change of every tenant's slowdown, recomputed by hand.
	e := Evaluate([]Tenant{lbm}, mcf)
	pm, _ := predict.Predict(d.Curves["605.mcf_s"], d.Recorded["619.lbm_s"], predict.MethodLinear)
	pl, _ := predict.Predict(d.Curves["619.lbm_s"], d.Recorded["605.mcf_s"], predict.MethodLinear)
	wantCost := 4*(1/pm-1) + 1*(1/pl-1)
	if math.Abs(e.Cost-wantCost) > 1e-9 {
		t.Fatalf("cost %v, want %v", e.Cost, wantCost)
	}
	// A contentious pod costs more next to a sensitive priority tenant than next to an
	// insensitive one.
	nab := l.Tenant("nab", "priority", 0, "644.nab_s")
	omn := l.Tenant("omnetpp", "priority", 0, "620.omnetpp_s")
	if a, b := Evaluate([]Tenant{nab}, lbm).Cost, Evaluate([]Tenant{omn}, lbm).Cost; !(a < b) {
		t.Fatalf("lbm next to nab costs %v, next to omnetpp %v", a, b)
	}
}

func TestViolationAndUnknown(t *testing.T) {
	l := lib(t)
	lbm := l.Tenant("lbm", "batch", 0, "619.lbm_s")
	perf := Evaluate([]Tenant{lbm}, l.Tenant("x", "batch", 0, "620.omnetpp_s")).PodPerf
	// A priority resident pushed below its target by the pod.
	res := l.Tenant("omn", "priority", perf+0.01, "620.omnetpp_s")
	if v := Evaluate([]Tenant{res}, lbm).Violation; !strings.Contains(v, "resident omn") {
		t.Fatalf("violation %q", v)
	}
	res.Target = perf - 0.01
	if v := Evaluate([]Tenant{res}, lbm).Violation; v != "" {
		t.Fatalf("unexpected violation %q", v)
	}
	// The priority pod itself.
	pod := l.Tenant("p", "priority", perf+0.01, "620.omnetpp_s")
	if v := Evaluate([]Tenant{lbm}, pod).Violation; !strings.HasPrefix(v, "p (priority)") {
		t.Fatalf("violation %q", v)
	}
	// A batch tenant's target is not enforced.
	pod.Class = "batch"
	if v := Evaluate([]Tenant{lbm}, pod).Violation; v != "" {
		t.Fatalf("batch violation %q", v)
	}
	// Unknown profiles are neutral in both directions.
	u := l.Tenant("u", "priority", 0.99, "no-such-app")
	if u.Known {
		t.Fatal("unknown profile marked known")
	}
	if e := Evaluate([]Tenant{lbm}, u); e.Cost != 0 || e.PodPerf != 1 || e.Violation != "" {
		t.Fatalf("unknown pod: %+v", e)
	}
	if e := Evaluate([]Tenant{u}, lbm); e.Cost != Evaluate(nil, lbm).Cost {
		t.Fatalf("unknown resident changes the cost: %+v", e)
	}
}

func TestNodeScores(t *testing.T) {
	names := []string{"n0", "n1", "n2", "n3", "n4"}
	costs := []float64{0.5, 0.1, 0.1, 0.9, 0.1}
	known := []bool{true, true, true, true, false}
	s := NodeScores(names, costs, known, 7)
	if s[4] != NeutralScore || s[3] != 0 {
		t.Fatalf("scores %v", s)
	}
	top := 0
	for i, v := range s {
		if v == MaxScore {
			top++
			if costs[i] != 0.1 || !known[i] {
				t.Fatalf("best is %s with cost %v", names[i], costs[i])
			}
		}
	}
	if top != 1 {
		t.Fatalf("%d nodes at MaxScore: %v", top, s)
	}
	if s[0] != int64(math.Floor(99*(0.9-0.5)/(0.9-0.1))) {
		t.Fatalf("n0 scores %d", s[0])
	}
	// Same input and seed: same scores; the tie winner follows Rank for every seed, and
	// some seed picks each of the tied nodes.
	winners := map[string]bool{}
	for seed := uint64(0); seed < 50; seed++ {
		a, b := NodeScores(names, costs, known, seed), NodeScores(names, costs, known, seed)
		for i := range a {
			if a[i] != b[i] {
				t.Fatal("not deterministic")
			}
		}
		r := Rank(names[:4], costs[:4], seed)
		if a[r[0]] != MaxScore {
			t.Fatalf("seed %d: rank picks %s, scores %v", seed, names[r[0]], a)
		}
		winners[names[r[0]]] = true
	}
	if !winners["n1"] || !winners["n2"] {
		t.Fatalf("tie winners over 50 seeds: %v", winners)
	}
	if s := NodeScores(names, costs, make([]bool, 5), 1); s[0] != NeutralScore || s[1] != NeutralScore {
		t.Fatalf("all unknown: %v", s)
	}
}

func TestParsePodAnnotations(t *testing.T) {
	s, err := ParsePodAnnotations(map[string]string{"colo.io/class": "priority", "colo.io/target-ipce": "0.9", "colo.io/profile": "605.mcf_s"})
	if err != nil || s != (PodSpec{Class: "priority", Target: 0.9, Profile: "605.mcf_s"}) {
		t.Fatalf("%+v %v", s, err)
	}
	if s, err := ParsePodAnnotations(nil); err != nil || s.Class != "batch" {
		t.Fatalf("default: %+v %v", s, err)
	}
	for _, bad := range []map[string]string{
		{"colo.io/class": "gold"},
		{"colo.io/target-ipce": "1.5"},
		{"colo.io/target-ipce": "0"},
		{"colo.io/target-ipce": "fast"},
	} {
		_, err := ParsePodAnnotations(bad)
		if err == nil || !strings.Contains(err.Error(), "annotation colo.io/") {
			t.Errorf("%v: error %v", bad, err)
		}
	}
}

func BenchmarkEvaluate4Residents(b *testing.B) {
	l := lib(b)
	res := []Tenant{l.Tenant("a", "priority", 0.9, "605.mcf_s"), l.Tenant("b", "batch", 0, "619.lbm_s"), l.Tenant("c", "batch", 0, "657.xz_s"), l.Tenant("d", "best-effort", 0, "654.roms_s")}
	p := l.Tenant("p", "batch", 0, "620.omnetpp_s")
	for b.Loop() {
		Evaluate(res, p)
	}
}

// NodeModel.Best agrees with Evaluate socket by socket, and allocates nothing.
func TestNodeModelMatchesEvaluate(t *testing.T) {
	lib, err := LoadLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	names := lib.Names()
	var ts []Tenant
	var socks []int
	var milli []int64
	classes := []string{"priority", "batch", "best-effort"}
	for i := range 9 {
		tt := lib.Tenant(fmt.Sprintf("r%d", i), classes[i%3], 0, names[(5*i)%len(names)])
		if tt.Class == "priority" {
			tt.Target = 0.85
		}
		ts, socks, milli = append(ts, tt), append(socks, i%2), append(milli, 1000)
	}
	m := NewNodeModel(2, 8000, ts, socks, milli)
	for _, n := range names {
		p := lib.Tenant("p", "priority", 0.8, n)
		sock, cost, ok := m.Best(p, 1000)
		wantSock, wantCost := -1, 0.0
		for s := range 2 {
			var res []Tenant
			for i := range ts {
				if socks[i] == s {
					res = append(res, ts[i])
				}
			}
			if e := Evaluate(res, p); e.Violation == "" && (wantSock < 0 || e.Cost < wantCost) {
				wantSock, wantCost = s, e.Cost
			}
		}
		if sock != wantSock || ok != (wantSock >= 0) || math.Abs(cost-wantCost) > 1e-12 {
			t.Errorf("%s: Best %d %v %v, Evaluate per socket %d %v", n, sock, cost, ok, wantSock, wantCost)
		}
		if !ok && m.Why(p, 1000) == "" {
			t.Errorf("%s: no reason", n)
		}
	}
	p := lib.Tenant("p", "batch", 0, names[0])
	if a := testing.AllocsPerRun(100, func() { m.Best(p, 1000) }); a != 0 {
		t.Errorf("Best allocates %v times", a)
	}
}

// Tiebreak is FNV-1a of the seed's decimal digits, a zero byte and the node name, without
// allocating.
func TestTiebreakIsFNV(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		node string
	}{{0, ""}, {42, "kwok-node-0001"}, {1<<64 - 1, "n"}} {
		h := fnv.New64a()
		h.Write([]byte(strconv.FormatUint(c.seed, 10)))
		h.Write([]byte{0})
		h.Write([]byte(c.node))
		if got := Tiebreak(c.seed, c.node); got != h.Sum64() {
			t.Errorf("Tiebreak(%d, %q) = %x, want %x", c.seed, c.node, got, h.Sum64())
		}
	}
	if a := testing.AllocsPerRun(100, func() { Tiebreak(42, "kwok-node-0001") }); a != 0 {
		t.Errorf("%v allocations", a)
	}
}
