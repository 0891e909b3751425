package metric

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval summarises repeated measurements of one quantity (one value per seed): the
// sample mean, the sample standard deviation and a two-sided confidence interval for the
// mean from Student's t distribution:
//
//	x̄ = (1/n) Σ x_i,   s = √( Σ (x_i − x̄)² / (n − 1) ),
//	CI = x̄ ± t_{1−α/2, n−1} · s / √n
//
// (NIST/SEMATECH e-Handbook of Statistical Methods, §7.2.2.1 "Confidence limits for the
// mean"; Student 1908). NaN values (a metric a run could not produce) are left out; with
// fewer than two values SD and the interval are NaN.
type Interval struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	Lo   float64 `json:"ci95_lo"`
	Hi   float64 `json:"ci95_hi"`
}

// Confidence is the confidence level of every interval and test of this file.
const Confidence = 0.95

// MeanCI returns the Interval of xs at the Confidence level.
func MeanCI(xs []float64) Interval {
	v := finite(xs)
	iv := Interval{N: len(v), Mean: math.NaN(), SD: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if len(v) == 0 {
		return iv
	}
	iv.Mean, iv.SD = meanSD(v)
	if len(v) < 2 {
		return iv
	}
	h := tQuantile(len(v)-1) * iv.SD / math.Sqrt(float64(len(v)))
	iv.Lo, iv.Hi = iv.Mean-h, iv.Mean+h
	return iv
}

// PairedTest is a paired two-sided t-test of b against a over the same seeds (b_i and a_i
// come from the same trace and noise): with d_i = b_i − a_i,
//
//	t = d̄ / (s_d / √n),  df = n − 1,  p = 2 · P(T_df ≥ |t|),
//
// and the confidence interval of the mean difference d̄ ± t_{1−α/2, n−1} · s_d / √n (NIST/
// SEMATECH e-Handbook §7.3.1 "Do two processes have the same mean?", paired samples; Student
// 1908). Significant is p < 1 − Confidence. Pairs with a NaN on either side are left out.
// When every difference is the same (s_d = 0): p = 1 if it is 0, else p = 0 and t = ±Inf.
type PairedTest struct {
	Interval         // of the differences d_i
	T        float64 `json:"t"`
	DF       int     `json:"df"`
	P        float64 `json:"p"`
	// Significant is p < 0.05 (two-sided, 95 % confidence).
	Significant bool `json:"significant"`
}

// PairedTTest runs the paired t-test of b against a (len(a) must equal len(b)).
func PairedTTest(a, b []float64) PairedTest {
	var d []float64
	for i := range a {
		if x := b[i] - a[i]; !math.IsNaN(x) && !math.IsInf(x, 0) {
			d = append(d, x)
		}
	}
	pt := PairedTest{Interval: MeanCI(d), T: math.NaN(), P: math.NaN()}
	n := len(d)
	if n < 2 {
		return pt
	}
	pt.DF = n - 1
	switch {
	case pt.SD == 0 && pt.Mean == 0:
		pt.T, pt.P = 0, 1
	case pt.SD == 0:
		pt.T, pt.P = math.Copysign(math.Inf(1), pt.Mean), 0
	default:
		pt.T = pt.Mean / (pt.SD / math.Sqrt(float64(n)))
		pt.P = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(pt.DF)}.Survival(math.Abs(pt.T))
	}
	pt.Significant = pt.P < 1-Confidence
	return pt
}

// tQuantile is t_{1−α/2, df} for the Confidence level.
func tQuantile(df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(1 - (1-Confidence)/2)
}

func finite(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

func meanSD(v []float64) (float64, float64) {
	m := Mean(v)
	if len(v) < 2 {
		return m, math.NaN()
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return m, math.Sqrt(ss / float64(len(v)-1))
}
