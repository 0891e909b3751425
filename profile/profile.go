// Package profile holds per-ways performance profiles of applications: one table per
// benchmark with one row per LLC way count (1..W), in the metrics.csv format of the
// PBBCache data set (../data/pbbcache-skylake/PROVENANCE.md), plus the workloads-file
// format (one workload per line, comma-separated benchmark names).
//
// Loading is strict: a missing column, a non-numeric or non-finite cell, a gap or a
// duplicate in the way counts, an unknown benchmark name — each is an error naming the
// file, the line and the value, and nothing is returned from partial data.
//
// A Table is also what the simulator uses as a "table workload": Table.At interpolates
// any column at a fractional way count (MODEL.md §3.2).
package profile

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"

	"colo/data"
	"colo/internal/inputfile"
	"colo/metric"

	"colo/internal/fileerr"
)

// Column identifies one per-ways metric of a Table.
type Column int

// The metrics.csv columns (PROVENANCE.md "Files and columns"), then the derived slowdown.
const (
	IPC            Column = iota // instructions per cycle
	LLCRPKI                      // LLC references per kilo-instruction
	LLCMPKI                      // LLC misses per kilo-instruction
	LLCRPKC                      // LLC references per kilo-cycle
	LLCMPKC                      // LLC misses per kilo-cycle
	LLCUsageKB                   // average LLC occupancy, KB
	BandwidthMBps                // solo memory bandwidth, MB/s (the one the model uses)
	LLCMBandwidth                // bandwidth implied by LLC misses, MB/s
	StallsL2Miss                 // fraction of cycles stalled on an outstanding L2 miss
	StallsL3Miss                 // fraction of cycles stalled on an outstanding L3 miss
	StallsTotal                  // fraction of cycles with no µops executed
	StallsStoreBuf               // fraction of cycles stalled on a full store buffer
	// Slowdown is the cache-only slowdown S(w) = max_v IPC(v) / IPC(w), derived at load.
	Slowdown
	numColumns
)

// csvNames are the metrics.csv header names of the measured columns, in Column order.
var csvNames = [...]string{"ipc", "llcrpki", "llcmpki", "llcrpkc", "llcmpkc", "llc_usage_kb",
	"bandwidth_mbps", "llcm_bandwidth", "stalls_l2_miss", "stalls_l3_miss", "stalls_total", "stalls_store_buf"}

// String is the metrics.csv name of the column ("slowdown" for the derived one).
func (c Column) String() string {
	if c == Slowdown {
		return "slowdown"
	}
	if c >= 0 && int(c) < len(csvNames) {
		return csvNames[c]
	}
	return fmt.Sprintf("Column(%d)", int(c))
}

// Table is the per-ways profile of one application.
type Table struct {
	Name string
	// cols[c][w-1] is column c at w ways, w = 1..Ways().
	cols [numColumns][]float64
}

// NewTable builds a table from per-ways columns given as measured (each slice indexed by
// ways−1, all the same length ≥ 1; Slowdown is derived and must not be given). It is the
// constructor for profiles that do not come from a CSV file (tests, analytic models).
func NewTable(name string, cols map[Column][]float64) (*Table, error) {
	t := &Table{Name: name}
	n := -1
	for c := IPC; c < Slowdown; c++ {
		v, ok := cols[c]
		if !ok {
			return nil, fmt.Errorf("profile %q: column %s missing", name, c)
		}
		if n >= 0 && len(v) != n {
			return nil, fmt.Errorf("profile %q: column %s has %d rows, want %d", name, c, len(v), n)
		}
		n = len(v)
		for w, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("profile %q: column %s at %d ways is %v", name, c, w+1, x)
			}
		}
		t.cols[c] = append([]float64(nil), v...)
	}
	if _, ok := cols[Slowdown]; ok {
		return nil, fmt.Errorf("profile %q: slowdown is derived from ipc, do not give it", name)
	}
	if n < 1 {
		return nil, fmt.Errorf("profile %q: no rows", name)
	}
	if err := t.derive(); err != nil {
		return nil, err
	}
	return t, nil
}

// derive computes the slowdown column: S(w) = IPC_max / IPC(w) with IPC_max the highest
// IPC anywhere in the table, not necessarily at W ways (MODEL.md §2; seed001.md §1.2).
func (t *Table) derive() error {
	ipc := t.cols[IPC]
	mx := 0.0
	for w, x := range ipc {
		if x <= 0 {
			return fmt.Errorf("profile %q: ipc at %d ways is %v, must be > 0", t.Name, w+1, x)
		}
		mx = math.Max(mx, x)
	}
	s := make([]float64, len(ipc))
	for w, x := range ipc {
		s[w] = metric.Slowdown(mx, x)
	}
	t.cols[Slowdown] = s
	return nil
}

// Ways is the number of way counts in the table (W).
func (t *Table) Ways() int { return len(t.cols[IPC]) }

// Col returns column c indexed by ways−1. The slice is shared: do not modify it.
func (t *Table) Col(c Column) []float64 { return t.cols[c] }

// Value is column c at an integer way count w (1..Ways()).
func (t *Table) Value(c Column, w int) float64 { return t.cols[c][w-1] }

// At is column c at a fractional allocation of f ways (see Interp).
func (t *Table) At(c Column, f float64) float64 { return Interp(t.cols[c], f) }

// Interp evaluates a per-ways curve v (v[w−1] is the value at w ways) at a fractional way
// count f, as PBBCache does (MODEL.md §3.2; seed001.md §1.5 get_scurves):
//
//	f ≥ 1:      X(f) = (1 − φ)·X(⌊f⌋) + φ·X(⌊f⌋+1),  φ = f − ⌊f⌋  (an integer f, or f ≥ W, uses the row)
//	0 ≤ f < 1:  X(f) = (1 − f)·X₀ + f·X(1),  X₀ = 2·X(1) − X(2), and X₀ ≤ 0 replaced by 10⁻⁶
//
// i.e. below one way the line through the 1- and 2-way values is extended to 0 ways.
// With a single row, X₀ = X(1). Beyond W the curve is held at X(W).
func Interp(v []float64, f float64) float64 {
	n := len(v)
	if f >= float64(n) {
		return v[n-1]
	}
	if f < 1 {
		x0 := v[0]
		if n > 1 {
			x0 = 2*v[0] - v[1]
		}
		if x0 <= 0 {
			x0 = 1e-6
		}
		if f < 0 {
			f = 0
		}
		return (1-f)*x0 + f*v[0]
	}
	i := int(f)
	phi := f - float64(i)
	if phi == 0 {
		return v[i-1]
	}
	return (1-phi)*v[i-1] + phi*v[i]
}

// Set is a collection of tables with the same number of ways, keyed by benchmark name.
type Set struct {
	Source string // file name the set was read from (for messages)
	tables map[string]*Table
	names  []string
	ways   int
}

// Ways is the common number of way counts of every table in the set.
func (s *Set) Ways() int { return s.ways }

// Names lists the benchmarks, sorted.
func (s *Set) Names() []string { return append([]string(nil), s.names...) }

// Get returns the table of a benchmark, or an error naming the set and listing a few names.
func (s *Set) Get(name string) (*Table, error) {
	t, ok := s.tables[name]
	if !ok {
		return nil, fmt.Errorf("unknown benchmark %q: not in %s (%d benchmarks, e.g. %s)",
			name, s.Source, len(s.names), strings.Join(s.names[:min(5, len(s.names))], ", "))
	}
	return t, nil
}

// Lookup resolves a workload (names in order; duplicates are distinct instances, as in
// PBBCache) to tables.
func (s *Set) Lookup(names []string) ([]*Table, error) {
	out := make([]*Table, len(names))
	for i, n := range names {
		t, err := s.Get(n)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// NewSet builds a set from tables (all with the same number of ways, distinct names).
func NewSet(source string, tables ...*Table) (*Set, error) {
	s := &Set{Source: source, tables: map[string]*Table{}}
	for _, t := range tables {
		if _, dup := s.tables[t.Name]; dup {
			return nil, fmt.Errorf("%s: benchmark %q given twice", source, t.Name)
		}
		if s.ways == 0 {
			s.ways = t.Ways()
		} else if t.Ways() != s.ways {
			return nil, fmt.Errorf("%s: benchmark %q has %d way counts, others have %d", source, t.Name, t.Ways(), s.ways)
		}
		s.tables[t.Name] = t
		s.names = append(s.names, t.Name)
	}
	if len(s.names) == 0 {
		return nil, fmt.Errorf("%s: no benchmarks", source)
	}
	sort.Strings(s.names)
	return s, nil
}

// Default loads the embedded PBBCache Skylake data set (data.FS, data.PBBCacheMetrics).
func Default() (*Set, error) { return LoadFS(data.FS, data.PBBCacheMetrics) }

// LoadFS loads a metrics.csv-format file from a file system.
func LoadFS(fsys fs.FS, name string) (*Set, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	return Parse(bytes.NewReader(b), name)
}

// LoadFile loads a metrics.csv-format file from disk.
func LoadFile(path string) (*Set, error) {
	f, err := inputfile.Open(path, inputfile.Table)
	if err != nil {
		return nil, fmt.Errorf("profiles: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

// Error is a located input error: file, 1-based line (0 when not tied to a line), message.
type Error = fileerr.Error

func errAt(file string, line int, msg string) *Error {
	return &Error{File: file, Line: line, Msg: msg}
}

// Parse reads a metrics.csv-format table: a header with BENCH, NR_WAYS and the twelve
// metric columns (any order; extra columns are ignored; a table without stalls_l3_miss may
// give stalls_ldm_pending instead, as PBBCache accepts, MODEL.md §4.3), then one row per
// (benchmark, way count) in any order. Every benchmark must have the rows 1..W, with the
// same W for all. Errors name the file, line and offending value.
func Parse(r io.Reader, file string) (*Set, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errAt(file, 0, "empty file: want a metrics.csv header (BENCH,NR_WAYS,ipc,...)")
		}
		return nil, csvErr(file, err)
	}
	idx := map[string]int{}
	for i, h := range header {
		idx[strings.TrimSpace(h)] = i
	}
	need := append([]string{"BENCH", "NR_WAYS"}, csvNames[:]...)
	var colIdx [Slowdown]int
	var missing []string
	for _, h := range need {
		if _, ok := idx[h]; !ok {
			if h == "stalls_l3_miss" {
				if _, ok := idx["stalls_ldm_pending"]; ok {
					continue
				}
			}
			missing = append(missing, h)
		}
	}
	if len(missing) > 0 {
		return nil, errAt(file, 1, fmt.Sprintf("missing column(s) %s in header %q", strings.Join(missing, ", "), strings.Join(header, ",")))
	}
	for c := IPC; c < Slowdown; c++ {
		i, ok := idx[csvNames[c]]
		if !ok && c == StallsL3Miss {
			i = idx["stalls_ldm_pending"]
		}
		colIdx[c] = i
	}
	type rowv struct {
		line int
		v    [Slowdown]float64
	}
	rows := map[string]map[int]rowv{}
	var order []string
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvErr(file, err)
		}
		line, _ := cr.FieldPos(0)
		bench := strings.TrimSpace(rec[idx["BENCH"]])
		if bench == "" {
			return nil, errAt(file, line, "empty BENCH name")
		}
		ws := strings.TrimSpace(rec[idx["NR_WAYS"]])
		w, err := strconv.Atoi(ws)
		if err != nil || w < 1 || w > 64 {
			return nil, errAt(file, line, fmt.Sprintf("NR_WAYS %q is not an integer in 1..64", ws))
		}
		var rv rowv
		rv.line = line
		for c := IPC; c < Slowdown; c++ {
			cell := strings.TrimSpace(rec[colIdx[c]])
			x, err := strconv.ParseFloat(cell, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, errAt(file, line, fmt.Sprintf("column %s of %s at %d ways: %q is not a finite number", c, bench, w, cell))
			}
			if x < 0 {
				return nil, errAt(file, line, fmt.Sprintf("column %s of %s at %d ways: %q is negative", c, bench, w, cell))
			}
			if c == IPC && x == 0 {
				return nil, errAt(file, line, fmt.Sprintf("column ipc of %s at %d ways: %q must be > 0", bench, w, cell))
			}
			rv.v[c] = x
		}
		m := rows[bench]
		if m == nil {
			m = map[int]rowv{}
			rows[bench] = m
			order = append(order, bench)
		}
		if prev, dup := m[w]; dup {
			return nil, errAt(file, line, fmt.Sprintf("duplicate row for %s at %d ways (first at line %d)", bench, w, prev.line))
		}
		m[w] = rv
	}
	if len(order) == 0 {
		return nil, errAt(file, 0, "no data rows")
	}
	sort.Strings(order)
	var tables []*Table
	W := 0
	for _, b := range order {
		m := rows[b]
		mx := 0
		for w := range m {
			mx = max(mx, w)
		}
		for w := 1; w <= mx; w++ {
			if _, ok := m[w]; !ok {
				return nil, errAt(file, 0, fmt.Sprintf("benchmark %s: gap in way counts, no row for %d ways (has up to %d)", b, w, mx))
			}
		}
		if W == 0 {
			W = mx
		} else if mx != W {
			return nil, errAt(file, m[mx].line, fmt.Sprintf("benchmark %s has way counts 1..%d, others 1..%d", b, mx, W))
		}
		t := &Table{Name: b}
		for c := IPC; c < Slowdown; c++ {
			t.cols[c] = make([]float64, mx)
			for w := 1; w <= mx; w++ {
				t.cols[c][w-1] = m[w].v[c]
			}
		}
		if err := t.derive(); err != nil {
			return nil, errAt(file, 0, err.Error())
		}
		tables = append(tables, t)
	}
	return NewSet(file, tables...)
}

func csvErr(file string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return errAt(file, pe.Line, pe.Err.Error())
	}
	return errAt(file, 0, err.Error())
}

// Workload is one line of a workloads file.
type Workload struct {
	Line  int      // 1-based line in the file
	Names []string // benchmark names in order; duplicates are distinct instances
}

// ParseWorkloads reads a workloads file: one workload per line, benchmark names separated
// by commas (PBBCache's workloads.csv; the last line may lack a newline). Blank lines and
// lines starting with '#' are skipped. An empty name (",," or a trailing comma) is an error
// naming the line. If set is not nil, every name must be in it.
func ParseWorkloads(r io.Reader, file string, set *Set) ([]Workload, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, errAt(file, 0, err.Error())
	}
	var out []Workload
	for i, line := range strings.Split(string(b), "\n") {
		ln := i + 1
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		names, err := SplitWorkload(line)
		if err != nil {
			return nil, errAt(file, ln, err.Error())
		}
		if set != nil {
			for _, n := range names {
				if _, err := set.Get(n); err != nil {
					return nil, errAt(file, ln, err.Error())
				}
			}
		}
		out = append(out, Workload{Line: ln, Names: names})
	}
	if len(out) == 0 {
		return nil, errAt(file, 0, "no workloads (want one comma-separated list of benchmark names per line)")
	}
	return out, nil
}

// MaxApps bounds the applications of one workload: every search over a workload's
// partitions grows with it, and no machine colo models has more cores to run them on.
const MaxApps = 1024

// SplitWorkload splits "a,b,c" into names; empty names and spaces inside names are errors.
func SplitWorkload(s string) ([]string, error) {
	if n := strings.Count(s, ",") + 1; n > MaxApps {
		return nil, fmt.Errorf("workload of %d applications: at most %d", n, MaxApps)
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("workload %q: empty name at position %d (want name,name,...)", s, i+1)
		}
		if strings.ContainsAny(p, " \t") {
			return nil, fmt.Errorf("workload %q: name %q contains a space (separate names by commas)", s, p)
		}
		parts[i] = p
	}
	return parts, nil
}

// LoadWorkloadsFile reads a workloads file from disk (see ParseWorkloads).
func LoadWorkloadsFile(path string, set *Set) ([]Workload, error) {
	f, err := inputfile.Open(path, inputfile.Table)
	if err != nil {
		return nil, fmt.Errorf("workloads: %w", err)
	}
	defer f.Close()
	return ParseWorkloads(f, path, set)
}
