package predict

import (
	"fmt"
	"math"
	"path"
	"sort"

	"colo/metric"
)

// Stats summarises prediction errors ε in percentage points. The percentiles are of |ε|,
// with linear interpolation between order statistics (metric.Percentile, numpy's default).
// Mean, Min and Max are of the signed ε. Keys are stable: scripts depend on them.
type Stats struct {
	N       int     `json:"n"`
	Median  float64 `json:"median"`
	P90     float64 `json:"p90"`
	P95     float64 `json:"p95"`
	P99     float64 `json:"p99"`
	MeanAbs float64 `json:"mean_abs"`
	Mean    float64 `json:"mean"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
}

// ErrorStats computes Stats of the errors eps (pp), after appending diagonalZeros zero
// errors (the thesis's convention counts the empty self-pair cells of its error matrix as
// zeros, data PROVENANCE.md "Headline numbers"; colo's default is 0, off-diagonal only).
func ErrorStats(eps []float64, diagonalZeros int) Stats {
	all := append(append([]float64(nil), eps...), make([]float64, diagonalZeros)...)
	if len(all) == 0 {
		return Stats{Median: math.NaN(), P90: math.NaN(), P95: math.NaN(), P99: math.NaN(),
			MeanAbs: math.NaN(), Mean: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	abs := make([]float64, len(all))
	s := Stats{N: len(all), Min: math.Inf(1), Max: math.Inf(-1)}
	for i, e := range all {
		abs[i] = math.Abs(e)
		s.MeanAbs += abs[i]
		s.Mean += e
		s.Min = math.Min(s.Min, e)
		s.Max = math.Max(s.Max, e)
	}
	s.MeanAbs /= float64(len(all))
	s.Mean /= float64(len(all))
	s.Median = metric.Percentile(abs, 50)
	s.P90 = metric.Percentile(abs, 90)
	s.P95 = metric.Percentile(abs, 95)
	s.P99 = metric.Percentile(abs, 99)
	return s
}

// PairError is one ordered prediction checked against a measured co-run.
type PairError struct {
	App        string  `json:"app"`
	Competitor string  `json:"competitor"`
	ScoreMB    float64 `json:"score_mb"`
	Predicted  float64 `json:"predicted"`
	Measured   float64 `json:"measured"`
	Error      float64 `json:"error_pp"`
	Line       int     `json:"line"` // of validated.csv
}

// Errors returns the ε of a list of pair errors.
func Errors(ps []PairError) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = p.Error
	}
	return out
}

// ScoreAll scores every competitor of the data set from its reporter latency.
func ScoreAll(d *Dataset, m Method) []Score {
	out := make([]Score, 0, len(d.Contention))
	for _, c := range d.Contention {
		out = append(out, ScoreOf(d.Reporter, c.Name, c.Latency, m))
	}
	return out
}

// ScoreMap turns scores into competitor → MB.
func ScoreMap(ss []Score) map[string]float64 {
	m := make(map[string]float64, len(ss))
	for _, s := range ss {
		m[s.Competitor] = s.MB
	}
	return m
}

func (d *Dataset) validatedPath() string {
	if d.ValidatedPath != "" {
		return d.ValidatedPath
	}
	return path.Join(d.Source, ValidatedFile)
}

// ValidatePairs predicts both directions of every validated.csv row from the sensitivity
// curves and the given scores (competitor → MB), and compares them with the measured
// actual1/actual2. A name without a curve or without a score is an error naming the row.
func ValidatePairs(d *Dataset, scores map[string]float64, m Method, scoreSource string) ([]PairError, error) {
	if len(d.Validated) == 0 {
		return nil, fmt.Errorf("%s: no %s with measured co-runs to validate against", d.Source, ValidatedFile)
	}
	out := make([]PairError, 0, 2*len(d.Validated))
	for _, v := range d.Validated {
		for _, dir := range [2]struct {
			app, comp string
			actual    float64
		}{{v.Name1, v.Name2, v.Actual1}, {v.Name2, v.Name1, v.Actual2}} {
			c, ok := d.Curves[dir.app]
			if !ok {
				return nil, fmt.Errorf("%s:%d: application %s has no sensitivity curve (%s/%s)", d.validatedPath(), v.Line, dir.app, SensitivityDir, CurveFileName(dir.app))
			}
			s, ok := scores[dir.comp]
			if !ok {
				return nil, fmt.Errorf("%s:%d: competitor %s has no contentiousness score (not in %s)", d.validatedPath(), v.Line, dir.comp, scoreSource)
			}
			p, err := Predict(c, s, m)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", d.validatedPath(), v.Line, err)
			}
			out = append(out, PairError{App: dir.app, Competitor: dir.comp, ScoreMB: s, Predicted: p,
				Measured: dir.actual, Error: PredictionError(p, dir.actual), Line: v.Line})
		}
	}
	return out, nil
}

// ExpectedPairs returns the errors of the predictions recorded in validated.csv (the
// expected1/expected2 columns, the predictions the thesis validated) against the measured
// co-runs.
func ExpectedPairs(d *Dataset) []PairError {
	out := make([]PairError, 0, 2*len(d.Validated))
	for _, v := range d.Validated {
		out = append(out,
			PairError{App: v.Name1, Competitor: v.Name2, ScoreMB: math.NaN(), Predicted: v.Expected1, Measured: v.Actual1, Error: PredictionError(v.Expected1, v.Actual1), Line: v.Line},
			PairError{App: v.Name2, Competitor: v.Name1, ScoreMB: math.NaN(), Predicted: v.Expected2, Measured: v.Actual2, Error: PredictionError(v.Expected2, v.Actual2), Line: v.Line})
	}
	return out
}

// DiagonalCells is the number of self-pair cells of the error matrix the pairs span: one
// per distinct application (the thesis counts them as zero errors).
func DiagonalCells(ps []PairError) int {
	apps := map[string]bool{}
	for _, p := range ps {
		apps[p.App] = true
		apps[p.Competitor] = true
	}
	return len(apps)
}

// InferExpectedScores works backwards from the expected* columns: for each competitor, the
// smallest grid dial k at which t_A(0)/t_A(k) reproduces every prediction made against it
// (to 1e-9), or −1 if no dial does. Data PROVENANCE.md caveat 1 lists these scores.
func InferExpectedScores(d *Dataset) map[string]float64 {
	want := map[string][][2]any{} // competitor → (app, expected)
	for _, v := range d.Validated {
		want[v.Name2] = append(want[v.Name2], [2]any{v.Name1, v.Expected1})
		want[v.Name1] = append(want[v.Name1], [2]any{v.Name2, v.Expected2})
	}
	out := map[string]float64{}
	comps := make([]string, 0, len(want))
	for c := range want {
		comps = append(comps, c)
	}
	sort.Strings(comps)
	for _, comp := range comps {
		out[comp] = -1
	dials:
		for _, dial := range d.Reporter.Dials {
			for _, w := range want[comp] {
				c, ok := d.Curves[w[0].(string)]
				if !ok {
					continue dials
				}
				p, err := Predict(c, dial, MethodNearest)
				if err != nil || math.Abs(p-w[1].(float64)) > 1e-9 {
					continue dials
				}
			}
			out[comp] = dial
			break
		}
	}
	return out
}
