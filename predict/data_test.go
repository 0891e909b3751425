package predict

import (
	"bytes"
	"fmt"
	"io/fs"
	"math"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"colo/data"
)

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := fs.ReadFile(data.FS, data.BubbleUp+"/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCurvesWithAndWithoutHeaderAreTheSame(t *testing.T) {
	raw := mustRead(t, "sensitivity/605_mcf_s_data.csv")
	withHdr, err := ParseCurve(bytes.NewReader(raw), "mcf", "605.mcf_s", "perf")
	if err != nil {
		t.Fatal(err)
	}
	noHdr := raw[bytes.IndexByte(raw, '\n')+1:]
	without, err := ParseCurve(bytes.NewReader(noHdr), "mcf", "605.mcf_s", "perf")
	if err != nil {
		t.Fatal(err)
	}
	if len(withHdr.Dials) != 29 || !reflect.DeepEqual(withHdr, without) {
		t.Fatalf("header %d points, headerless %d points, equal %v", len(withHdr.Dials), len(without.Dials), reflect.DeepEqual(withHdr, without))
	}
	// Every line is a point: the data has 30 lines (header + 29).
	if n := bytes.Count(raw, []byte("\n")); n != 30 {
		t.Fatalf("file has %d lines", n)
	}
	// The reporter file: header " avg rand stream" (first column unnamed); avg is column 2.
	rep := mustRead(t, ReporterFile)
	c, err := ParseCurve(bytes.NewReader(rep), ReporterFile, "reporter", "avg")
	if err != nil || len(c.Dials) != 29 || c.Perf[0] != 6607014.5 || c.Dials[28] != 112 {
		t.Fatalf("reporter curve: %+v %v", c, err)
	}
	// The same file without its header reads column 2 = avg as well.
	c2, err := ParseCurve(bytes.NewReader(rep[bytes.IndexByte(rep, '\n')+1:]), ReporterFile, "reporter", "avg")
	if err != nil || !reflect.DeepEqual(c.Perf, c2.Perf) {
		t.Fatalf("headerless reporter: %v", err)
	}
	// A header naming the performance column differently picks it by name.
	c3, err := ParseCurve(strings.NewReader(" avg rand stream\n0 1 5 6\n4 2 7 8\n"), "r.csv", "r", "stream")
	if err != nil || !reflect.DeepEqual(c3.Perf, []float64{6, 8}) {
		t.Fatalf("column by name: %+v %v", c3, err)
	}
}

func TestBadCurves(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"footprint_mb perf\n0 1\n4 abc\n", "f.csv:3: performance \"abc\""},
		{"0 1\n4 2\n4 3\n", "f.csv:3: dial 4 MB appears twice"},
		{"0 1\n4 -2\n", "f.csv:2: performance -2"},
		{"0 1\n4 2 3\n", "f.csv:2: 3 fields, want 2"},
		{"4 1\n8 2\n", "no 0 MB point"},
		{"footprint_mb perf\n", "no data rows"},
		{"0 1\n-4 2\n", "f.csv:2: dial -4 MB is negative"},
		{"0 1\nNaN 2\n", "f.csv:2: dial \"NaN\""},
		{"a b c\n0 1\n", "header has 3 names for 2 columns"},
		{"dial a b\n0 1 2\n", "no column \"perf\" among the value columns"},
	} {
		_, err := ParseCurve(strings.NewReader(tc.body), "f.csv", "x", "perf")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.body, err, tc.want)
		}
	}
}

// smallDir builds a data directory: reporter on 0..16 step 4 and the given curves.
func smallDir(curves map[string]string, extra map[string]string) fstest.MapFS {
	m := fstest.MapFS{
		ReporterFile: {Data: []byte(" avg rand stream\n0 100 90 110\n4 110 100 120\n8 130 120 140\n12 160 150 170\n16 200 190 210\n")},
	}
	for n, body := range curves {
		m[SensitivityDir+"/"+CurveFileName(n)] = &fstest.MapFile{Data: []byte(body)}
	}
	for p, body := range extra {
		m[p] = &fstest.MapFile{Data: []byte(body)}
	}
	return m
}

const fullCurve = "footprint_mb perf\n0 10\n4 10.5\n8 11\n12 12\n16 14\n"

func TestLoadDirBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"missing dial points", smallDir(map[string]string{"a.x": fullCurve, "b.y": "0 10\n4 11\n16 14\n"}, nil),
			"sensitivity/b_y_data.csv: dial points [8 12] MB are missing"},
		{"reporter gap", fstest.MapFS{
			ReporterFile:                   {Data: []byte(" avg rand stream\n0 1 1 1\n4 2 2 2\n8 3 3 3\n16 5 5 5\n20 6 6 6\n")},
			SensitivityDir + "/a_data.csv": {Data: []byte(fullCurve)}},
			"reporter_sensitivity.csv: dial points missing from an evenly spaced grid: [12] MB"},
		{"no reporter", fstest.MapFS{SensitivityDir + "/a_data.csv": {Data: []byte(fullCurve)}},
			"needs reporter_sensitivity.csv"},
		{"no sensitivity dir", fstest.MapFS{ReporterFile: {Data: []byte(" avg\n0 1\n4 2\n")}},
			"needs sensitivity/<name>_data.csv files"},
		{"competitor without a curve", smallDir(map[string]string{"a.x": fullCurve}, map[string]string{
			ContentionFile: " avg rand stream\na.x 120 110 130\nz.z 150 140 160\n",
			ValidatedFile:  "name1 name2 expected1 expected2 actual1 actual2\na.x z.z 1 1 0.9 0.95\n"}),
			"validated.csv:2: application z.z has no sensitivity curve (sensitivity/z_z_data.csv)"},
		{"pair without a contentiousness measurement", smallDir(map[string]string{"a.x": fullCurve, "b.y": fullCurve}, map[string]string{
			ContentionFile: " avg rand stream\na.x 120 110 130\n",
			ValidatedFile:  "name1 name2 expected1 expected2 actual1 actual2\na.x b.y 1 1 0.9 0.95\n"}),
			"validated.csv:2: competitor b.y has no contentiousness score (not in contentiousness.csv)"},
		{"bad contention row", smallDir(map[string]string{"a.x": fullCurve}, map[string]string{
			ContentionFile: " avg rand stream\na.x 120 110 130\nb.y fast 1 1\n"}),
			"contentiousness.csv:3: reporter latency \"fast\""},
		{"validated without header", smallDir(map[string]string{"a.x": fullCurve}, map[string]string{
			ValidatedFile: "a.x b.y 1 1 0.9 0.95\n"}),
			"validated.csv:1: want the header"},
	} {
		d, err := LoadDir(tc.fsys, ".", "dir")
		if err == nil {
			_, err = ValidatePairs(d, ScoreMap(ScoreAll(d, MethodNearest)), MethodNearest, ContentionFile)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

func TestLoadDirNamesAndExtraPoints(t *testing.T) {
	d, err := LoadDir(smallDir(map[string]string{"600.perl_s": fullCurve + "20 15\n"}, map[string]string{
		ContentionFile: " avg rand stream\n600.perl_s 120 110 130\n", "sensitivity/notes.txt": "x"}), ".", "dir")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Curves["600.perl_s"]; !ok {
		t.Fatalf("curve name not mapped back through contentiousness.csv: %v", d.Names())
	}
	joined := strings.Join(d.Warnings, "\n")
	if !strings.Contains(joined, "[20] MB are not on the reporter's grid") || !strings.Contains(joined, "notes.txt: ignored") {
		t.Fatalf("warnings: %v", d.Warnings)
	}
}

func TestNonMonotoneReporterWarnsAndSaysHowTheScoreWasChosen(t *testing.T) {
	rep := Curve{Name: "r", File: "rep.csv", Dials: []float64{0, 4, 8, 12, 16}, Perf: []float64{100, 150, 130, 170, 200}}
	w := rep.MonotoneWarning()
	if !strings.Contains(w, "rep.csv") || !strings.Contains(w, "decreases at 8 MB") || !strings.Contains(w, "nearest") {
		t.Fatalf("warning: %q", w)
	}
	// 135 is reached three times (rising 0–4, falling 4–8, rising 8–12): ambiguous.
	s := ScoreOf(rep, "c", 135, MethodNearest)
	if s.MB != 8 || !strings.Contains(s.Note, "3 places") {
		t.Fatalf("nearest: %+v", s)
	}
	// Equal distances (150 at 4 MB, 130 at 8 MB from 140): the smaller dial.
	if s := ScoreOf(rep, "c", 140, MethodNearest); s.MB != 4 {
		t.Fatalf("tie: %+v", s)
	}
	s = ScoreOf(rep, "c", 135, MethodLinear)
	// Isotonic fit: 100, 140, 140, 170, 200 → 135 is reached at 0 + 35/40·4 = 3.5 MB.
	if s.MB != 3.5 || !strings.Contains(s.Note, "isotonic") {
		t.Fatalf("linear: %+v", s)
	}
	if (Curve{Dials: []float64{0, 4}, Perf: []float64{1, 2}}).MonotoneWarning() != "" {
		t.Fatal("monotone curve warned")
	}
}

func TestScoreOf(t *testing.T) {
	rep := Curve{Dials: []float64{0, 10, 20}, Perf: []float64{100, 200, 300}}
	for _, tc := range []struct {
		lat  float64
		m    Method
		want float64
		note bool
	}{
		{150, MethodNearest, 0, false}, // tie between 0 and 10: the smaller dial
		{151, MethodNearest, 10, false},
		{1000, MethodNearest, 20, false},
		{50, MethodNearest, 0, false},
		{250, MethodLinear, 15, false},
		{50, MethodLinear, 0, false},
		{1000, MethodLinear, 20, true},
		{200, MethodMonotone, 10, false},
	} {
		s := ScoreOf(rep, "c", tc.lat, tc.m)
		if s.MB != tc.want || (s.Note != "") != tc.note {
			t.Errorf("%v %s: %+v, want %v MB", tc.lat, tc.m, s, tc.want)
		}
	}
}

func TestIsotonicAndPredict(t *testing.T) {
	if got := Isotonic([]float64{1, 3, 2, 4}); !reflect.DeepEqual(got, []float64{1, 2.5, 2.5, 4}) {
		t.Fatalf("isotonic %v", got)
	}
	if got := Isotonic([]float64{5, 4, 3}); !reflect.DeepEqual(got, []float64{4, 4, 4}) {
		t.Fatalf("isotonic %v", got)
	}
	a := Curve{Name: "a", Dials: []float64{0, 10, 20}, Perf: []float64{10, 20, 15}}
	if p, _ := Predict(a, 10, MethodNearest); p != 0.5 {
		t.Fatalf("nearest lookup %v", p)
	}
	if _, err := Predict(a, 5, MethodNearest); err == nil || !strings.Contains(err.Error(), "no point at 5 MB") {
		t.Fatalf("off-grid nearest: %v", err)
	}
	if p, _ := Predict(a, 5, MethodLinear); p != 10.0/15 {
		t.Fatalf("linear %v", p)
	}
	// Monotone: fit 10, 17.5, 17.5.
	if p, _ := Predict(a, 20, MethodMonotone); p != 10/17.5 {
		t.Fatalf("monotone %v", p)
	}
	if _, err := ParseMethod("cubic"); err == nil {
		t.Fatal("unknown method accepted")
	}
}

func TestMatrixMatchesPredictBothDirections(t *testing.T) {
	d := loadEmbedded(t)
	ss := ScoreAll(d, MethodNearest)
	apps := d.Names()
	for _, m := range Methods {
		mat, err := Matrix(d.Curves, apps, ScoreAll(d, m), m)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range apps {
			for j, s := range ScoreAll(d, m) {
				p, _ := Predict(d.Curves[a], s.MB, m)
				if mat[i][j] != p {
					t.Fatalf("%s: matrix %v != predict %v", m, mat[i][j], p)
				}
			}
		}
	}
	// Both directions of one pair from PROVENANCE.md's method: lbm's score is 60 MB raw.
	sm := ScoreMap(ss)
	mcf, lbm := d.Curves["605.mcf_s"], d.Curves["619.lbm_s"]
	p1, _ := Predict(mcf, sm["619.lbm_s"], MethodNearest)
	p2, _ := Predict(lbm, sm["605.mcf_s"], MethodNearest)
	if p1 != mcf.Perf[0]/mcf.Perf[15] || p2 != lbm.Perf[0]/lbm.Perf[1] {
		t.Fatalf("mcf|lbm %v, lbm|mcf %v", p1, p2)
	}
	if _, err := Matrix(d.Curves, []string{"nope"}, ss, MethodNearest); err == nil {
		t.Fatal("unknown app accepted")
	}
}

func TestWritersRoundTrip(t *testing.T) {
	c := Curve{Name: "a", Dials: []float64{0, 16, 32}, Perf: []float64{2.5, 3.25, 1e-9 + 4}}
	var b bytes.Buffer
	if err := WriteCurve(&b, c); err != nil {
		t.Fatal(err)
	}
	back, err := ParseCurve(&b, "x", "a", "perf")
	if err != nil || !reflect.DeepEqual(back.Perf, c.Perf) || !reflect.DeepEqual(back.Dials, c.Dials) {
		t.Fatalf("curve round trip: %+v %v", back, err)
	}
	rows := []ReporterRow{{"0", 5, map[string]float64{"random": 4, "stream": 6}}, {"16", 7.5, map[string]float64{"random": 7, "stream": 8}}}
	b.Reset()
	WriteReporterTable(&b, rows)
	if !strings.HasPrefix(b.String(), " avg random stream\n0 5 4 6\n") {
		t.Fatalf("reporter table shape: %q", b.String())
	}
	rc, err := ParseCurve(bytes.NewReader(b.Bytes()), "r", "r", "avg")
	if err != nil || !reflect.DeepEqual(rc.Perf, []float64{5, 7.5}) {
		t.Fatalf("reporter table as curve: %+v %v", rc, err)
	}
	rr, err := ParseReporterTable(bytes.NewReader(b.Bytes()), "r")
	if err != nil || !reflect.DeepEqual(rr, rows) {
		t.Fatalf("reporter rows: %+v %v", rr, err)
	}
	// The shipped contentiousness.csv reads back as rows.
	raw := mustRead(t, ContentionFile)
	cr, err := ParseReporterTable(bytes.NewReader(raw), ContentionFile)
	if err != nil || len(cr) != 19 {
		t.Fatalf("contentiousness rows: %d %v", len(cr), err)
	}
	vs := []Validated{{Name1: "a", Name2: "b", Expected1: 1, Expected2: 0.9, Actual1: 0.95, Actual2: 1.01}}
	b.Reset()
	WriteValidated(&b, vs)
	vb, err := parseValidated(&b, "v")
	if err != nil || len(vb) != 1 || vb[0].Actual2 != 1.01 || vb[0].Name2 != "b" {
		t.Fatalf("validated round trip %+v %v", vb, err)
	}
	b.Reset()
	WriteScores(&b, []Score{{Competitor: "x", MB: 12.5}})
	sc, err := parseScores(&b, "s")
	if err != nil || sc["x"] != 12.5 {
		t.Fatalf("scores round trip %v %v", sc, err)
	}
}

func TestErrorStatsConventions(t *testing.T) {
	s := ErrorStats([]float64{-2, 1, 3}, 0)
	if s.N != 3 || s.Median != 2 || s.Mean != 2.0/3 || s.Min != -2 || s.Max != 3 || s.MeanAbs != 2 {
		t.Fatalf("%+v", s)
	}
	// numpy.percentile([1,2,3], 90, method="linear") = 2.8
	if math.Abs(s.P90-2.8) > 1e-12 {
		t.Fatalf("p90 %v", s.P90)
	}
	z := ErrorStats([]float64{-2, 1, 3}, 2)
	if z.N != 5 || z.Median != 1 {
		t.Fatalf("with zeros %+v", z)
	}
	if e := ErrorStats(nil, 0); e.N != 0 || !math.IsNaN(e.Median) {
		t.Fatalf("empty %+v", e)
	}
}

func BenchmarkPredictAllPairs1000(b *testing.B) {
	const n = 1000
	dials := make([]float64, 29)
	for i := range dials {
		dials[i] = float64(4 * i)
	}
	curves := map[string]Curve{}
	apps := make([]string, n)
	scores := make([]Score, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("app%04d", i)
		perf := make([]float64, len(dials))
		for k := range perf {
			perf[k] = 10 * (1 + float64(i%7)*float64(k)/200)
		}
		apps[i] = name
		curves[name] = Curve{Name: name, Dials: dials, Perf: perf}
		scores[i] = Score{Competitor: name, MB: dials[(i*7)%len(dials)]}
	}
	for _, m := range Methods {
		b.Run(string(m), func(b *testing.B) {
			for b.Loop() {
				if _, err := Matrix(curves, apps, scores, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
