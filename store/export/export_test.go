package export

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"colo/store"
	"colo/store/storetest"
)

// TestColumnsStable: every row type's columns are the store's documented column lists.
func TestColumnsStable(t *testing.T) {
	for _, c := range []struct {
		got, want []string
	}{
		{Columns[RunRow](), store.RunColumns},
		{Columns[JobRow](), store.JobColumns},
		{Columns[SampleRow](), store.SampleColumns},
		{Columns[AllocationRow](), store.AllocationColumns},
		{Columns[EventRow](), store.EventColumns},
		{Columns[ProbeRow](), store.ProbeColumns},
		{Columns[PartitionRow](), store.PartitionColumns},
		{Columns[PartitionAppRow](), store.PartitionAppColumns},
		{Columns[SummaryRow](), store.SummaryColumns},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("columns %v, documented %v", c.got, c.want)
		}
	}
}

func sameSample(a, b store.Sample) bool {
	fa := reflect.ValueOf(a)
	fb := reflect.ValueOf(b)
	for i := 0; i < fa.NumField(); i++ {
		x, y := fa.Field(i), fb.Field(i)
		if x.Kind() == reflect.Float64 {
			if !(x.Float() == y.Float() || math.IsNaN(x.Float()) && math.IsNaN(y.Float())) {
				return false
			}
			continue
		}
		if x.Interface() != y.Interface() {
			return false
		}
	}
	return true
}

// TestRoundTrip exports a synthetic two-scheduler run (with an unavailable-counter host
// and partition results) in each format and reads every table back: equal to the store.
func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := storetest.Generate(dir, storetest.Options{Seed: 3, Jobs: 12, Tick: 500 * time.Millisecond, Partitions: true}); err != nil {
		t.Fatal(err)
	}
	nopmu := filepath.Join(t.TempDir(), "nopmu")
	if _, err := storetest.Generate(nopmu, storetest.Options{Seed: 4, Jobs: 4, NoPMU: true, Schedulers: []string{"dynamic"}}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, nopmu} {
		st, err := store.Open(d)
		if err != nil {
			t.Fatal(err)
		}
		runs, _ := st.Runs()
		var wantSamples []store.Sample
		var wantJobs []store.Job
		for _, r := range runs {
			s, _ := st.Samples(r.ID)
			wantSamples = append(wantSamples, s...)
			j, _ := st.Jobs(r.ID)
			wantJobs = append(wantJobs, j...)
		}
		if len(wantSamples) == 0 {
			t.Fatal("fixture has no samples")
		}
		base := t.TempDir()
		for _, format := range Formats {
			out := filepath.Join(base, format)
			files, err := Export(st, out, format)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 9 {
				t.Fatalf("%s: %d files", format, len(files))
			}
			rows, err := Read[SampleRow](filepath.Join(out, "samples"+Ext(format)), format)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(wantSamples) {
				t.Fatalf("%s: %d samples read back, %d written", format, len(rows), len(wantSamples))
			}
			nan := 0
			for i, r := range rows {
				if !sameSample(r.Sample(), wantSamples[i]) {
					t.Fatalf("%s sample %d: read back %+v, written %+v", format, i, r.Sample(), wantSamples[i])
				}
				if r.IPC == nil {
					nan++
				}
			}
			if d == nopmu && nan != len(rows) || d == dir && nan != 0 {
				t.Errorf("%s: %d of %d samples have unavailable IPC", format, nan, len(rows))
			}
			jrows, err := Read[JobRow](filepath.Join(out, "jobs"+Ext(format)), format)
			if err != nil {
				t.Fatal(err)
			}
			var gotJobs []store.Job
			for _, r := range jrows {
				gotJobs = append(gotJobs, r.Job())
			}
			if len(gotJobs) != len(wantJobs) {
				t.Fatalf("%s: %d jobs", format, len(gotJobs))
			}
			for i := range gotJobs {
				g, w := gotJobs[i], wantJobs[i]
				if math.IsNaN(w.IPCETarget) != math.IsNaN(g.IPCETarget) {
					t.Fatalf("%s job %d target %v vs %v", format, i, g.IPCETarget, w.IPCETarget)
				}
				g.IPCETarget, w.IPCETarget = 0, 0
				if g != w {
					t.Fatalf("%s job %d: read back %+v, written %+v", format, i, g, w)
				}
			}
			// Allocations and summaries against the store itself.
			arows, err := Read[AllocationRow](filepath.Join(out, "allocations"+Ext(format)), format)
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for _, r := range runs {
				as, _ := st.Allocations(r.ID)
				for _, a := range as {
					g := arows[k]
					k++
					if g.RunID != r.ID || time.Duration(g.TNs) != a.T || int(g.Socket) != a.Socket || g.CLOS != a.CLOS ||
						g.Mask != a.Mask || math.IsNaN(a.MBA) != (g.MBA == nil) || (g.MBA != nil && *g.MBA != a.MBA) {
						t.Fatalf("%s allocation %d: %+v vs %+v", format, k, g, a)
					}
				}
			}
			if k != len(arows) || k == 0 {
				t.Fatalf("%s: %d allocations read back, %d in store", format, len(arows), k)
			}
			srows, err := Read[SummaryRow](filepath.Join(out, "summaries"+Ext(format)), format)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range srows {
				sum, ok, _ := st.Summary(r.RunID)
				if !ok || !reflect.DeepEqual(summaryToRow(r.RunID, sum), r) {
					t.Errorf("%s summary %+v vs %+v", format, r, sum)
				}
			}
			if len(srows) != len(runs) {
				t.Errorf("%s: %d summaries for %d runs", format, len(srows), len(runs))
			}
		}
		// Every table: the three formats agree row for row, with the row count Export reported.
		checkTable[AllocationRow](t, base, "allocations")
		checkTable[EventRow](t, base, "events")
		checkTable[ProbeRow](t, base, "probes")
		checkTable[PartitionRow](t, base, "partitions")
		checkTable[PartitionAppRow](t, base, "partition_apps")
		checkTable[SummaryRow](t, base, "summaries")
		checkTable[RunRow](t, base, "runs")
		checkTable[JobRow](t, base, "jobs")
		st.Close()
	}
}

// checkTable reads one table back in every format; all must hold the same rows.
func checkTable[T any](t *testing.T, base, table string) {
	t.Helper()
	enc := func(rs []T) string {
		var sb strings.Builder
		for i := range rs {
			v := reflect.ValueOf(&rs[i]).Elem()
			for j := 0; j < v.NumField(); j++ {
				sb.WriteString(formatCSV(v.Field(j)))
				sb.WriteByte('|')
			}
			sb.WriteByte('\n')
		}
		return sb.String()
	}
	var first string
	for i, format := range Formats {
		rows, err := Read[T](filepath.Join(base, format, table+Ext(format)), format)
		if err != nil {
			t.Fatalf("%s %s: %v", format, table, err)
		}
		if i == 0 {
			first = enc(rows)
		} else if enc(rows) != first {
			t.Errorf("%s: %s differs from %s", table, format, Formats[0])
		}
	}
}

func TestUnknownFormat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := storetest.Generate(dir, storetest.Options{Seed: 1, Jobs: 2, Schedulers: []string{"dynamic"}}); err != nil {
		t.Fatal(err)
	}
	st, _ := store.Open(dir)
	defer st.Close()
	if _, err := Export(st, t.TempDir(), "xlsx"); err == nil || !strings.Contains(err.Error(), "csv, json, parquet") {
		t.Fatalf("err = %v", err)
	}
}
