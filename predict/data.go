package predict

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Files of a Bubble-Up data directory, in the thesis repository's shapes (data
// PROVENANCE.md "Files and columns"): whitespace-separated text, one record per line.
const (
	ReporterFile    = "reporter_sensitivity.csv"   // dial avg rand stream (header " avg rand stream")
	ContentionFile  = "contentiousness.csv"        // name avg rand stream (header " avg rand stream")
	ScoresFile      = "contentiousness_scores.csv" // name score_mb (no header)
	ValidatedFile   = "validated.csv"              // name1 name2 expected1 expected2 actual1 actual2
	ValidatedJSON   = "validated.json"             // older archives: [[{name, perf, actual}, {…}], …]
	SensitivityDir  = "sensitivity"                // <name with . → _>_data.csv: footprint_mb perf
	PredictionsFile = "predictions.json"           // colo's own: method, scores, predictions
	curveSuffix     = "_data.csv"
)

// CurveFileName is the sensitivity file name of an application: its name with every '.'
// replaced by '_', then "_data.csv" (600.perlbench_s → 600_perlbench_s_data.csv).
func CurveFileName(name string) string {
	return strings.ReplaceAll(name, ".", "_") + curveSuffix
}

// table is a parsed whitespace-separated file: an optional header naming the columns and
// data rows, each remembering its line number.
type table struct {
	file   string
	header []string // column names, len = columns ("" for an unnamed first column)
	rows   []row
}

type row struct {
	line   int
	fields []string
}

// readTable reads a whitespace-separated file. A first line without any number is a header
// (the thesis's archives have some files with a header and some without). Blank lines are
// skipped; every other line must have the same number of fields, or the file is rejected.
func readTable(r io.Reader, file string) (*table, error) {
	t := &table{file: file}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var headerLine []string
	first := true
	ln := 0
	indented := false // first line starts with a separator: a table written with its index
	for sc.Scan() {
		ln++
		text := sc.Text()
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if first {
			first = false
			// A header is a line without any number: "footprint_mb perf", " avg rand
			// stream", "name1 name2 expected1 …". Data rows always hold numbers.
			isHeader := true
			for _, x := range f {
				if _, err := strconv.ParseFloat(x, 64); err == nil {
					isHeader = false
					break
				}
			}
			if isHeader {
				headerLine = f
				continue
			}
			indented = text[0] == ' ' || text[0] == '\t'
		}
		t.rows = append(t.rows, row{ln, f})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(t.rows) == 0 {
		return nil, fmt.Errorf("%s: no data rows", file)
	}
	// A one-column table written with its index (pandas' to_csv with a space separator)
	// starts with a line such as " 0": a separator, then the column labels, which may be
	// numbers. Data rows never start with a separator. Such a first line with one field
	// fewer than the next row is the header, its first (index) column unnamed.
	if indented && len(t.rows) > 1 && len(t.rows[0].fields) == len(t.rows[1].fields)-1 {
		headerLine = t.rows[0].fields
		t.rows = t.rows[1:]
	}
	n := len(t.rows[0].fields)
	for _, r := range t.rows {
		if len(r.fields) != n {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d like line %d (%q)", file, r.line, len(r.fields), n, t.rows[0].line, strings.Join(r.fields, " "))
		}
	}
	switch {
	case headerLine == nil:
	case len(headerLine) == n:
		t.header = headerLine
	case len(headerLine) == n-1: // " avg rand stream": the first column is unnamed
		t.header = append([]string{""}, headerLine...)
	default:
		return nil, fmt.Errorf("%s:1: header has %d names for %d columns", file, len(headerLine), n)
	}
	return t, nil
}

// col returns the index of the named column, or def when the file has no header.
func (t *table) col(name string, def int) (int, error) {
	if t.header == nil {
		if def >= len(t.rows[0].fields) {
			return 0, fmt.Errorf("%s: no header and only %d columns; want column %d (%s)", t.file, len(t.rows[0].fields), def+1, name)
		}
		return def, nil
	}
	for i, h := range t.header {
		if h == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s:1: no column %q in header %q", t.file, name, strings.Join(t.header, " "))
}

// measure picks the measurement column among the value columns (all but the first, which
// holds the dial or the name). The first of prefer that the header names wins ("avg" for
// reporter latencies, the thesis's Type-3 score; "perf" for sensitivity curves). A file
// with a single value column uses it whatever its label (" 0", "perf"). A header naming
// several value columns but none of prefer is ambiguous: an error. Without a header,
// column 2 is used (where the thesis's files keep avg or perf). The returned note says
// which column was used when the file has several value columns, "" otherwise.
func (t *table) measure(prefer ...string) (int, string, error) {
	n := len(t.rows[0].fields)
	if n < 2 {
		return 0, "", fmt.Errorf("%s:%d: want a dial or name and a measurement", t.file, t.rows[0].line)
	}
	several := n > 2
	if t.header == nil {
		note := ""
		if several {
			note = fmt.Sprintf("column 2 of %d (no header; columns 3–%d not used)", n, n)
		}
		return 1, note, nil
	}
	names := strings.Join(t.header[1:], " ")
	for _, p := range prefer {
		for i := 1; i < n; i++ {
			if t.header[i] == p {
				note := ""
				if several {
					note = fmt.Sprintf("%s (column %d; value columns: %s)", p, i+1, names)
				}
				return i, note, nil
			}
		}
	}
	if !several {
		return 1, "", nil
	}
	return 0, "", fmt.Errorf("%s:1: no column %q among the value columns %q; several value columns and none is the measurement", t.file, strings.Join(prefer, `" or "`), names)
}

// num parses field i of r as a finite number.
func (t *table) num(r row, i int, what string) (float64, error) {
	v, err := strconv.ParseFloat(r.fields[i], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s:%d: %s %q is not a finite number", t.file, r.line, what, r.fields[i])
	}
	return v, nil
}

// ParseCurve reads a curve file: rows "dial perf [more columns]", with or without a header
// line. column names the performance column when the file has a header ("perf" for
// sensitivity curves, "avg" for the reporter curve); without a header it is column 2.
// Every data row becomes a point or an error naming file and line: no point is dropped.
// Dials must be ≥ 0 and distinct; performance values must be > 0.
func ParseCurve(r io.Reader, file, name, column string) (Curve, error) {
	c, _, err := ParseCurveColumn(r, file, name, column)
	return c, err
}

// ParseCurveColumn is ParseCurve that also returns which column was used as the
// measurement when the file has several value columns ("" when it has one); see
// table.measure for the rules.
func ParseCurveColumn(r io.Reader, file, name, column string) (Curve, string, error) {
	t, err := readTable(r, file)
	if err != nil {
		return Curve{}, "", err
	}
	if len(t.rows[0].fields) < 2 {
		return Curve{}, "", fmt.Errorf("%s:%d: a curve row needs a dial and a performance value", file, t.rows[0].line)
	}
	pc, note, err := t.measure(column)
	if err != nil {
		return Curve{}, "", err
	}
	c, err := curveRows(t, name, pc)
	return c, note, err
}

// Dial bounds, checked when a curve is read: at most MaxDials points, each dial 0 or in
// [MinDial, MaxDial] MB (a bubble smaller than a kilobyte or larger than a terabyte is
// not a measurement).
const (
	MaxDials = 10000
	MinDial  = 1e-3
	MaxDial  = 1e6
)

func curveRows(t *table, name string, pc int) (Curve, error) {
	file := t.file
	c := Curve{Name: name, File: file}
	seen := map[float64]int{}
	if len(t.rows) > MaxDials {
		return Curve{}, fmt.Errorf("%s:%d: %d dial rows: at most %d", file, t.rows[MaxDials].line, len(t.rows), MaxDials)
	}
	for _, r := range t.rows {
		d, err := t.num(r, 0, "dial")
		if err != nil {
			return Curve{}, err
		}
		if d < 0 {
			return Curve{}, fmt.Errorf("%s:%d: dial %v MB is negative", file, r.line, d)
		}
		if d != 0 && (d < MinDial || d > MaxDial) {
			return Curve{}, fmt.Errorf("%s:%d: dial %v MB is out of range: 0 or %g to %g MB", file, r.line, d, MinDial, MaxDial)
		}
		if prev, ok := seen[d]; ok {
			return Curve{}, fmt.Errorf("%s:%d: dial %v MB appears twice (also line %d); keep one measurement per dial", file, r.line, d, prev)
		}
		seen[d] = r.line
		p, err := t.num(r, pc, "performance")
		if err != nil {
			return Curve{}, err
		}
		if p <= 0 {
			return Curve{}, fmt.Errorf("%s:%d: performance %v must be > 0 (a latency or execution time)", file, r.line, p)
		}
		c.Dials = append(c.Dials, d)
		c.Perf = append(c.Perf, p)
	}
	c.sortByDial()
	if c.Dials[0] != 0 {
		return Curve{}, fmt.Errorf("%s: no 0 MB point; the isolated run (dial 0) is what predictions are normalised to", file)
	}
	return c, nil
}

// Measurement is one competitor's reporter latency (contentiousness.csv "avg").
type Measurement struct {
	Name    string
	Latency float64
	File    string
	Line    int
}

// Validated is one row of validated.csv: predicted (expected) and measured (actual)
// normalised performance of Name1 next to Name2 and of Name2 next to Name1.
type Validated struct {
	Name1, Name2           string
	Expected1, Expected2   float64
	Actual1, Actual2       float64
	HasExpected, HasActual bool
	Line                   int
}

// Dataset is a Bubble-Up data directory loaded in memory.
type Dataset struct {
	Source      string // directory (or "embedded:bubbleup-spec2017")
	Reporter    Curve
	Curves      map[string]Curve // sensitivity curves by application name
	Contention  []Measurement    // in file order
	Recorded    map[string]float64
	Validated   []Validated
	HasRecorded bool
	Warnings    []string
	// Columns names, per file with several value columns, the one used as the
	// measurement (reporter_sensitivity.csv → "avg (column 2; value columns: avg rand
	// stream)"). Files with a single value column are not listed.
	Columns map[string]string
	// ValidatedPath is the file the measured co-runs came from (validated.csv or .json).
	ValidatedPath string
}

// Names returns the application names that have sensitivity curves, sorted.
func (d *Dataset) Names() []string {
	out := make([]string, 0, len(d.Curves))
	for n := range d.Curves {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Latencies returns the competitor → reporter latency map.
func (d *Dataset) Latencies() map[string]float64 {
	m := map[string]float64{}
	for _, c := range d.Contention {
		m[c.Name] = c.Latency
	}
	return m
}

// LoadDir loads a data directory from fsys (os.DirFS(dir) or the embedded data.FS).
// Required: reporter_sensitivity.csv and sensitivity/*_data.csv. Optional:
// contentiousness.csv, contentiousness_scores.csv, validated.csv. Every sensitivity curve
// must have every dial of the reporter curve (missing points are an error naming the file).
func LoadDir(fsys fs.FS, dir, source string) (*Dataset, error) {
	d := &Dataset{Source: source, Curves: map[string]Curve{}, Recorded: map[string]float64{}}
	open := func(name string) (io.ReadCloser, string, error) {
		p := path.Join(dir, name)
		f, err := fsys.Open(p)
		return f, path.Join(source, name), err
	}
	f, file, err := open(ReporterFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: a Bubble-Up data directory needs %s (dial avg rand stream) and %s/*%s", source, errors.Unwrap(err), ReporterFile, SensitivityDir, curveSuffix)
	}
	var note string
	d.Reporter, note, err = ParseCurveColumn(f, file, "reporter", "avg")
	f.Close()
	if err != nil {
		return nil, err
	}
	d.column(file, note)
	if gaps := d.Reporter.Gaps(); len(gaps) > 0 {
		return nil, fmt.Errorf("%s: dial points missing from an evenly spaced grid: %v MB; measure them (colo predict train-reporter --dials ...)", file, gaps)
	}
	if w := d.Reporter.MonotoneWarning(); w != "" {
		d.Warnings = append(d.Warnings, w)
	}
	// Names known from the other files map file stems back to names with dots.
	known := map[string]string{}
	if f, file, err := open(ContentionFile); err == nil {
		d.Contention, note, err = parseContention(f, file)
		f.Close()
		if err != nil {
			return nil, err
		}
		d.column(file, note)
		for _, m := range d.Contention {
			known[strings.ReplaceAll(m.Name, ".", "_")] = m.Name
		}
	}
	if f, file, err := open(ScoresFile); err == nil {
		d.Recorded, err = parseScores(f, file)
		f.Close()
		if err != nil {
			return nil, err
		}
		d.HasRecorded = true
		for n := range d.Recorded {
			known[strings.ReplaceAll(n, ".", "_")] = n
		}
	}
	f, file, err = open(ValidatedFile)
	parse := parseValidated
	if err != nil {
		f, file, err = open(ValidatedJSON)
		parse = parseValidatedJSON
	}
	if err == nil {
		d.Validated, err = parse(f, file)
		d.ValidatedPath = file
		f.Close()
		if err != nil {
			return nil, err
		}
		for _, v := range d.Validated {
			known[strings.ReplaceAll(v.Name1, ".", "_")] = v.Name1
			known[strings.ReplaceAll(v.Name2, ".", "_")] = v.Name2
		}
	}
	// The sweep of a sensitivity curve may stop below the reporter's last dial (an archive
	// whose reporter was trained one step further): those reporter points cannot score a
	// competitor (no curve value there), so scoring uses the common range, said in a warning.
	var curvesTop float64
	var topFile string
	entries, err := fs.ReadDir(fsys, path.Join(dir, SensitivityDir))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: a Bubble-Up data directory needs %s/<name>%s files", path.Join(source, SensitivityDir), errors.Unwrap(err), SensitivityDir, curveSuffix)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), curveSuffix) {
			if !e.IsDir() {
				d.Warnings = append(d.Warnings, fmt.Sprintf("%s: ignored (not a <name>%s curve file)", path.Join(source, SensitivityDir, e.Name()), curveSuffix))
			}
			continue
		}
		stem := strings.TrimSuffix(e.Name(), curveSuffix)
		name, ok := known[stem]
		if !ok {
			name = stem
		}
		f, file, err := open(path.Join(SensitivityDir, e.Name()))
		if err != nil {
			return nil, err
		}
		c, note, err := ParseCurveColumn(f, file, name, "perf")
		f.Close()
		if err != nil {
			return nil, err
		}
		d.column(file, note)
		top := c.Dials[len(c.Dials)-1]
		if missing := c.MissingDials(d.Reporter.Dials); len(missing) > 0 && missing[0] < top {
			return nil, fmt.Errorf("%s: dial points %v MB are missing (the reporter curve has them); re-run colo predict profile for %s", file, missing, name)
		}
		if len(d.Curves) == 0 || top < curvesTop {
			curvesTop, topFile = top, file
		}
		if extra := c.ExtraDials(d.Reporter.Dials); len(extra) > 0 {
			d.Warnings = append(d.Warnings, fmt.Sprintf("%s: dial points %v MB are not on the reporter's grid; nearest-neighbour scoring never selects them, interpolation uses them", file, extra))
		}
		d.Curves[name] = c
	}
	if len(d.Curves) == 0 {
		return nil, fmt.Errorf("%s: no sensitivity curves (%s/<name>%s)", source, SensitivityDir, curveSuffix)
	}
	if r := d.Reporter; r.Dials[len(r.Dials)-1] > curvesTop {
		k := sort.SearchFloat64s(r.Dials, curvesTop+1e-9)
		d.Warnings = append(d.Warnings, fmt.Sprintf("%s: reporter dial points %v MB lie beyond the sensitivity sweep (%s stops at %v MB); scoring uses the reporter's 0–%v MB points only",
			r.File, r.Dials[k:], topFile, curvesTop, curvesTop))
		d.Reporter.Dials, d.Reporter.Perf = r.Dials[:k:k], r.Perf[:k:k]
	}
	return d, nil
}

// column records the measurement column of a file with several value columns.
func (d *Dataset) column(file, note string) {
	if note == "" {
		return
	}
	if d.Columns == nil {
		d.Columns = map[string]string{}
	}
	d.Columns[file] = note
}

func parseContention(r io.Reader, file string) ([]Measurement, string, error) {
	t, err := readTable(r, file)
	if err != nil {
		return nil, "", err
	}
	ac, note, err := t.measure("avg")
	if err != nil {
		return nil, "", err
	}
	var out []Measurement
	seen := map[string]int{}
	for _, r := range t.rows {
		if ac >= len(r.fields) || len(r.fields) < 2 {
			return nil, "", fmt.Errorf("%s:%d: want a name and a reporter latency", file, r.line)
		}
		v, err := t.num(r, ac, "reporter latency")
		if err != nil {
			return nil, "", err
		}
		if v <= 0 {
			return nil, "", fmt.Errorf("%s:%d: reporter latency %v must be > 0", file, r.line, v)
		}
		n := r.fields[0]
		if prev, ok := seen[n]; ok {
			return nil, "", fmt.Errorf("%s:%d: competitor %s appears twice (also line %d)", file, r.line, n, prev)
		}
		seen[n] = r.line
		out = append(out, Measurement{Name: n, Latency: v, File: file, Line: r.line})
	}
	return out, note, nil
}

func parseScores(r io.Reader, file string) (map[string]float64, error) {
	t, err := readTable(r, file)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, r := range t.rows {
		if len(r.fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"name score_mb\"", file, r.line)
		}
		v, err := t.num(r, 1, "score")
		if err != nil {
			return nil, err
		}
		if v < 0 {
			return nil, fmt.Errorf("%s:%d: score %v MB is negative", file, r.line, v)
		}
		out[r.fields[0]] = v
	}
	return out, nil
}

func parseValidated(r io.Reader, file string) ([]Validated, error) {
	t, err := readTable(r, file)
	if err != nil {
		return nil, err
	}
	if t.header == nil {
		return nil, fmt.Errorf("%s:1: want the header \"name1 name2 expected1 expected2 actual1 actual2\"", file)
	}
	idx := map[string]int{}
	for _, c := range []string{"name1", "name2", "expected1", "expected2", "actual1", "actual2"} {
		i, err := t.col(c, -1)
		if err != nil {
			return nil, err
		}
		idx[c] = i
	}
	var out []Validated
	for _, r := range t.rows {
		v := Validated{Name1: r.fields[idx["name1"]], Name2: r.fields[idx["name2"]], Line: r.line, HasExpected: true, HasActual: true}
		for _, p := range []struct {
			col string
			dst *float64
		}{{"expected1", &v.Expected1}, {"expected2", &v.Expected2}, {"actual1", &v.Actual1}, {"actual2", &v.Actual2}} {
			x, err := t.num(r, idx[p.col], p.col)
			if err != nil {
				return nil, err
			}
			if x <= 0 {
				return nil, fmt.Errorf("%s:%d: %s %v must be > 0 (normalised performance)", file, r.line, p.col, x)
			}
			*p.dst = x
		}
		if v.Name1 == v.Name2 {
			return nil, fmt.Errorf("%s:%d: %s paired with itself", file, r.line, v.Name1)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseValidatedJSON reads the older archives' validated.json: a list of pairs, each two
// objects {"name", "perf", "actual"}, where perf is the prediction for name with the other
// as competitor and actual the measured normalised performance. Line is the line where
// the pair starts.
func parseValidatedJSON(r io.Reader, file string) ([]Validated, error) {
	raw, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	type side struct {
		Name   string   `json:"name"`
		Perf   *float64 `json:"perf"`
		Actual *float64 `json:"actual"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	lineAt := func(off int64) int { return 1 + bytes.Count(raw[:off], []byte("\n")) }
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("%s:1: want a JSON list of pairs [[{name, perf, actual}, {…}], …]", file)
	}
	var out []Validated
	for dec.More() {
		off := dec.InputOffset()
		var pair []side
		if err := dec.Decode(&pair); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, lineAt(dec.InputOffset()), err)
		}
		ln := lineAt(off) + 1
		if len(pair) != 2 {
			return nil, fmt.Errorf("%s:%d: a pair has %d entries, want 2", file, ln, len(pair))
		}
		for _, p := range pair {
			if p.Name == "" || p.Perf == nil || p.Actual == nil {
				return nil, fmt.Errorf("%s:%d: want name, perf and actual in each entry", file, ln)
			}
			for _, x := range []float64{*p.Perf, *p.Actual} {
				if !(x > 0) || math.IsInf(x, 0) {
					return nil, fmt.Errorf("%s:%d: %s: %v must be > 0 (normalised performance)", file, ln, p.Name, x)
				}
			}
		}
		if pair[0].Name == pair[1].Name {
			return nil, fmt.Errorf("%s:%d: %s paired with itself", file, ln, pair[0].Name)
		}
		out = append(out, Validated{Name1: pair[0].Name, Name2: pair[1].Name,
			Expected1: *pair[0].Perf, Expected2: *pair[1].Perf, Actual1: *pair[0].Actual, Actual2: *pair[1].Actual,
			HasExpected: true, HasActual: true, Line: ln})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no pairs", file)
	}
	return out, nil
}

// ParseReporterTable reads a reporter table (reporter_sensitivity.csv or
// contentiousness.csv shape: " avg f1 f2 …" header, then "key avg f1 f2 …") back into rows.
func ParseReporterTable(r io.Reader, file string) ([]ReporterRow, error) {
	t, err := readTable(r, file)
	if err != nil {
		return nil, err
	}
	if t.header == nil {
		return nil, fmt.Errorf("%s:1: want a header \" avg …\"", file)
	}
	ac, err := t.col("avg", 1)
	if err != nil {
		return nil, err
	}
	var out []ReporterRow
	for _, r := range t.rows {
		row := ReporterRow{Key: r.fields[0], Functions: map[string]float64{}}
		for i := 1; i < len(r.fields); i++ {
			v, err := t.num(r, i, t.header[i])
			if err != nil {
				return nil, err
			}
			if i == ac {
				row.Avg = v
			} else {
				row.Functions[t.header[i]] = v
			}
		}
		out = append(out, row)
	}
	return out, nil
}
