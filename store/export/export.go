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

	"colo/internal/inputfile"
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
	tables := []table{
		tableOf("runs", func(emit func(RunRow) error) error {
			for _, r := range runs {
				if err := emit(RunRow{RunID: r.ID, Scheduler: r.Scheduler, Trace: r.Trace, StartUnixNs: r.Start.UnixNano(), Complete: r.Complete}); err != nil {
					return err
				}
			}
			return nil
		}),
		tableOf("jobs", eachRow(runs, st.Jobs, JobToRow)),
		tableOf("samples", func(emit func(SampleRow) error) error {
			for _, r := range runs {
				if err := st.EachSample(r.ID, func(s store.Sample) error { return emit(SampleToRow(r.ID, s)) }); err != nil {
					return err
				}
			}
			return nil
		}),
		tableOf("allocations", eachRow(runs, st.Allocations, allocationToRow)),
		tableOf("events", eachRow(runs, st.Events, eventToRow)),
		tableOf("probes", eachRow(runs, st.Probes, probeToRow)),
		tableOf("partitions", eachRow(runs, st.Partitions, partitionToRow)),
		tableOf("partition_apps", func(emit func(PartitionAppRow) error) error {
			return eachRow(runs, st.Partitions, partitionAppRows)(func(rows []PartitionAppRow) error {
				for _, r := range rows {
					if err := emit(r); err != nil {
						return err
					}
				}
				return nil
			})
		}),
		tableOf("summaries", eachRow(runs, func(id int64) ([]store.Summary, error) {
			s, ok, err := st.Summary(id)
			if !ok {
				return nil, err
			}
			return []store.Summary{s}, err
		}, summaryToRow)),
	}
	var files []File
	for _, t := range tables {
		f, err := t.write(filepath.Join(outDir, t.name+Ext(format)), format)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// table is one exported table: its name and how to write it to a file in a format.
type table struct {
	name  string
	write func(path, format string) (File, error)
}

// tableOf is the table name of rows of type T that produce emits.
func tableOf[T any](name string, produce func(emit func(T) error) error) table {
	return table{name, func(path, format string) (File, error) { return writeTable(path, name, format, produce) }}
}

// eachRow produces the rows of a table kept per run: read gives a run's records, row
// converts one record of run id.
func eachRow[X, T any](runs []store.Run, read func(id int64) ([]X, error), row func(id int64, x X) T) func(emit func(T) error) error {
	return func(emit func(T) error) error {
		for _, r := range runs {
			xs, err := read(r.ID)
			if err != nil {
				return err
			}
			for _, x := range xs {
				if err := emit(row(r.ID, x)); err != nil {
					return err
				}
			}
		}
		return nil
	}
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
	case "json", "csv":
	default:
		return nil, fmt.Errorf("unknown format %q", format)
	}
	f, err := inputfile.Open(path, inputfile.Table)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if format == "json" {
		return readJSON[T](path, bufio.NewReader(f))
	}
	return readCSV[T](path, bufio.NewReader(f))
}

func readJSON[T any](path string, in io.Reader) ([]T, error) {
	dec := json.NewDecoder(in)
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
}

func readCSV[T any](path string, in io.Reader) ([]T, error) {
	cr := csv.NewReader(in)
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
