package sink

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"colo/internal/influxtest"
	"colo/store"
	"colo/store/storetest"
)

// influxd is a real InfluxDB 1.x server (internal/influxtest) started by a test and
// stopped at the end of the test.
type influxd struct {
	URL string
}

func startInfluxd(t testing.TB) *influxd {
	t.Helper()
	return &influxd{URL: influxtest.Start(t)}
}

// query runs an InfluxQL statement and returns the first series' columns and rows.
func (d *influxd) query(t testing.TB, db, q string) (cols []string, rows [][]any) {
	t.Helper()
	v := url.Values{"q": {q}, "epoch": {"ns"}}
	if db != "" {
		v.Set("db", db)
	}
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Post(d.URL+"/query?"+v.Encode(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Results []struct {
			Error  string `json:"error"`
			Series []struct {
				Columns []string `json:"columns"`
				Values  [][]any  `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Results) == 0 || out.Results[0].Error != "" {
		t.Fatalf("query %q: %+v", q, out)
	}
	if len(out.Results[0].Series) == 0 {
		return nil, nil
	}
	s := out.Results[0].Series[0]
	return s.Columns, s.Values
}

func num(t testing.TB, v any) float64 {
	if v == nil {
		return math.NaN()
	}
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("value %v (%T) is not a number", v, v)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestInfluxd1 writes a synthetic two-scheduler run (one host without PMU) to a real
// InfluxDB 1.x server through /write and reads every sample, allocation and event back.
func TestInfluxd1(t *testing.T) {
	d := startInfluxd(t)
	d.query(t, "", "CREATE DATABASE colo")
	runDir := filepath.Join(t.TempDir(), "run-a")
	if _, err := storetest.Generate(runDir, storetest.Options{Seed: 11, Jobs: 10, Tick: time.Second}); err != nil {
		t.Fatal(err)
	}
	nopmu := filepath.Join(t.TempDir(), "run-b")
	if _, err := storetest.Generate(nopmu, storetest.Options{Seed: 12, Jobs: 3, NoPMU: true, Schedulers: []string{"dynamic"}}); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Host: d.URL, Database: "colo", BatchSize: 1000, SpoolPath: filepath.Join(runDir, SpoolFile)})
	if err != nil {
		t.Fatal(err)
	}
	var want []store.Sample
	var wantSrc []string
	allocs, events := 0, 0
	for _, dir := range []string{runDir, nopmu} {
		st, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.PushRun(st); err != nil {
			t.Fatal(err)
		}
		runs, _ := st.Runs()
		for _, r := range runs {
			xs, _ := st.Samples(r.ID)
			want = append(want, xs...)
			for range xs {
				wantSrc = append(wantSrc, filepath.Base(dir)+"/"+r.Scheduler)
			}
			a, _ := st.Allocations(r.ID)
			e, _ := st.Events(r.ID)
			allocs += len(a)
			events += len(e)
		}
		st.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stats, err := s.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Undelivered != 0 || stats.Delivered != stats.Queued {
		t.Fatalf("stats %+v", stats)
	}

	cols, rows := d.query(t, "colo", "SELECT * FROM colo_sample")
	if len(rows) != len(want) {
		t.Fatalf("%d samples queried back, %d written", len(rows), len(want))
	}
	col := map[string]int{}
	for i, c := range cols {
		col[c] = i
	}
	// Index written samples by (run/scheduler, job, time).
	type key struct {
		src string
		job string
		t   int64
	}
	idx := map[key]store.Sample{}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // storetest's run start
	for i, x := range want {
		idx[key{wantSrc[i], strconv.Itoa(x.Job), start.Add(x.T).UnixNano()}] = x
	}
	nullIPC := 0
	for _, r := range rows {
		ts, _ := strconv.ParseInt(string(r[col["time"]].(json.Number)), 10, 64)
		k := key{r[col["run"]].(string) + "/" + r[col["scheduler"]].(string), r[col["job"]].(string), ts}
		x, ok := idx[k]
		if !ok {
			t.Fatalf("queried point %v was never written", k)
		}
		for name, w := range map[string]float64{"instructions": x.Instructions, "cycles": x.Cycles, "stalls_total": x.StallsTotal,
			"stalls_l3_miss": x.StallsL3Miss, "llc_refs": x.LLCRefs, "llc_misses": x.LLCMisses, "llc_occupancy_bytes": x.OccupancyBytes,
			"mem_bytes_local": x.MemBytesLocal, "mem_bytes_total": x.MemBytesTotal, "ipc": x.IPC, "ipce": x.IPCE, "stalled": x.Stalled,
			"mem_bandwidth_bps": x.MemBandwidth(), "interval_ns": float64(x.Interval)} {
			g := num(t, r[col[name]])
			if !(g == w || math.IsNaN(g) && math.IsNaN(w)) {
				t.Fatalf("%v %s: queried %v, written %v", k, name, g, w)
			}
		}
		if r[col["socket"]].(string) != strconv.Itoa(x.Socket) {
			t.Fatalf("%v socket %v vs %d", k, r[col["socket"]], x.Socket)
		}
		if r[col["ipc"]] == nil {
			nullIPC++
		}
		delete(idx, k)
	}
	if nullIPC == 0 {
		t.Error("no sample came back without IPC: the no-PMU run must stay 'unavailable', not 0")
	}
	_, arows := d.query(t, "colo", "SELECT * FROM colo_allocation")
	_, erows := d.query(t, "colo", "SELECT * FROM colo_event")
	if len(arows) != allocs || len(erows) != events {
		t.Errorf("allocations %d/%d, events %d/%d queried back/written", len(arows), allocs, len(erows), events)
	}
	_, srows := d.query(t, "colo", "SELECT * FROM colo_summary")
	if len(srows) != 3 {
		t.Errorf("%d summaries, want 3", len(srows))
	}
	if _, err := os.Stat(filepath.Join(runDir, SpoolFile)); err == nil {
		t.Error("a spool file was written although everything was delivered")
	}
	t.Logf("delivered %d lines in %d requests", stats.Delivered, stats.Requests)

	// Every query of the Grafana dashboard returns data from what the sink wrote.
	checkDashboard(t, d, "colo", "run-a")
}

// checkDashboard runs each InfluxQL query of dashboards/grafana-colo.json (panels,
// annotations, template variables) with the template variables filled in, and requires
// a non-empty result.
func checkDashboard(t *testing.T, d *influxd, db, run string) {
	b, err := os.ReadFile(filepath.Join("..", "dashboards", "grafana-colo.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana-colo.json: %v", err)
	}
	var queries []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if q, ok := e.(string); ok && k == "query" {
					queries = append(queries, q)
				} else {
					walk(e)
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(dash)
	if len(queries) < 10 {
		t.Fatalf("dashboard has %d queries", len(queries))
	}
	r := strings.NewReplacer("$run", run, "$scheduler", ".*", "$job", ".*", "$timeFilter", "time >= '2026-01-01T00:00:00Z' AND time < '2026-01-01T01:00:00Z'", "$__interval", "10s")
	for _, q := range queries {
		cols, rows := d.query(t, db, r.Replace(q))
		if len(rows) == 0 || len(cols) == 0 {
			t.Errorf("dashboard query returns nothing: %s", q)
		}
	}
}

// BenchmarkInfluxd1 measures sink throughput (points per second) to a local 1.x server.
func BenchmarkInfluxd1(b *testing.B) {
	d := startInfluxd(b)
	d.query(b, "", "CREATE DATABASE bench")
	s, err := New(Config{Host: d.URL, Database: "bench", BufferLines: 1 << 22})
	if err != nil {
		b.Fatal(err)
	}
	src := Source{Run: "bench", Scheduler: "dynamic", Start: time.Unix(1700000000, 0)}
	job := store.Job{ID: 1, Name: "job-001", Priority: true}
	x := store.Sample{Job: 1, Interval: 100 * time.Millisecond, Socket: 0, Instructions: 3e8, Cycles: 2.4e8, StallsTotal: 1e8,
		StallsL3Miss: 4e7, LLCRefs: 1e6, LLCMisses: 2e5, OccupancyBytes: 6 << 20, MemBytesLocal: 9e7, MemBytesTotal: 1e8,
		IPC: 1.25, IPCE: 0.58, Stalled: 0.42}
	b.ResetTimer()
	t0 := time.Now()
	for i := 0; b.Loop(); i++ {
		x.Job = i % 700
		x.T = time.Duration(i/700) * 100 * time.Millisecond
		s.Sample(src, job, x)
	}
	st, err := s.Close(context.Background())
	el := time.Since(t0)
	if err != nil {
		b.Fatal(err)
	}
	if st.Undelivered != 0 {
		b.Fatalf("%+v", st)
	}
	b.ReportMetric(float64(st.Delivered)/el.Seconds(), "points/s")
}
