package predict

import (
	"fmt"
	"strings"
)

// Validation is the end-to-end validation of a data set (colo predict validate's stable
// JSON): every competitor scored from contentiousness.csv, both directions of every pair
// of validated.csv predicted and compared with the measured co-runs, plus the statistics
// of the recorded scores, of the recorded predictions and of every method.
type Validation struct {
	Source     string `json:"source"`
	Method     string `json:"method"`
	Convention string `json:"convention"`
	Stats
	Scores            map[string]float64 `json:"scores"`
	ScoreNotes        map[string]string  `json:"score_notes,omitempty"`
	WithDiagonalZeros Stats              `json:"with_diagonal_zeros"`
	RecordedScores    *SourcedStats      `json:"recorded_scores,omitempty"`
	ThesisExpected    *ExpectedStats     `json:"thesis_expected,omitempty"`
	Methods           map[string]Stats   `json:"methods"`
	Warnings          []string           `json:"warnings"`
	// MeasurementColumns: per file with several value columns, the one used.
	MeasurementColumns map[string]string `json:"measurement_columns,omitempty"`
}

// SourcedStats are error statistics of predictions from a named source of scores.
type SourcedStats struct {
	Source string `json:"source"`
	Stats
}

// ExpectedStats are the statistics of the predictions recorded in validated.csv.
type ExpectedStats struct {
	Convention string `json:"convention"`
	Stats
	WithDiagonalZeros Stats              `json:"with_diagonal_zeros"`
	InferredScores    map[string]float64 `json:"inferred_scores"`
}

// Convention states how Validation's errors and statistics are computed.
const Convention = "ε = 100·(predicted − measured) normalised performance, in percentage points of isolated performance; " +
	"statistics over the off-diagonal ordered pairs A≠C only (n = 2 × rows of validated.csv); percentiles of |ε| with linear " +
	"interpolation between order statistics (numpy default, Hyndman–Fan type 7); mean, min, max of the signed ε. " +
	"with_diagonal_zeros adds one zero error per application for the empty self-pair cells, the thesis's convention for its median and P90"

// Validate validates d's predictions under method m end to end (see Validation).
func Validate(d *Dataset, m Method) (*Validation, error) {
	if len(d.Contention) == 0 {
		return nil, fmt.Errorf("%s: no %s (reporter latencies next to each competitor) to score from", d.Source, ContentionFile)
	}
	out := &Validation{Source: d.Source, Method: string(m), Convention: Convention,
		Scores: map[string]float64{}, Methods: map[string]Stats{}, Warnings: append([]string{}, d.Warnings...),
		MeasurementColumns: d.Columns}
	for _, s := range ScoreAll(d, m) {
		out.Scores[s.Competitor] = s.MB
		if s.Note != "" {
			if out.ScoreNotes == nil {
				out.ScoreNotes = map[string]string{}
			}
			out.ScoreNotes[s.Competitor] = s.Note
		}
	}
	pairs, err := ValidatePairs(d, out.Scores, m, ContentionFile)
	if err != nil {
		return nil, err
	}
	eps := Errors(pairs)
	out.Stats = ErrorStats(eps, 0)
	out.WithDiagonalZeros = ErrorStats(eps, DiagonalCells(pairs))
	for _, mm := range Methods {
		ps, err := ValidatePairs(d, ScoreMap(ScoreAll(d, mm)), mm, ContentionFile)
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("method %s: %v", mm, err))
			continue
		}
		out.Methods[string(mm)] = ErrorStats(Errors(ps), 0)
	}
	if d.HasRecorded {
		if ps, err := ValidatePairs(d, d.Recorded, MethodNearest, ScoresFile); err == nil {
			out.RecordedScores = &SourcedStats{Source: ScoresFile + " as given, nearest lookup", Stats: ErrorStats(Errors(ps), 0)}
		} else {
			out.Warnings = append(out.Warnings, err.Error())
		}
	}
	exp := ExpectedPairs(d)
	ee := Errors(exp)
	out.ThesisExpected = &ExpectedStats{
		Convention:        "the expected1/expected2 columns of validated.csv (the predictions that were validated) against actual1/actual2; same statistics",
		Stats:             ErrorStats(ee, 0),
		WithDiagonalZeros: ErrorStats(ee, DiagonalCells(exp)),
		InferredScores:    InferExpectedScores(d),
	}
	return out, nil
}

// PredictMany predicts a's normalised performance next to several competitors at once:
// their scores combined by CombineScores, read off a's curve with m (nearest falls back to
// linear interpolation when the summed dial is off the curve's grid; the note says so).
func PredictMany(a Curve, scores []float64, m Method) (p, combinedMB float64, note string, err error) {
	mb, note := CombineScores(scores, a.Dials[len(a.Dials)-1])
	if m == MethodNearest && a.MissingDials([]float64{mb}) != nil {
		m = MethodLinear
		note = strings.TrimPrefix(note+"; the summed dial is off the grid: linear interpolation", "; ")
	}
	p, err = Predict(a, mb, m)
	return p, mb, note, err
}
