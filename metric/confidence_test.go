package metric

import (
	"math"
	"testing"
)

// Student's (1908) sleep data, the textbook paired example: extra hours of sleep of ten
// patients under two drugs. The published paired t-test: d̄ = 1.58, t = 4.0621, df = 9,
// p = 0.002833, 95 % CI of the difference [0.7001, 2.4599].
var (
	sleep1 = []float64{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0}
	sleep2 = []float64{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4}
)

func TestPairedTTestStudentSleep(t *testing.T) {
	pt := PairedTTest(sleep1, sleep2)
	if pt.N != 10 || pt.DF != 9 || !nearTol(pt.Mean, 1.58, 1e-12) || !nearTol(pt.T, 4.0621, 5e-5) || !nearTol(pt.P, 0.002833, 5e-7) ||
		!nearTol(pt.Lo, 0.7001, 5e-5) || !nearTol(pt.Hi, 2.4599, 5e-5) || !pt.Significant {
		t.Fatalf("%+v", pt)
	}
	// Swapping the sides flips the sign, not the p-value.
	if r := PairedTTest(sleep2, sleep1); !nearTol(r.T, -pt.T, 1e-12) || !nearTol(r.P, pt.P, 1e-12) {
		t.Fatalf("swapped: %+v", r)
	}
	// The same data unpaired-looking but with a constant shift: every difference equal.
	same := PairedTTest([]float64{1, 2, 3}, []float64{2, 3, 4})
	if same.P != 0 || !math.IsInf(same.T, 1) || !same.Significant {
		t.Fatalf("constant difference: %+v", same)
	}
	if eq := PairedTTest([]float64{1, 2}, []float64{1, 2}); eq.P != 1 || eq.Significant {
		t.Fatalf("identical: %+v", eq)
	}
}

func TestMeanCI(t *testing.T) {
	// sleep2: mean 2.33, sd 2.002249 (R: sd(sleep2)); t_{0.975,9} = 2.262157.
	iv := MeanCI(sleep2)
	h := 2.262157 * 2.002249 / math.Sqrt(10)
	if iv.N != 10 || !nearTol(iv.Mean, 2.33, 1e-12) || !nearTol(iv.SD, 2.002249, 5e-7) || !nearTol(iv.Lo, 2.33-h, 5e-6) || !nearTol(iv.Hi, 2.33+h, 5e-6) {
		t.Fatalf("%+v", iv)
	}
	// NaN values are left out; one value has no spread.
	one := MeanCI([]float64{math.NaN(), 4})
	if one.N != 1 || one.Mean != 4 || !math.IsNaN(one.SD) || !math.IsNaN(one.Lo) {
		t.Fatalf("%+v", one)
	}
	// The interval narrows as 1/√n for the same spread.
	a, b := MeanCI([]float64{1, 3, 1, 3}), MeanCI([]float64{1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3})
	if !(b.Hi-b.Lo < (a.Hi-a.Lo)/2) {
		t.Fatalf("n=4 %v, n=16 %v", a, b)
	}
}

func nearTol(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
