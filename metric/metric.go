// Package metric defines every performance and fairness metric colo reports, one function
// each, with the formula and its source. Nothing else in colo re-derives these quantities.
package metric

import (
	"math"
	"sort"
)

// IPC is instructions per cycle: IPC = Instructions / Cycles
// (thesis Eq. 3.1, ../shared/research/seed000.md §3). NaN when cycles is zero.
func IPC(instructions, cycles float64) float64 { return ratio(instructions, cycles) }

// ratio is num / den, NaN when den is not positive (a counter that did not count).
func ratio(num, den float64) float64 {
	if den <= 0 {
		return math.NaN()
	}
	return num / den
}

// IPCE is the IPC efficiency, the fraction of cycles in which the core was not stalled:
// IPCE = IPC / IPC_theoretical = 1 − Cycles_stalled / Cycles, with
// IPC_theoretical = Instructions / (Cycles − Cycles_stalled)
// (thesis Eqs. 3.2–3.4; Cycles_stalled = cycle_activity.stalls_total). The thesis stores it
// ×100 (percent); this returns the fraction in [0, 1]. NaN when cycles is zero.
func IPCE(stalledCycles, cycles float64) float64 {
	return clamp01(1 - ratio(stalledCycles, cycles))
}

// StalledFraction is stalls_total / cycles (the thesis's "stalled cycles %" ÷ 100).
func StalledFraction(stalledCycles, cycles float64) float64 { return ratio(stalledCycles, cycles) }

// L3MissStallShare is the share of all stall cycles caused by pending L3 misses:
// StallsL3Miss / StallsTotal (thesis "StallsL3MissPercent" ÷ 100, seed000.md §3).
func L3MissStallShare(stallsL3Miss, stallsTotal float64) float64 {
	return ratio(stallsL3Miss, stallsTotal)
}

// Slowdown of an application co-run against its solo (reference) run:
// S = IPC_alone / IPC_shared = CT_shared / CT_alone (≥ 1 when sharing hurts).
// PBBCache uses IPC_alone = the maximum IPC over the per-way table (MODEL.md §2).
func Slowdown(ipcAlone, ipcShared float64) float64 {
	if ipcShared <= 0 {
		return math.Inf(1)
	}
	return ipcAlone / ipcShared
}

// STP is system throughput, STP = Σ_i 1 / S_i (Eyerman & Eeckhout; MODEL.md §5). Higher is better.
func STP(slowdowns []float64) float64 {
	s := 0.0
	for _, x := range slowdowns {
		s += 1 / x
	}
	return s
}

// Mean is the arithmetic mean (1/n) Σ_i x_i; NaN for no values (an average of nothing is
// unavailable, not 0).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// AggregateIPCE is the IPCE of a set of jobs taken from their summed counters, eq. 3.4 of
// the thesis (seed000.md §3) applied to the sums:
//
//	IPCE_agg = 1 − Σ_i stalls_i / Σ_i cycles_i = Σ_i cycles_i·IPCE_i / Σ_i cycles_i,
//
// i.e. each job weighs by the cycles it ran (cores × time for a busy job). NaN when there
// are no cycles. The thesis's "global IPCE" is consistent with this weighting and not with
// one vote per job (docs/thesis.md).
func AggregateIPCE(ipce, cycles []float64) float64 {
	s, w := 0.0, 0.0
	for i, x := range ipce {
		if math.IsNaN(x) || cycles[i] <= 0 {
			continue
		}
		s += cycles[i] * x
		w += cycles[i]
	}
	if w == 0 {
		return math.NaN()
	}
	return s / w
}

// ANTT is the average normalised turnaround time, ANTT = (1/n) Σ_i S_i (MODEL.md §5). Lower is better.
func ANTT(slowdowns []float64) float64 { return Mean(slowdowns) }

// Unfairness is max_i S_i / min_i S_i (MODEL.md §5; LFOC+, seed001.md §3). 1 is perfectly fair.
func Unfairness(slowdowns []float64) float64 {
	if len(slowdowns) == 0 {
		return math.NaN()
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range slowdowns {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return hi / lo
}

// CoV is the coefficient of variation σ/μ of xs, with the population standard deviation
// (PBBCache's "CoV unfairness" when applied to slowdowns, seed001.md §3).
func CoV(xs []float64) float64 {
	n := float64(len(xs))
	if n == 0 {
		return math.NaN()
	}
	mu := Mean(xs)
	v := 0.0
	for _, x := range xs {
		v += (x - mu) * (x - mu)
	}
	return math.Sqrt(v/n) / mu
}

// Jain is Jain's fairness index of xs, J = (Σx)² / (n Σx²) = 1 / (1 + CoV²)
// (Jain, Chiu & Hawe 1984; PBBCache's Jain fairness, MODEL.md §5). 1 is perfectly fair.
func Jain(xs []float64) float64 {
	c := CoV(xs)
	return 1 / (1 + c*c)
}

// GeoMeanSpeedup is (Π_i 1/S_i)^(1/n) (MODEL.md §5).
func GeoMeanSpeedup(slowdowns []float64) float64 {
	if len(slowdowns) == 0 {
		return math.NaN()
	}
	l := 0.0
	for _, x := range slowdowns {
		l -= math.Log(x)
	}
	return math.Exp(l / float64(len(slowdowns)))
}

// PlatformEfficiency is performance per unit of CPU: PE = Σ_i (1/deg_i) / (U / U_ref),
// where deg_i is application i's degradation (slowdown), U the total CPU utilisation and
// U_ref the normalisation (Tembey 2013, Table 1: U_ref = 2400; the fit of the published
// numbers is given in ../shared/research/seed004.md §3, "PE = Σ (1/deg_i)/(CPU_util/2400)").
// The thesis uses two other forms for single-application experiments; colo uses this one.
func PlatformEfficiency(slowdowns []float64, cpuUtil, cpuUtilRef float64) float64 {
	if cpuUtil <= 0 || cpuUtilRef <= 0 {
		return math.NaN()
	}
	return STP(slowdowns) / (cpuUtil / cpuUtilRef)
}

// WeightedMaxUnfairness is Merlin's weighted min-max objective: the largest pairwise gap
// max_{i,j} w_i(1−u_i) − w_j(1−u_j), where u_i = 1/S_i is the normalised performance of
// workload i and w_i its weight (Tembey 2013 §5.3; seed004.md §2: keep every gap < ε).
// Weights and slowdowns must have the same length.
func WeightedMaxUnfairness(slowdowns, weights []float64) float64 {
	if len(slowdowns) == 0 || len(slowdowns) != len(weights) {
		return math.NaN()
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, s := range slowdowns {
		d := weights[i] * (1 - 1/s)
		lo, hi = math.Min(lo, d), math.Max(hi, d)
	}
	return hi - lo
}

// Sensitivity is the thesis's clamped relative loss of a metric under a stressor:
// ς = clamp((base − stressed) / base, 0, 1) (thesis Eq. 3.5, seed000.md §2.6).
func Sensitivity(base, stressed float64) float64 {
	if base <= 0 || math.IsNaN(base) || math.IsNaN(stressed) {
		return math.NaN()
	}
	return clamp01((base - stressed) / base)
}

// Sample is one observation of a time series: the value holds from T until the next sample.
type Sample struct {
	T     float64 // seconds
	Value float64
}

// TimeOverTarget is the time-weighted fraction of a job's life with value ≥ target: the
// interval between consecutive samples counts as met when the earlier sample met the
// target (thesis repository convention, seed000.md §3). The last sample closes the series
// and contributes no interval. NaN samples count as not met. NaN for fewer than 2 samples.
func TimeOverTarget(samples []Sample, target float64) float64 {
	if len(samples) < 2 {
		return math.NaN()
	}
	met, total := 0.0, 0.0
	for i := 0; i+1 < len(samples); i++ {
		dt := samples[i+1].T - samples[i].T
		if dt <= 0 {
			continue
		}
		total += dt
		if samples[i].Value >= target {
			met += dt
		}
	}
	if total == 0 {
		return math.NaN()
	}
	return met / total
}

// TimeWeightedMean is the mean of a step series weighted by how long each sample held
// (same interval convention as TimeOverTarget); NaN samples are skipped.
func TimeWeightedMean(samples []Sample) float64 {
	s, w := 0.0, 0.0
	for i := 0; i+1 < len(samples); i++ {
		dt := samples[i+1].T - samples[i].T
		if dt <= 0 || math.IsNaN(samples[i].Value) {
			continue
		}
		s += samples[i].Value * dt
		w += dt
	}
	if w == 0 {
		return math.NaN()
	}
	return s / w
}

// Percentile is the p-th percentile (0 ≤ p ≤ 100) of xs with linear interpolation between
// order statistics (the "linear" method of numpy.percentile, Hyndman & Fan type 7).
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	h := (float64(len(s)) - 1) * p / 100
	lo := math.Floor(h)
	if int(lo)+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[int(lo)] + (h-lo)*(s[int(lo)+1]-s[int(lo)])
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

// MaxLatencyMs caps MM1P99 for an overloaded server (λ ≥ μ): its queue grows without bound,
// and one minute stands for "far past any SLO".
const MaxLatencyMs = 60000

// MM1P99 is the 99th percentile of the sojourn time (queueing + service), in ms, of an
// M/M/1 server with arrival rate lambda and service rate mu (requests/s). The sojourn time
// of M/M/1 FCFS is exponential with rate μ − λ (Kleinrock, Queueing Systems vol. 1, §3.2),
// so its p-quantile is −ln(1 − p)/(μ − λ):
//
//	p99 = ln(100) / (μ − λ)
//
// Heracles (ISCA'15) and its successors state latency SLOs on such tails; colo's simulated
// servers take μ from the instructions they retire (sim server jobs, docs/controllers.md).
// An overloaded server (λ ≥ μ) gets MaxLatencyMs.
func MM1P99(lambda, mu float64) float64 {
	if !(mu > lambda) {
		return MaxLatencyMs
	}
	return math.Min(MaxLatencyMs, 1000*math.Log(100)/(mu-lambda))
}

// Pearson is the correlation coefficient of x and y (same length):
//
//	r = Σ(x−x̄)(y−ȳ) / sqrt(Σ(x−x̄)² Σ(y−ȳ)²)
//
// NaN when either series is constant or shorter than 2. CPI2 (EuroSys'13) blames the
// antagonist whose CPU use correlates best with the victim's CPI; the guard uses it on the
// victim's latency and each neighbour's bandwidth, occupancy and CPU.
func Pearson(x, y []float64) float64 {
	n := min(len(x), len(y))
	if n < 2 {
		return math.NaN()
	}
	mx, my := 0.0, 0.0
	for i := 0; i < n; i++ {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(n)
	my /= float64(n)
	sxy, sxx, syy := 0.0, 0.0, 0.0
	for i := 0; i < n; i++ {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx <= 0 || syy <= 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}
