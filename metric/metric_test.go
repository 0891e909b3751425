package metric

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// The PBBCache README example (data/pbbcache-skylake/reference/readme-example.md), UCP row:
// final slowdowns printed to 5 significant decimals give STP 5.21402, ANTT 1.15471 and
// unfairness 1.19452.
func TestWorkloadMetricsReadmeExample(t *testing.T) {
	s := []float64{1.1605, 1.0409, 1.24338, 1.12323, 1.22376, 1.13648}
	if got := STP(s); !near(got, 5.21402, 2e-4) {
		t.Errorf("STP = %.5f, want 5.21402", got)
	}
	if got := ANTT(s); !near(got, 1.15471, 2e-5) {
		t.Errorf("ANTT = %.5f, want 1.15471", got)
	}
	if got := Unfairness(s); !near(got, 1.19452, 5e-5) {
		t.Errorf("unfairness = %.5f, want 1.19452", got)
	}
}

func TestJainIsOneOverOnePlusCoV2(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	// (Σx)²/(nΣx²) = 100/(4·30)
	if got := Jain(xs); !near(got, 100.0/120, 1e-12) {
		t.Errorf("Jain = %v", got)
	}
	if got := Jain([]float64{2, 2, 2}); got != 1 {
		t.Errorf("equal values: Jain = %v, want 1", got)
	}
}

func TestIPCE(t *testing.T) {
	if got := IPCE(250, 1000); got != 0.75 {
		t.Errorf("IPCE = %v", got)
	}
	// IPCE = IPC / IPC_theoretical (Eq. 3.3) equals 1 − stalls/cycles (Eq. 3.4).
	ins, cyc, st := 1800.0, 1000.0, 400.0
	if got, want := IPCE(st, cyc), IPC(ins, cyc)/(ins/(cyc-st)); !near(got, want, 1e-12) {
		t.Errorf("Eq 3.3 %v != Eq 3.4 %v", want, got)
	}
	if !math.IsNaN(IPCE(1, 0)) {
		t.Error("zero cycles must be NaN, not a number")
	}
}

func TestTimeOverTarget(t *testing.T) {
	s := []Sample{{0, 0.8}, {1, 0.5}, {3, 0.9}, {4, 0.1}}
	// met on [0,1) and [3,4): 2 of 4 seconds.
	if got := TimeOverTarget(s, 0.7); got != 0.5 {
		t.Errorf("TimeOverTarget = %v, want 0.5", got)
	}
	if got := TimeWeightedMean(s); !near(got, (0.8+0.5*2+0.9)/4, 1e-12) {
		t.Errorf("TimeWeightedMean = %v", got)
	}
}

func TestPercentileLinear(t *testing.T) {
	xs := []float64{4, 1, 3, 2}
	for _, c := range []struct{ p, want float64 }{{0, 1}, {50, 2.5}, {90, 3.7}, {100, 4}} {
		if got := Percentile(xs, c.p); !near(got, c.want, 1e-12) {
			t.Errorf("P%v = %v, want %v", c.p, got, c.want)
		}
	}
}

// Tembey 2013 Table 1, Stream-SPEC under Xen: CPU util 2376 of 2400 and PE 7.838 imply
// Σ 1/deg = 7.838 × 2376/2400 for 9 applications (mean ≈ 0.862, seed004.md §3).
func TestPlatformEfficiencyInvertsTable1(t *testing.T) {
	sum := 7.838 * 2376 / 2400
	s := make([]float64, 9)
	for i := range s {
		s[i] = 9 / sum
	}
	if got := PlatformEfficiency(s, 2376, 2400); !near(got, 7.838, 1e-9) {
		t.Errorf("PE = %v", got)
	}
}

func TestSensitivityClamped(t *testing.T) {
	if got := Sensitivity(0.8, 0.6); !near(got, 0.25, 1e-12) {
		t.Errorf("ς = %v", got)
	}
	if got := Sensitivity(0.8, 0.9); got != 0 {
		t.Errorf("gain must clamp to 0, got %v", got)
	}
}

func TestWeightedMaxUnfairness(t *testing.T) {
	// u = 1/S: 0.5 and 0.8; degradations 0.5 and 0.2; weights 1 and 2 → 0.5 vs 0.4.
	if got := WeightedMaxUnfairness([]float64{2, 1.25}, []float64{1, 2}); !near(got, 0.1, 1e-12) {
		t.Errorf("got %v", got)
	}
}

func TestMean(t *testing.T) {
	if got := Mean([]float64{1, 2, 6}); got != 3 {
		t.Errorf("Mean = %v, want 3", got)
	}
	if !math.IsNaN(Mean(nil)) {
		t.Error("the mean of nothing must be NaN")
	}
}

func TestMM1P99(t *testing.T) {
	// μ = 2000/s, λ = 1200/s: the sojourn is exponential with rate 800/s; P(T > p99) = 1 %.
	p := MM1P99(1200, 2000) / 1000
	if !near(math.Exp(-800*p), 0.01, 1e-12) {
		t.Errorf("MM1P99(1200, 2000) = %v ms: exp(−(μ−λ)·p99) = %v, want 0.01", p*1000, math.Exp(-800*p))
	}
	if MM1P99(2000, 2000) != MaxLatencyMs || MM1P99(3000, 2000) != MaxLatencyMs {
		t.Errorf("an overloaded server must get MaxLatencyMs")
	}
}

func TestPearson(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5}
	if r := Pearson(x, []float64{2, 4, 6, 8, 10}); !near(r, 1, 1e-12) {
		t.Errorf("linear: %v", r)
	}
	if r := Pearson(x, []float64{5, 4, 3, 2, 1}); !near(r, -1, 1e-12) {
		t.Errorf("anti: %v", r)
	}
	// a textbook pair: r = 0.8 (x = 1..5, y = 2, 4, 5, 4, 5: Sxy = 6, Sxx = 10, Syy = 6)
	if r := Pearson(x, []float64{2, 4, 5, 4, 5}); !near(r, 6/math.Sqrt(60), 1e-12) {
		t.Errorf("r = %v, want %v", r, 6/math.Sqrt(60))
	}
	if !math.IsNaN(Pearson(x, []float64{3, 3, 3, 3, 3})) {
		t.Errorf("a constant series has no correlation")
	}
}
