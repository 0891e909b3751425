package export

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"colo/store"
)

// Formats are the accepted --format values.
var Formats = []string{"csv", "json", "parquet"}

// Ext is the file extension of a format.
func Ext(format string) string {
	if format == "json" {
		return ".jsonl"
	}
	return "." + format
}

// File is one written table.
type File struct {
	Table string
	Path  string
	Rows  int64
	Bytes int64
}

// chunk is how many rows are buffered before they go to a writer.
const chunk = 8192

// Export writes every table of the run directory to outDir in format, one file per table
// (<table>.csv, <table>.jsonl or <table>.parquet), replacing files of the same names.
func Export(st *store.Store, outDir, format string) ([]File, error) {
	switch format {
	case "csv", "json", "parquet":
	default:
		return nil, fmt.Errorf("unknown export format %q: use one of %s", format, strings.Join(Formats, ", "))
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	runs, err := st.Runs()
	if err != nil {
		return nil, err
	}
	var files []File
	add := func(f File, err error) error {
		if err == nil {
			files = append(files, f)
		}
		return err
	}
	path := func(table string) string { return filepath.Join(outDir, table+Ext(format)) }

	if err := add(writeTable(path("runs"), "runs", format, func(emit func(RunRow) error) error {
		for _, r := range runs {
			if err := emit(RunRow{RunID: r.ID, Scheduler: r.Scheduler, Trace: r.Trace, StartUnixNs: r.Start.UnixNano(), Complete: r.Complete}); err != nil {
				return err
			}
		}
		return nil
	})); err != nil {
		return nil, err
	}
	if err := add(writeTable(path("jobs"), "jobs", format, func(emit func(JobRow) error) error {
		for _, r := range runs {
			jobs, err := st.Jobs(r.ID)
			if err != nil {
				return err
			}
			for _, j := range jobs {
				if err := emit(JobToRow(r.ID, j)); err != nil {
					return err
				}
			}
		}
		return nil
	})); err != nil {
		return nil, err
	}
	if err := add(writeTable(path("samples"), "samples", format, func(emit func(SampleRow) error) error {
		for _, r := range runs {
			if err := st.EachSample(r.ID, func(s store.Sample) error { return emit(SampleToRow(r.ID, s)) }); err != nil {
				return err
			}
		}
		return nil
	})); err != nil {
		return nil, err
	}
	if err := add(writeTable(path("allocations"), "allocations", format, func(emit func(AllocationRow) error) error {
		for _, r := range runs {
			as, err := st.Allocations(r.ID)
			if err != nil {
				return err
			}
			for _, a := range as {
				m := make([]string, len(a.Members))
				for i, x := range a.Members {
					m[i] = strconv.Itoa(x)
				}
				if err := emit(AllocationRow{RunID: r.ID, TNs: int64(a.T), Socket: int64(a.Socket), CLOS: a.CLOS, Mask: a.Mask,
					MBA: opt(a.MBA), Members: strings.Join(m, ","), Source: a.Source}); err != nil {
					return err
				}
			}
		}
		return nil
	})); err != nil {
		return nil, err
	}
	if err := add(writeTable(path("events"), "events", format, func(emit func(EventRow) error) error {
		for _, r := range runs {
			es, err := st.Events(r.ID)
			if err != nil {
				return err
			}
			for _, e := range es {
				if err := emit(EventRow{RunID: r.ID, TNs: int64(e.T), Kind: e.Kind, JobID: int64(e.Job), Text: e.Text}); err != nil {
					return err
				}
			}
		}
		return nil
	})); err != nil {
		return nil, err
	}
	if err := add(writeTable(path("probes"), "probes", format, func(emit func(ProbeRow) error) error {
		for _, r := range runs {
			ps, err := st.Probes(r.ID)
			if err != nil {
				return err
			}
			for _, p := range ps {
				if err := emit(ProbeRow{RunID: r.ID, JobID: int64(p.Job), TStartNs: int64(p.Start), TEndNs: int64(p.End), Kind: p.Kind,
					Socket: int64(p.Socket), Ways: int64(p.Ways), Mask: p.Mask, MBA: opt(p.MBA), IPC: opt(p.IPC), IPCE: opt(p.IPCE),
					Result: p.Result}); err != nil {
					return err
				}
			}
		}
		return nil
	})); err != nil {
		return nil, err
	}
	var parts [][2]any
	for _, r := range runs {
		ps, err := st.Partitions(r.ID)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			parts = append(parts, [2]any{r.ID, p})
		}
	}
	if err := add(writeTable(path("partitions"), "partitions", format, func(emit func(PartitionRow) error) error {
		for _, x := range parts {
			id, p := x[0].(int64), x[1].(store.PartitionResult)
			if err := emit(PartitionRow{RunID: id, Workload: p.Workload, Policy: p.Policy, STP: opt(p.STP), ANTT: opt(p.ANTT),
				Unfairness: opt(p.Unfairness), Jain: opt(p.Jain)}); err != nil {
				return err
			}
		}
		return nil
	})); err != nil {
		return nil, err
	}
	if err := add(writeTable(path("partition_apps"), "partition_apps", format, func(emit func(PartitionAppRow) error) error {
		for _, x := range parts {
			id, p := x[0].(int64), x[1].(store.PartitionResult)
			for _, a := range p.Apps {
				if err := emit(PartitionAppRow{RunID: id, Workload: p.Workload, Policy: p.Policy, App: a.App, Cluster: int64(a.Cluster),
					Ways: int64(a.Ways), Mask: a.Mask, IPCAlone: opt(a.IPCAlone), IPC: opt(a.IPC), Slowdown: opt(a.Slowdown)}); err != nil {
					return err
				}
			}
		}
		return nil
	})); err != nil {
		return nil, err
	}
	if err := add(writeTable(path("summaries"), "summaries", format, func(emit func(SummaryRow) error) error {
		for _, r := range runs {
			s, ok, err := st.Summary(r.ID)
			if err != nil {
				return err
			}
			if ok {
				if err := emit(summaryToRow(r.ID, s)); err != nil {
					return err
				}
			}
		}
		return nil
	})); err != nil {
		return nil, err
	}
	return files, nil
}

// rowWriter writes rows of type T in one format.
type rowWriter[T any] interface {
	write(rows []T) error
	close() error
}

func writeTable[T any](path, table, format string, produce func(emit func(T) error) error) (File, error) {
	f, err := os.Create(path)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	var w rowWriter[T]
	switch format {
	case "csv":
		w, err = newCSVWriter[T](bw)
	case "json":
		w = &jsonWriter[T]{enc: json.NewEncoder(bw)}
	case "parquet":
		w = &parquetWriter[T]{w: parquet.NewGenericWriter[T](bw, parquet.Compression(&zstd.Codec{}))}
	}
	if err != nil {
		return File{}, err
	}
	var n int64
	buf := make([]T, 0, chunk)
	err = produce(func(r T) error {
		buf = append(buf, r)
		n++
		if len(buf) == chunk {
			err := w.write(buf)
			buf = buf[:0]
			return err
		}
		return nil
	})
	if err == nil && len(buf) > 0 {
		err = w.write(buf)
	}
	if err == nil {
		err = w.close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return File{}, fmt.Errorf("export %s to %s: %w", table, path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return File{}, err
	}
	return File{Table: table, Path: path, Rows: n, Bytes: st.Size()}, f.Close()
}

// Columns returns the column names of row type T, in order.
func Columns[T any]() []string {
	t := reflect.TypeFor[T]()
	out := make([]string, t.NumField())
	for i := range out {
		out[i] = strings.Split(t.Field(i).Tag.Get("parquet"), ",")[0]
	}
	return out
}

// ---- CSV

type csvWriter[T any] struct {
	w   *csv.Writer
	rec []string
}

func newCSVWriter[T any](out io.Writer) (*csvWriter[T], error) {
	w := &csvWriter[T]{w: csv.NewWriter(out)}
	cols := Columns[T]()
	w.rec = make([]string, len(cols))
	return w, w.w.Write(cols)
}

func (w *csvWriter[T]) write(rows []T) error {
	for i := range rows {
		v := reflect.ValueOf(&rows[i]).Elem()
		for j := range w.rec {
			w.rec[j] = formatCSV(v.Field(j))
		}
		if err := w.w.Write(w.rec); err != nil {
			return err
		}
	}
	return nil
}

func (w *csvWriter[T]) close() error { w.w.Flush(); return w.w.Error() }

func formatCSV(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	default:
		return v.String()
	}
}

func parseCSV(v reflect.Value, s string) error {
	if v.Kind() == reflect.Pointer {
		if s == "" {
			v.SetZero()
			return nil
		}
		v.Set(reflect.New(v.Type().Elem()))
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Int64:
		x, err := strconv.ParseInt(s, 10, 64)
		v.SetInt(x)
		return err
	case reflect.Uint64:
		x, err := strconv.ParseUint(s, 10, 64)
		v.SetUint(x)
		return err
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		v.SetFloat(x)
		return err
	case reflect.Bool:
		x, err := strconv.ParseBool(s)
		v.SetBool(x)
		return err
	default:
		v.SetString(s)
		return nil
	}
}

// ---- JSON Lines

type jsonWriter[T any] struct{ enc *json.Encoder }

func (w *jsonWriter[T]) write(rows []T) error {
	for i := range rows {
		if err := w.enc.Encode(&rows[i]); err != nil {
			return err
		}
	}
	return nil
}

func (w *jsonWriter[T]) close() error { return nil }

// ---- Parquet

type parquetWriter[T any] struct{ w *parquet.GenericWriter[T] }

func (w *parquetWriter[T]) write(rows []T) error { _, err := w.w.Write(rows); return err }
func (w *parquetWriter[T]) close() error         { return w.w.Close() }

// Read reads back a table file written by Export in format (csv, json or parquet).
func Read[T any](path, format string) ([]T, error) {
	switch format {
	case "parquet":
		return parquet.ReadFile[T](path)
	case "json":
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		dec := json.NewDecoder(bufio.NewReader(f))
		dec.DisallowUnknownFields()
		var out []T
		for {
			var r T
			if err := dec.Decode(&r); errors.Is(err, io.EOF) {
				return out, nil
			} else if err != nil {
				return nil, fmt.Errorf("%s row %d: %w", path, len(out)+1, err)
			}
			out = append(out, r)
		}
	case "csv":
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		cr := csv.NewReader(bufio.NewReader(f))
		head, err := cr.Read()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		want := Columns[T]()
		if strings.Join(head, ",") != strings.Join(want, ",") {
			return nil, fmt.Errorf("%s: header %v, want %v", path, head, want)
		}
		var out []T
		for line := 2; ; line++ {
			rec, err := cr.Read()
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return nil, err
			}
			var r T
			v := reflect.ValueOf(&r).Elem()
			for j, s := range rec {
				if err := parseCSV(v.Field(j), s); err != nil {
					return nil, fmt.Errorf("%s:%d column %s: value %q: %w", path, line, want[j], s, err)
				}
			}
			out = append(out, r)
		}
	}
	return nil, fmt.Errorf("unknown format %q", format)
}
