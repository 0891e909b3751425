package measure

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"colo/predict"
)

// fake is a predict.Measurer whose apps slow down by their dial: perf(d) = 1 + d/100 for
// app "a", 1 + d/50 for "b"; the reporter's latency is 10 + d; contentiousness of an app
// is the reporter at a dial of 20 ("a") or 40 ("b"); it records the co-runs it measures.
type fake struct{ coruns []string }

func (f *fake) ReporterCurve(_ context.Context, dials []float64) ([]predict.ReporterRow, error) {
	var rows []predict.ReporterRow
	for _, d := range dials {
		rows = append(rows, predict.ReporterRow{Key: strconv.FormatFloat(d, 'g', -1, 64), Avg: 10 + d})
	}
	return rows, nil
}

func slope(a predict.App) float64 {
	if a.Name == "b" {
		return 50
	}
	return 100
}

func (f *fake) SensitivityCurve(_ context.Context, a predict.App, dials []float64) (predict.Curve, error) {
	c := predict.Curve{Name: a.Name}
	for _, d := range dials {
		c.Dials = append(c.Dials, d)
		c.Perf = append(c.Perf, 1+d/slope(a))
	}
	return c, nil
}

func (f *fake) Contentiousness(_ context.Context, a predict.App) (predict.ReporterRow, error) {
	return predict.ReporterRow{Key: a.Name, Avg: 10 + 2000/slope(a)}, nil
}

func (f *fake) CoRun(_ context.Context, a, c predict.App) (float64, error) {
	f.coruns = append(f.coruns, a.Name+"|"+c.Name)
	return 0.9, nil
}

func TestWorkflowsRoundTripThroughTheDirectory(t *testing.T) {
	ctx := context.Background()
	d := Dir(t.TempDir())
	if err := d.Prepare(); err != nil {
		t.Fatal(err)
	}
	m := &fake{}
	dials := []float64{0, 20, 40, 60}
	apps := []predict.App{{Name: "a"}, {Name: "b"}}
	if d.HasReporterCurve() {
		t.Fatal("empty directory has a reporter curve")
	}
	if err := TrainReporter(ctx, m, d, dials); err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		if _, err := Sensitivity(ctx, m, d, a, dials); err != nil {
			t.Fatal(err)
		}
	}
	// a first measurement of a only, then both: a's row is replaced, not duplicated
	if err := Contention(ctx, m, d, apps[:1]); err != nil {
		t.Fatal(err)
	}
	if err := Contention(ctx, m, d, apps); err != nil {
		t.Fatal(err)
	}
	ds, err := predict.LoadDir(os.DirFS(string(d)), ".", string(d))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Contention) != 2 {
		t.Fatalf("contentiousness.csv has %d rows, want 2 (upserted)", len(ds.Contention))
	}
	sc := predict.ScoreMap(predict.ScoreAll(ds, predict.MethodLinear))
	if sc["a"] != 20 || sc["b"] != 40 {
		t.Fatalf("scores %v, want a=20 b=40 (reporter latency 10+d)", sc)
	}
	if err := CoRuns(ctx, m, d, ds, apps, predict.MethodLinear); err != nil {
		t.Fatal(err)
	}
	ds, err = predict.LoadDir(os.DirFS(string(d)), ".", string(d))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Validated) != 1 {
		t.Fatalf("validated.csv has %d rows", len(ds.Validated))
	}
	v := ds.Validated[0]
	// a next to b reads a's curve at 40: 1/(1+40/100); b next to a reads b's at 20: 1/(1+20/50)
	if want := 1 / 1.4; abs(v.Expected1-want) > 1e-9 || abs(v.Expected2-want) > 1e-9 || v.Actual1 != 0.9 || v.Actual2 != 0.9 {
		t.Errorf("validated row %+v, want expected %v both ways, actual 0.9", v, want)
	}
	if len(m.coruns) != 2 || m.coruns[0] != "a|b" || m.coruns[1] != "b|a" {
		t.Errorf("co-runs measured %v", m.coruns)
	}
}

func TestCoRunsCheckEveryPredictionBeforeMeasuring(t *testing.T) {
	d := Dir(t.TempDir())
	ds := &predict.Dataset{Source: string(d), Curves: map[string]predict.Curve{}}
	m := &fake{}
	err := CoRuns(context.Background(), m, d, ds, []predict.App{{Name: "a"}, {Name: "b"}}, predict.MethodLinear)
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("missing curves: %v, want an InputError", err)
	}
	if len(m.coruns) != 0 {
		t.Errorf("measured %v before finding the missing curve", m.coruns)
	}
	if _, err := os.Stat(filepath.Join(string(d), predict.ValidatedFile)); err == nil {
		t.Error("validated.csv written after a refusal")
	}
}

func TestReadOnlyDataSetIsRefused(t *testing.T) {
	// a file without any write bit is refused even for root (whom the kernel lets through)
	d := Dir(t.TempDir())
	p := d.Path(predict.ScoresFile)
	if err := os.WriteFile(p, []byte("x 1\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	err := d.Write(predict.ScoresFile, func(w io.Writer) error { _, err := io.WriteString(w, "y 2\n"); return err })
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("overwriting a read-only file: %v, want an InputError", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "x 1\n" {
		t.Errorf("read-only file changed to %q", b)
	}
	if err := Dir("").Prepare(); !errors.As(err, &ie) {
		t.Errorf("the embedded data set (no --data) is writable: %v", err)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
