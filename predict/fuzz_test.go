package predict

import (
	"bytes"
	"io/fs"
	"testing"

	"colo/data"
)

// FuzzParseCurve: a Bubble-Up curve file (sensitivity/*_data.csv, reporter_sensitivity.csv)
// never panics or exhausts memory (issue #13: dials 0, 2e-30, 3e-300 did); an accepted
// curve is bounded and its gap report stays small.
func FuzzParseCurve(f *testing.F) {
	for _, p := range []string{"bubbleup-spec2017/reporter_sensitivity.csv"} {
		if b, err := fs.ReadFile(data.FS, p); err == nil {
			f.Add(b)
		}
	}
	if ms, _ := fs.Glob(data.FS, "bubbleup-spec2017/sensitivity/*_data.csv"); len(ms) > 0 {
		b, _ := fs.ReadFile(data.FS, ms[0])
		f.Add(b)
	}
	f.Add([]byte("dial avg\n0 100\n2e-30 101\n3e-300 102\n"))
	f.Add([]byte("0 1\n.001 1\n.002 1\n.003 1\n100000 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, col := range []string{"perf", "avg"} {
			c, err := ParseCurve(bytes.NewReader(b), "c.csv", "c", col)
			if err != nil {
				continue
			}
			if len(c.Dials) > MaxDials || len(c.Dials) != len(c.Perf) {
				t.Fatalf("accepted %d dials, %d values", len(c.Dials), len(c.Perf))
			}
			for _, d := range c.Dials {
				if d != 0 && (d < MinDial || d > MaxDial) {
					t.Fatalf("accepted dial %v", d)
				}
			}
			if g := c.Gaps(); len(g) > MaxDials {
				t.Fatalf("%d gaps", len(g))
			}
		}
	})
}

// FuzzParseReporterTable: reporter and contentiousness tables never panic the parser.
func FuzzParseReporterTable(f *testing.F) {
	for _, p := range []string{"bubbleup-spec2017/reporter_sensitivity.csv", "bubbleup-spec2017/contentiousness.csv"} {
		if b, err := fs.ReadFile(data.FS, p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseReporterTable(bytes.NewReader(b), "r.csv")
	})
}
