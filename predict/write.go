package predict

import (
	"colo/metric"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// num formats a float the shortest way that reads back exactly.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// WriteCurve writes a sensitivity curve in the thesis's shape: header "footprint_mb perf",
// then "dial perf" rows.
func WriteCurve(w io.Writer, c Curve) error {
	if _, err := fmt.Fprintln(w, "footprint_mb perf"); err != nil {
		return err
	}
	for i := range c.Dials {
		if _, err := fmt.Fprintf(w, "%s %s\n", num(c.Dials[i]), num(c.Perf[i])); err != nil {
			return err
		}
	}
	return nil
}

// WriteCurveCI writes a curve measured several times (colo predict profile --repeat): the
// thesis's shape with perf = the mean over the repeats, then the spread per dial (iv[i] is
// metric.MeanCI of dial i's measurements). The loader takes the perf column by name.
func WriteCurveCI(w io.Writer, c Curve, iv []metric.Interval) error {
	if _, err := fmt.Fprintln(w, "footprint_mb perf sd ci95_lo ci95_hi n"); err != nil {
		return err
	}
	for i := range c.Dials {
		if _, err := fmt.Fprintf(w, "%s %s %s %s %s %d\n", num(c.Dials[i]), num(c.Perf[i]), num(iv[i].SD), num(iv[i].Lo), num(iv[i].Hi), iv[i].N); err != nil {
			return err
		}
	}
	return nil
}

// ReporterRow is one reporter measurement: the score (avg) and the per-function medians.
type ReporterRow struct {
	Key       string // dial (reporter curve) or competitor name (contentiousness)
	Avg       float64
	Functions map[string]float64
}

// WriteReporterTable writes reporter measurements in the thesis's shape: a header line
// starting with a space (the first column is unnamed) " avg f1 f2 …", then "key avg f1 f2 …".
// The function columns are the union of the rows' functions, sorted (rand, stream for the
// alternating reporter).
func WriteReporterTable(w io.Writer, rows []ReporterRow) error {
	set := map[string]bool{}
	for _, r := range rows {
		for f := range r.Functions {
			set[f] = true
		}
	}
	var fns []string
	for f := range set {
		fns = append(fns, f)
	}
	sort.Strings(fns)
	hdr := " avg"
	for _, f := range fns {
		hdr += " " + f
	}
	if _, err := fmt.Fprintln(w, hdr); err != nil {
		return err
	}
	for _, r := range rows {
		line := r.Key + " " + num(r.Avg)
		for _, f := range fns {
			v, ok := r.Functions[f]
			if !ok {
				return fmt.Errorf("reporter row %s lacks function %s", r.Key, f)
			}
			line += " " + num(v)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// WriteScores writes contentiousness_scores.csv: "name score_mb", no header.
func WriteScores(w io.Writer, ss []Score) error {
	for _, s := range ss {
		if _, err := fmt.Fprintf(w, "%s %s\n", s.Competitor, num(s.MB)); err != nil {
			return err
		}
	}
	return nil
}

// WriteValidated writes validated.csv with its header.
func WriteValidated(w io.Writer, vs []Validated) error {
	if _, err := fmt.Fprintln(w, "name1 name2 expected1 expected2 actual1 actual2"); err != nil {
		return err
	}
	for _, v := range vs {
		if _, err := fmt.Fprintf(w, "%s %s %s %s %s %s\n", v.Name1, v.Name2, num(v.Expected1), num(v.Expected2), num(v.Actual1), num(v.Actual2)); err != nil {
			return err
		}
	}
	return nil
}

// Predictions is colo's predictions.json: the method, the scores used and
// predictions[app][competitor] = predicted normalised performance.
type Predictions struct {
	Method      Method                        `json:"method"`
	Scores      map[string]float64            `json:"scores"`
	Predictions map[string]map[string]float64 `json:"predictions"`
}

// WritePredictions writes predictions.json (indented; map keys sorted by encoding/json).
func WritePredictions(w io.Writer, p Predictions) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}
