// Package predict is colo's Bubble-Up-style slowdown prediction (seed002.md §1, Mars et al.
// MICRO 2011 as re-implemented by Dzikowski 2025): sensitivity curves measured against a
// source of interference with a working-set dial, a reporter curve that turns a
// competitor's pressure into an equivalent dial value (its contentiousness score), the
// predicted normalised performance of A next to C read off A's curve at C's score, and the
// validation of predictions against measured co-runs.
//
// The core (this file, stats.go) is pure: curves and latencies in, scores, predictions and
// error statistics out. data.go reads and writes the thesis's file shapes; the real
// measurements live in predict/live.
package predict

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Curve is a performance-vs-dial curve: Perf[i] is a latency or execution time (lower is
// better) with the SoI at Dials[i] MB; Dials ascend and start at 0 (isolation).
type Curve struct {
	Name  string
	File  string // where it was read from ("" if built in memory)
	Dials []float64
	Perf  []float64
}

func (c *Curve) sortByDial() {
	idx := make([]int, len(c.Dials))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return c.Dials[idx[a]] < c.Dials[idx[b]] })
	d, p := make([]float64, len(idx)), make([]float64, len(idx))
	for i, j := range idx {
		d[i], p[i] = c.Dials[j], c.Perf[j]
	}
	c.Dials, c.Perf = d, p
}

// index returns the position of dial mb in the curve, or −1.
func (c Curve) index(mb float64) int {
	i := sort.SearchFloat64s(c.Dials, mb)
	if i < len(c.Dials) && c.Dials[i] == mb {
		return i
	}
	return -1
}

// MissingDials returns the dials of grid the curve lacks.
func (c Curve) MissingDials(grid []float64) []float64 {
	var out []float64
	for _, g := range grid {
		if c.index(g) < 0 {
			out = append(out, g)
		}
	}
	return out
}

// ExtraDials returns the curve's dials that are not in grid.
func (c Curve) ExtraDials(grid []float64) []float64 {
	g := Curve{Dials: append([]float64(nil), grid...)}
	sort.Float64s(g.Dials)
	var out []float64
	for _, d := range c.Dials {
		if g.index(d) < 0 {
			out = append(out, d)
		}
	}
	return out
}

// Gaps returns the dial points missing from an evenly spaced grid: when at least three
// quarters of the steps equal the smallest step s, every other step must be a multiple of
// s, and the skipped multiples are reported. Deliberately uneven grids (0, 1, 2, 4, 8 …)
// have no dominant step and report nothing.
func (c Curve) Gaps() []float64 {
	if len(c.Dials) < 3 {
		return nil
	}
	s := math.Inf(1)
	for i := 1; i < len(c.Dials); i++ {
		s = math.Min(s, c.Dials[i]-c.Dials[i-1])
	}
	same := 0
	for i := 1; i < len(c.Dials); i++ {
		if math.Abs(c.Dials[i]-c.Dials[i-1]-s) < 1e-9*math.Max(1, s) {
			same++
		}
	}
	if float64(same) < 0.75*float64(len(c.Dials)-1) {
		return nil
	}
	if !(s > 0) {
		return nil
	}
	// a grid is at most MaxDials points: more missing points than that is no grid
	total := 0.0
	for i := 1; i < len(c.Dials); i++ {
		total += math.Round((c.Dials[i] - c.Dials[i-1]) / s)
	}
	if total > MaxDials {
		return nil
	}
	var gaps []float64
	for i := 1; i < len(c.Dials); i++ {
		steps := (c.Dials[i] - c.Dials[i-1]) / s
		k := math.Round(steps)
		if k > 1 && math.Abs(steps-k) < 1e-6 {
			for j := 1.0; j < k; j++ {
				gaps = append(gaps, c.Dials[i-1]+j*s)
			}
		}
	}
	return gaps
}

// Decreases returns the dials at which the curve drops below its previous point (a latency
// curve should not decrease as the SoI grows; noise makes it do so).
func (c Curve) Decreases() []float64 {
	var out []float64
	for i := 1; i < len(c.Perf); i++ {
		if c.Perf[i] < c.Perf[i-1] {
			out = append(out, c.Dials[i])
		}
	}
	return out
}

// MonotoneWarning says how a non-monotone reporter curve is handled ("" if monotone).
func (c Curve) MonotoneWarning() string {
	dec := c.Decreases()
	if len(dec) == 0 {
		return ""
	}
	var parts []string
	for _, d := range dec {
		i := c.index(d)
		parts = append(parts, fmt.Sprintf("%v MB (%.6g < %.6g at %v MB)", d, c.Perf[i], c.Perf[i-1], c.Dials[i-1]))
	}
	return fmt.Sprintf("%s: reporter curve is not monotone: it decreases at %s. Method nearest takes the dial whose latency is closest over all points (ties: the smaller dial), so a latency inside a dip can land on either side of it; methods linear and monotone invert an isotonic (non-decreasing) fit of the curve instead",
		fileOr(c), strings.Join(parts, ", "))
}

func fileOr(c Curve) string {
	if c.File != "" {
		return c.File
	}
	return c.Name
}

// Isotonic returns the non-decreasing least-squares fit of the curve's values (pool
// adjacent violators, equal weights). It is the "monotone fit" the thesis's author lists as
// future work for both the reporter inverse and the sensitivity curves (seed002.md §7).
func Isotonic(y []float64) []float64 {
	type block struct {
		sum float64
		n   int
	}
	bs := make([]block, 0, len(y))
	for _, v := range y {
		bs = append(bs, block{v, 1})
		for len(bs) > 1 {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			if a.sum/float64(a.n) <= b.sum/float64(b.n) {
				break
			}
			bs = bs[:len(bs)-2]
			bs = append(bs, block{a.sum + b.sum, a.n + b.n})
		}
	}
	out := make([]float64, 0, len(y))
	for _, b := range bs {
		m := b.sum / float64(b.n)
		for i := 0; i < b.n; i++ {
			out = append(out, m)
		}
	}
	return out
}

// At returns the curve's value at mb by linear interpolation between neighbouring points,
// clamped to the end points outside the measured range.
func (c Curve) At(mb float64) float64 { return interp(c.Dials, c.Perf, mb) }

func interp(xs, ys []float64, x float64) float64 {
	if x <= xs[0] {
		return ys[0]
	}
	n := len(xs)
	if x >= xs[n-1] {
		return ys[n-1]
	}
	i := sort.SearchFloat64s(xs, x)
	if xs[i] == x {
		return ys[i]
	}
	return ys[i-1] + (x-xs[i-1])/(xs[i]-xs[i-1])*(ys[i]-ys[i-1])
}

// Method selects how scores and predictions are read off the curves.
type Method string

const (
	// MethodNearest is the thesis's method (seed002.md §1.3–1.4, data PROVENANCE.md
	// "Prediction method"): the score is the grid dial whose reporter latency is nearest
	// the competitor's, the prediction a table lookup at that dial.
	MethodNearest Method = "nearest"
	// MethodLinear inverts the isotonic fit of the reporter curve by linear interpolation
	// (a continuous score in MB) and interpolates A's raw curve at it.
	MethodLinear Method = "linear"
	// MethodMonotone is MethodLinear with A's curve also replaced by its isotonic fit.
	MethodMonotone Method = "monotone"
)

// Methods lists the prediction methods.
var Methods = []Method{MethodNearest, MethodLinear, MethodMonotone}

// ParseMethod validates a method name.
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown method %q: use nearest (the thesis's), linear or monotone", s)
}

// Score is a competitor's contentiousness: the SoI dial (MB) whose pressure on the
// reporter matches the competitor's.
type Score struct {
	Competitor string  `json:"competitor"`
	Latency    float64 `json:"latency"` // reporter latency with the competitor running
	MB         float64 `json:"mb"`
	Note       string  `json:"note,omitempty"` // how the score was chosen when it is not clear-cut
}

// ScoreOf converts a reporter latency measured next to a competitor into its
// contentiousness score on the reporter curve rep.
//
// nearest (thesis Eq. 6.2 without noise terms, seed002.md §1.3):
//
//	I_C = argmin_k |P_R(C) − P_R(I_k)| over all dials including 0; ties go to the smaller dial.
//
// linear and monotone: I_C = F⁻¹(P_R(C)) where F is the isotonic (non-decreasing) fit of
// P_R, inverted by linear interpolation: the smallest dial at which F reaches P_R(C);
// 0 below F(0), the largest dial above F(I_max).
func ScoreOf(rep Curve, competitor string, latency float64, m Method) Score {
	s := Score{Competitor: competitor, Latency: latency}
	// Crossings: where the curve reaches the latency (strictly inside a segment, or exactly
	// at a point). More than one means the reporter curve is not monotone there and the
	// score is ambiguous.
	var cross []string
	for i := range rep.Perf {
		if rep.Perf[i] == latency {
			cross = append(cross, fmt.Sprint(rep.Dials[i]))
		}
		if i > 0 {
			lo, hi := math.Min(rep.Perf[i-1], rep.Perf[i]), math.Max(rep.Perf[i-1], rep.Perf[i])
			if latency > lo && latency < hi {
				cross = append(cross, fmt.Sprintf("%v–%v", rep.Dials[i-1], rep.Dials[i]))
			}
		}
	}
	switch m {
	case MethodNearest:
		best := 0
		for k := 1; k < len(rep.Perf); k++ {
			if math.Abs(latency-rep.Perf[k]) < math.Abs(latency-rep.Perf[best]) {
				best = k
			}
		}
		s.MB = rep.Dials[best]
		if len(cross) > 1 {
			s.Note = fmt.Sprintf("reporter curve reaches %.6g at %d places (%s MB): took the nearest point over all dials, %v MB", latency, len(cross), strings.Join(cross, ", "), s.MB)
		}
	default:
		f := Isotonic(rep.Perf)
		n := len(f)
		switch {
		case latency <= f[0]:
			s.MB = rep.Dials[0]
		case latency > f[n-1]:
			s.MB = rep.Dials[n-1]
			s.Note = fmt.Sprintf("latency %.6g above the reporter curve's maximum %.6g: clamped to %v MB", latency, f[n-1], s.MB)
		default:
			k := 1
			for f[k] < latency {
				k++
			}
			s.MB = rep.Dials[k-1] + (latency-f[k-1])/(f[k]-f[k-1])*(rep.Dials[k]-rep.Dials[k-1])
			if len(cross) > 1 {
				s.Note = fmt.Sprintf("reporter curve reaches %.6g at %d places (%s MB): inverted its isotonic fit, %.4g MB", latency, len(cross), strings.Join(cross, ", "), s.MB)
			}
		}
	}
	return s
}

// NormalisedPerf is performance relative to isolation, P = t_iso / t (a speed ratio in
// (0, 1] when contention only slows down; seed002.md §1.1 "Normalisation in the code",
// data PROVENANCE.md step 2–3).
func NormalisedPerf(tIso, t float64) float64 { return tIso / t }

// PredictionError is the thesis's error in percentage points of isolated performance,
// ε = 100 · (P̂ − P) (thesis Eq. 7.1, seed002.md §1.4): positive when the prediction was too
// optimistic (the application ran slower than predicted).
func PredictionError(predicted, measured float64) float64 { return 100 * (predicted - measured) }

// Predict returns P̂(A | C) = S_A(I_C) = t_A(0) / t_A(I_C) (thesis Eq. 4.2, seed002.md §1.4),
// with a's curve read at scoreMB: an exact lookup for nearest (an error if the curve has no
// point at that dial), linear interpolation for linear, and interpolation of the isotonic
// fit for monotone.
func Predict(a Curve, scoreMB float64, m Method) (float64, error) {
	switch m {
	case MethodNearest:
		i := a.index(scoreMB)
		if i < 0 {
			return 0, fmt.Errorf("%s: no point at %v MB for a nearest-neighbour lookup; profile that dial or use --method linear", fileOr(a), scoreMB)
		}
		return NormalisedPerf(a.Perf[0], a.Perf[i]), nil
	case MethodLinear:
		return NormalisedPerf(a.Perf[0], a.At(scoreMB)), nil
	case MethodMonotone:
		f := Isotonic(a.Perf)
		return NormalisedPerf(f[0], interp(a.Dials, f, scoreMB)), nil
	}
	return 0, fmt.Errorf("unknown method %q", m)
}

// Matrix predicts every application against every competitor: out[i][j] = P̂(apps[i] |
// comps[j]) for the competitors' scores, exactly as Predict would. Scores are grouped by
// distinct dial, and interpolation weights are computed once per dial grid, so the work per
// pair is one table read (1000 × 1000 pairs take milliseconds).
func Matrix(curves map[string]Curve, apps []string, scores []Score, m Method) ([][]float64, error) {
	if _, err := ParseMethod(string(m)); err != nil {
		return nil, err
	}
	var uniq []float64
	pos := map[float64]int{}
	sidx := make([]int, len(scores))
	for j, s := range scores {
		u, ok := pos[s.MB]
		if !ok {
			u = len(uniq)
			pos[s.MB] = u
			uniq = append(uniq, s.MB)
		}
		sidx[j] = u
	}
	type seg struct {
		exact, lo int // exact ≥ 0: the dial is a grid point
		w         float64
	}
	var segGrid []float64
	var segs []seg
	segments := func(dials []float64) []seg {
		if segGrid != nil && len(segGrid) == len(dials) && &segGrid[0] == &dials[0] {
			return segs
		}
		segGrid, segs = dials, make([]seg, len(uniq))
		n := len(dials)
		for u, x := range uniq {
			switch {
			case x <= dials[0]:
				segs[u] = seg{exact: 0}
			case x >= dials[n-1]:
				segs[u] = seg{exact: n - 1}
			default:
				i := sort.SearchFloat64s(dials, x)
				if dials[i] == x {
					segs[u] = seg{exact: i}
				} else {
					segs[u] = seg{exact: -1, lo: i - 1, w: (x - dials[i-1]) / (dials[i] - dials[i-1])}
				}
			}
		}
		return segs
	}
	flat := make([]float64, len(apps)*len(scores))
	out := make([][]float64, len(apps))
	vals := make([]float64, len(uniq))
	for i, a := range apps {
		c, ok := curves[a]
		if !ok {
			return nil, fmt.Errorf("application %q has no sensitivity curve (%s)", a, CurveFileName(a))
		}
		perf := c.Perf
		if m == MethodMonotone {
			perf = Isotonic(perf)
		}
		if m == MethodNearest {
			for u, x := range uniq {
				k := c.index(x)
				if k < 0 {
					return nil, fmt.Errorf("%s: no point at %v MB for a nearest-neighbour lookup; profile that dial or use --method linear", fileOr(c), x)
				}
				vals[u] = NormalisedPerf(perf[0], perf[k])
			}
		} else {
			for u, sg := range segments(c.Dials) {
				if sg.exact >= 0 {
					vals[u] = NormalisedPerf(perf[0], perf[sg.exact])
				} else {
					vals[u] = NormalisedPerf(perf[0], perf[sg.lo]+sg.w*(perf[sg.lo+1]-perf[sg.lo]))
				}
			}
		}
		row := flat[i*len(scores) : (i+1)*len(scores)]
		for j := range row {
			row[j] = vals[sidx[j]]
		}
		out[i] = row
	}
	return out, nil
}

// CombineScores reduces the scores of several co-runners to one equivalent dial with
// Govindan et al.'s reduction rule <I1, I2, …> → I1 + I2 + … (seed002.md §2 and §7 item 1,
// the thesis's proposed extension beyond pairs). When the sum exceeds the largest profiled
// dial iMax, Govindan's rule wraps to the tuple <I_max, Σ − I_max>, which a one-dimensional
// sensitivity curve cannot express: the dial saturates at iMax and the note says so.
func CombineScores(scores []float64, iMax float64) (mb float64, note string) {
	for _, s := range scores {
		mb += s
	}
	if mb > iMax {
		return iMax, fmt.Sprintf("sum of scores %.4g MB exceeds the curve's last dial %v MB: read at %v MB (an underestimate of the pressure)", mb, iMax, iMax)
	}
	return mb, ""
}
