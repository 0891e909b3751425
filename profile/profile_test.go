package profile

import (
	"math"
	"strings"
	"testing"
)

func TestDefaultSet(t *testing.T) {
	s, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Names()) != 55 || s.Ways() != 11 {
		t.Fatalf("%d benchmarks × %d ways, want 55 × 11 (PROVENANCE.md)", len(s.Names()), s.Ways())
	}
	x, err := s.Get("xalancbmk06")
	if err != nil {
		t.Fatal(err)
	}
	// seed001.md §6.2: xalancbmk06 SD@1 1.932, SD@4 1.282, IPC@11 1.366.
	if math.Abs(x.Value(Slowdown, 1)-1.932) > 5e-4 || math.Abs(x.Value(Slowdown, 4)-1.282) > 5e-4 ||
		math.Abs(x.Value(IPC, 11)-1.366) > 5e-4 {
		t.Errorf("xalancbmk06: S(1)=%v S(4)=%v IPC(11)=%v", x.Value(Slowdown, 1), x.Value(Slowdown, 4), x.Value(IPC, 11))
	}
	// The slowdown reference is the highest IPC anywhere, so min S is exactly 1 for every table.
	for _, n := range s.Names() {
		tb, _ := s.Get(n)
		mn := math.Inf(1)
		for _, v := range tb.Col(Slowdown) {
			mn = math.Min(mn, v)
		}
		if mn != 1 {
			t.Errorf("%s: min slowdown %v, want 1", n, mn)
		}
	}
}

func TestInterp(t *testing.T) {
	v := []float64{10, 6, 5}
	for _, c := range []struct{ f, want float64 }{
		{1, 10}, {2, 6}, {3, 5}, {1.5, 8}, {2.25, 5.75}, {4, 5},
		{0.5, 0.5*14 + 0.5*10}, // X0 = 2·10 − 6 = 14
		{0, 14},
	} {
		if got := Interp(v, c.f); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Interp(%v) = %v, want %v", c.f, got, c.want)
		}
	}
	// X0 ≤ 0 is replaced by 1e-6: rising curve 1, 3 → X0 = −1.
	if got := Interp([]float64{1, 3}, 0); got != 1e-6 {
		t.Errorf("floor at 0 ways: %v", got)
	}
}

const hdr = "BENCH,NR_WAYS,ipc,llcrpki,llcmpki,llcrpkc,llcmpkc,llc_usage_kb,bandwidth_mbps,llcm_bandwidth,stalls_l2_miss,stalls_l3_miss,stalls_total,stalls_store_buf\n"

func row(b string, w string, ipc string) string {
	return b + "," + w + "," + ipc + ",1,1,1,1,100,100,100,0.1,0.1,0.2,0.01\n"
}

func TestParseErrors(t *testing.T) {
	good := hdr + row("a", "1", "1.0") + row("a", "2", "1.2") + row("b", "2", "2") + row("b", "1", "1.5")
	s, err := Parse(strings.NewReader(good), "m.csv")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := s.Get("b"); b.Value(Slowdown, 1) != 2/1.5 {
		t.Errorf("rows out of order not sorted by ways: %v", b.Col(IPC))
	}
	for _, c := range []struct{ name, in, want string }{
		{"missing column", strings.Replace(hdr, ",stalls_total", "", 1) + "a,1,1,1,1,1,1,1,1,1,1,1,1\n", "m.csv:1: missing column(s) stalls_total"},
		{"non-numeric", hdr + row("a", "1", "1.0") + row("a", "2", "fast"), `m.csv:3: column ipc of a at 2 ways: "fast"`},
		{"nan", hdr + row("a", "1", "NaN"), `m.csv:2: column ipc of a at 1 ways: "NaN" is not a finite number`},
		{"gap", hdr + row("a", "1", "1") + row("a", "3", "1"), "gap in way counts, no row for 2 ways"},
		{"duplicate", hdr + row("a", "1", "1") + row("a", "1", "1.1"), "m.csv:3: duplicate row for a at 1 ways (first at line 2)"},
		{"ways differ", hdr + row("a", "1", "1") + row("b", "1", "1") + row("b", "2", "1"), "benchmark b has way counts 1..2, others 1..1"},
		{"bad ways", hdr + row("a", "x", "1"), `m.csv:2: NR_WAYS "x"`},
		{"zero ipc", hdr + row("a", "1", "0"), "must be > 0"},
		{"short row", hdr + "a,1,1\n", "m.csv:2: wrong number of fields"},
		{"empty", "", "empty file"},
		{"no rows", hdr, "no data rows"},
	} {
		_, err := Parse(strings.NewReader(c.in), "m.csv")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestWorkloads(t *testing.T) {
	s, _ := Default()
	in := "sphinx306,lbm06,lbm06\n\n# comment\nmcf06, omnetpp06"
	w, err := ParseWorkloads(strings.NewReader(in), "w.csv", s)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 2 || w[1].Line != 4 || len(w[0].Names) != 3 || w[1].Names[1] != "omnetpp06" {
		t.Errorf("parsed %+v", w)
	}
	for _, c := range []struct{ in, want string }{
		{"lbm06,mcf06\nlbm06,,mcf06\n", "w.csv:2: workload \"lbm06,,mcf06\": empty name at position 2"},
		{"lbm06,mcf06,\n", "w.csv:1: workload \"lbm06,mcf06,\": empty name at position 3"},
		{"lbm06\nfoo99,lbm06\n", `w.csv:2: unknown benchmark "foo99"`},
		{"lbm06 mcf06\n", "contains a space"},
		{"\n# nothing\n", "no workloads"},
	} {
		_, err := ParseWorkloads(strings.NewReader(c.in), "w.csv", s)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
	// The shipped workloads file parses against the shipped profiles.
	if _, err := s.Lookup([]string{"lbm06", "lbm06"}); err != nil {
		t.Errorf("duplicates are distinct instances: %v", err)
	}
}

func TestNewTable(t *testing.T) {
	cols := map[Column][]float64{}
	for c := IPC; c < Slowdown; c++ {
		cols[c] = []float64{1, 2}
	}
	tb, err := NewTable("x", cols)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Value(Slowdown, 1) != 2 || tb.At(Slowdown, 1.5) != 1.5 {
		t.Errorf("slowdown %v", tb.Col(Slowdown))
	}
	delete(cols, StallsTotal)
	if _, err := NewTable("x", cols); err == nil {
		t.Error("missing column accepted")
	}
}
