package predict

import (
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"
	"testing/fstest"

	"colo/data"
)

// endToEnd scores every competitor (nearest), predicts every validated pair and returns
// the statistics, as colo predict validate does.
func endToEnd(t *testing.T, d *Dataset) Stats {
	t.Helper()
	ps, err := ValidatePairs(d, ScoreMap(ScoreAll(d, MethodNearest)), MethodNearest, ContentionFile)
	if err != nil {
		t.Fatal(err)
	}
	return ErrorStats(Errors(ps), 0)
}

// The small synthetic archives in testdata/shapes hold the same measurements in each shape
// the published Bubble-Up archives use. Worked by hand: reporter 0/4/8 MB → 100/120/150;
// a.x competes at 118 (nearest 120: 4 MB), b.y at 149 (150: 8 MB). a.x next to b.y is
// predicted 10/12.5 = 0.8, measured 0.8: ε = 0; b.y next to a.x predicted 20/20 = 1,
// measured 0.95: ε = +5 pp. So n = 2, median |ε| 2.5, P90 4.5 (linear), mean 2.5, min 0, max 5.
func TestArchiveShapesGiveTheSameStatistics(t *testing.T) {
	w := want{2, 2.5, 4.5, 4.75, 4.95, 2.5, 2.5, 0, 5}
	for _, tc := range []struct {
		shape   string
		columns map[string]string // measurement columns said in the output
		warn    string
	}{
		{"index0", nil, ""},
		{"footprint", nil, ""},
		{"onecol", nil, ""},
		{"noheader", map[string]string{
			"reporter_sensitivity.csv": "column 2 of 4 (no header; columns 3–4 not used)",
			"contentiousness.csv":      "column 2 of 4 (no header; columns 3–4 not used)"}, ""},
		{"json", map[string]string{
			"reporter_sensitivity.csv": "avg (column 2; value columns: avg rand stream)",
			"contentiousness.csv":      "avg (column 2; value columns: avg rand stream)"},
			"reporter dial points [12] MB lie beyond the sensitivity sweep"},
	} {
		t.Run(tc.shape, func(t *testing.T) {
			dir := path.Join("testdata/shapes", tc.shape)
			d, err := LoadDir(os.DirFS(dir), ".", dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Reporter.Dials) != 3 || len(d.Curves) != 2 || len(d.Contention) != 2 || len(d.Validated) != 1 {
				t.Fatalf("loaded reporter %v, %d curves, %d competitors, %d pairs", d.Reporter.Dials, len(d.Curves), len(d.Contention), len(d.Validated))
			}
			checkStats(t, tc.shape, endToEnd(t, d), w)
			if len(d.Columns) != len(tc.columns) {
				t.Errorf("columns said: %v, want %v", d.Columns, tc.columns)
			}
			for f, note := range tc.columns {
				if got := d.Columns[path.Join(dir, f)]; got != note {
					t.Errorf("%s: column note %q, want %q", f, got, note)
				}
			}
			if tc.warn != "" && !strings.Contains(strings.Join(d.Warnings, "\n"), tc.warn) {
				t.Errorf("warnings %q lack %q", d.Warnings, tc.warn)
			}
		})
	}
}

func TestMalformedArchiveNamesTheLine(t *testing.T) {
	_, err := LoadDir(os.DirFS("testdata/shapes/malformed"), ".", "m")
	if err == nil || !strings.Contains(err.Error(), "m/reporter_sensitivity.csv:5: 2 fields, want 4") {
		t.Fatalf("error %v", err)
	}
}

// reshape rewrites every file of the headline archive into another published shape.
func reshape(t *testing.T, curve, table func(lines []string) []string) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(data.FS, data.BubbleUp, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(p, ".csv") {
			return err
		}
		b, err := fs.ReadFile(data.FS, p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, data.BubbleUp+"/")
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		switch {
		case strings.HasPrefix(rel, SensitivityDir+"/"):
			lines = curve(lines)
		case rel == ReporterFile || rel == ContentionFile:
			lines = table(lines)
		}
		m[rel] = &fstest.MapFile{Data: []byte(strings.Join(lines, "\n") + "\n")}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// keepAvg keeps the first two fields (key, avg) of every data line and gives the table the
// header h (no header when h is "").
func keepAvg(h string) func([]string) []string {
	return func(lines []string) []string {
		var out []string
		if h != "" {
			out = append(out, h)
		}
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			out = append(out, f[0]+" "+f[1])
		}
		return out
	}
}

func same(lines []string) []string { return lines }

func dropHeader(lines []string) []string { return lines[1:] }

// The headline archive rewritten into each shape gives exactly the headline statistics
// (PROVENANCE.md "end to end": n 342, median 1.19, P90 6.84): no dial point or competitor is
// lost on the way.
func TestHeadlineInEveryShape(t *testing.T) {
	head := endToEnd(t, loadEmbedded(t))
	checkStats(t, "headline", head, want{342, 1.19, 6.84, 9.87, 15.49, 2.44, -0.95, -21.38, 7.72})
	for _, tc := range []struct {
		name         string
		curve, table func([]string) []string
		noted        int // files whose measurement column is said
	}{
		{"index-labelled one-column tables", same, keepAvg(" 0"), 0},
		{"footprint perf headers", func(l []string) []string { return append([]string{"footprint perf"}, l[1:]...) }, keepAvg("footprint perf"), 0},
		{"one value column, no header", dropHeader, keepAvg(""), 0},
		{"no header at all, three value columns", dropHeader, dropHeader, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := reshape(t, tc.curve, tc.table)
			d, err := LoadDir(m, ".", "reshaped")
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Curves) != 19 || len(d.Reporter.Dials) != 29 || len(d.Contention) != 19 {
				t.Fatalf("%d curves, %d reporter points, %d competitors", len(d.Curves), len(d.Reporter.Dials), len(d.Contention))
			}
			for n, c := range d.Curves {
				if len(c.Dials) != 29 {
					t.Errorf("%s: %d points", n, len(c.Dials))
				}
			}
			if got := endToEnd(t, d); got != head {
				t.Errorf("statistics %+v, headline %+v", got, head)
			}
			if len(d.Columns) != tc.noted {
				t.Errorf("columns said %v, want %d files", d.Columns, tc.noted)
			}
		})
	}
}

func TestAmbiguousColumnsAreAnError(t *testing.T) {
	_, err := ParseCurve(strings.NewReader("dial a b\n0 1 2\n4 2 3\n"), "f.csv", "x", "avg")
	if err == nil || !strings.Contains(err.Error(), `f.csv:1: no column "avg" among the value columns "a b"`) {
		t.Fatalf("error %v", err)
	}
	// An indented first line with as many fields as the rows is data, not a header: kept.
	c, err := ParseCurve(strings.NewReader(" 0 10\n4 11\n"), "f.csv", "x", "perf")
	if err != nil || len(c.Dials) != 2 {
		t.Fatalf("%+v %v", c, err)
	}
}
