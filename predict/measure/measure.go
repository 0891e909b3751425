// Package measure holds Bubble-Up's measurement workflows on any predict.Measurer (live
// processes or the simulated machine) and the data directory they write: reporter
// training, sensitivity profiling, contentiousness (upserted into contentiousness.csv)
// and co-run validation (validated.csv). Files are written atomically; a file or
// directory without any write permission bit (a published data set) is refused.
package measure

import (
	"bytes"
	"colo/internal/inputfile"
	"colo/metric"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"colo/predict"
)

// InputError is a measurement refused because of its input (a read-only data set, an
// application without a curve or a score): the caller reports it as bad input.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(format string, a ...any) error {
	return &InputError{fmt.Errorf(format, a...)}
}

// Dir is a Bubble-Up data directory that measurements write into.
type Dir string

// Prepare checks that the directory can be written (creating it and its sensitivity/
// subdirectory if needed).
func (d Dir) Prepare() error {
	if d == "" {
		return &InputError{errors.New("the embedded data set is read-only: give --data DIR to write measurements")}
	}
	for _, p := range []string{string(d), filepath.Join(string(d), predict.SensitivityDir)} {
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o222 == 0 {
			return inputErrorf("%s is read-only (a published data set?): measure into another directory", p)
		}
	}
	if err := os.MkdirAll(filepath.Join(string(d), predict.SensitivityDir), 0o755); err != nil {
		return &InputError{err}
	}
	return nil
}

// Path is the path of a file of the directory.
func (d Dir) Path(name string) string { return filepath.Join(string(d), name) }

// Write writes one file of the directory atomically (temp file + rename): nothing
// half-written. A target (or a directory) without any write permission bit is refused
// even for root, whom the kernel would let through.
func (d Dir) Write(name string, encode func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := encode(&buf); err != nil {
		return err
	}
	path := d.Path(name)
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o222 == 0 {
		return inputErrorf("%s is read-only (a published data set?): not overwriting it; copy the directory to write into it", path)
	}
	if dir := filepath.Dir(path); isReadOnly(dir) {
		return inputErrorf("%s is a read-only directory (a published data set?): not writing %s into it; copy the directory to write into it", dir, filepath.Base(path))
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// isReadOnly says whether path exists without any write permission bit.
func isReadOnly(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().Perm()&0o222 == 0
}

// HasReporterCurve tells whether the directory holds a reporter curve.
func (d Dir) HasReporterCurve() bool {
	_, err := os.Stat(d.Path(predict.ReporterFile))
	return !errors.Is(err, fs.ErrNotExist)
}

// TrainReporter measures the reporter curve at dials and writes reporter_sensitivity.csv.
func TrainReporter(ctx context.Context, m predict.Measurer, d Dir, dials []float64) error {
	rows, err := m.ReporterCurve(ctx, dials)
	if err != nil {
		return err
	}
	return d.Write(predict.ReporterFile, func(w io.Writer) error { return predict.WriteReporterTable(w, rows) })
}

// Sensitivity measures app's sensitivity curve at dials and writes sensitivity/NAME_data.csv.
func Sensitivity(ctx context.Context, m predict.Measurer, d Dir, app predict.App, dials []float64) (predict.Curve, error) {
	c, err := m.SensitivityCurve(ctx, app, dials)
	if err != nil {
		return c, err
	}
	name := filepath.Join(predict.SensitivityDir, predict.CurveFileName(app.Name))
	return c, d.Write(name, func(w io.Writer) error { return predict.WriteCurve(w, c) })
}

// SensitivityRepeated measures app's curve n times, repeat i with measurer mi(i) (on the
// simulator a fresh noise seed per repeat; on a live machine the same measurer, one sweep
// after the other), writes the mean curve with its spread (predict.WriteCurveCI) and
// returns it with the per-dial intervals of the raw values and of the normalised
// performance P(0)/P(d) of each repeat (metric.MeanCI).
func SensitivityRepeated(ctx context.Context, mi func(i int) predict.Measurer, d Dir, app predict.App, dials []float64, n int) (c predict.Curve, raw, norm []metric.Interval, err error) {
	vals := make([][]float64, len(dials))
	nvals := make([][]float64, len(dials))
	for i := 0; i < n; i++ {
		ci, err := mi(i).SensitivityCurve(ctx, app, dials)
		if err != nil {
			return c, nil, nil, err
		}
		if len(ci.Perf) != len(dials) {
			return c, nil, nil, fmt.Errorf("%s: repeat %d measured %d dials, want %d", app.Name, i, len(ci.Perf), len(dials))
		}
		for k := range dials {
			vals[k] = append(vals[k], ci.Perf[k])
			nvals[k] = append(nvals[k], predict.NormalisedPerf(ci.Perf[0], ci.Perf[k]))
		}
		c = ci
	}
	c.Perf = make([]float64, len(dials))
	for k := range dials {
		raw = append(raw, metric.MeanCI(vals[k]))
		norm = append(norm, metric.MeanCI(nvals[k]))
		c.Perf[k] = raw[k].Mean
	}
	name := filepath.Join(predict.SensitivityDir, predict.CurveFileName(app.Name))
	return c, raw, norm, d.Write(name, func(w io.Writer) error { return predict.WriteCurveCI(w, c, raw) })
}

// Contention measures the reporter next to each app and upserts the rows into
// contentiousness.csv (a new measurement replaces the app's old row; others stay).
func Contention(ctx context.Context, m predict.Measurer, d Dir, apps []predict.App) error {
	rows, err := readReporterRows(d.Path(predict.ContentionFile))
	if err != nil {
		return &InputError{err}
	}
	for _, a := range apps {
		row, err := m.Contentiousness(ctx, a)
		if err != nil {
			return err
		}
		rows = upsert(rows, row)
	}
	return d.Write(predict.ContentionFile, func(w io.Writer) error { return predict.WriteReporterTable(w, rows) })
}

// CoRuns measures both directions of every pair of apps for real and writes validated.csv,
// whose expected columns are the current predictions from ds's curves and scores. Every
// prediction is checked before anything runs.
func CoRuns(ctx context.Context, m predict.Measurer, d Dir, ds *predict.Dataset, apps []predict.App, method predict.Method) error {
	if len(apps) < 2 {
		return inputErrorf("--app: co-run validation needs at least two applications")
	}
	scores := predict.ScoreMap(predict.ScoreAll(ds, method))
	type run struct {
		app, comp predict.App
		act       *float64
	}
	var rows []predict.Validated
	var runs []run
	for i := 0; i < len(apps); i++ {
		for j := i + 1; j < len(apps); j++ {
			rows = append(rows, predict.Validated{Name1: apps[i].Name, Name2: apps[j].Name})
		}
	}
	k := 0
	for i := 0; i < len(apps); i++ {
		for j := i + 1; j < len(apps); j++ {
			v := &rows[k]
			k++
			for _, dir := range []struct {
				app, comp predict.App
				exp, act  *float64
			}{{apps[i], apps[j], &v.Expected1, &v.Actual1}, {apps[j], apps[i], &v.Expected2, &v.Actual2}} {
				c, ok := ds.Curves[dir.app.Name]
				if !ok {
					return inputErrorf("%s: %s has no sensitivity curve; run colo predict profile --app %s=… first", d, dir.app.Name, dir.app.Name)
				}
				s, ok := scores[dir.comp.Name]
				if !ok {
					return inputErrorf("%s: %s has no contentiousness measurement in %s; run colo predict profile or score first", d, dir.comp.Name, predict.ContentionFile)
				}
				p, err := predict.Predict(c, s, method)
				if err != nil {
					return &InputError{err}
				}
				*dir.exp = p
				runs = append(runs, run{dir.app, dir.comp, dir.act})
			}
		}
	}
	for _, r := range runs {
		var err error
		if *r.act, err = m.CoRun(ctx, r.app, r.comp); err != nil {
			return err
		}
	}
	return d.Write(predict.ValidatedFile, func(w io.Writer) error { return predict.WriteValidated(w, rows) })
}

// readReporterRows reads an existing reporter table back as rows (none if it does not exist).
func readReporterRows(path string) ([]predict.ReporterRow, error) {
	b, err := inputfile.Read(path, inputfile.Table)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return predict.ParseReporterTable(bytes.NewReader(b), path)
}

// upsert replaces the row with r's key, or appends r.
func upsert(rows []predict.ReporterRow, r predict.ReporterRow) []predict.ReporterRow {
	for i := range rows {
		if rows[i].Key == r.Key {
			rows[i] = r
			return rows
		}
	}
	return append(rows, r)
}
