package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/internal/influxtest"
	"colo/store"
)

// a short run on the simulated testbed that streams to ${COLO_TEST_INFLUX}
const sinkBench = `benchmark:
  name: sink
  max_t: 20
  scheduler: {implementation: dynamic}
  data:
    frequency: 1000
    db: {host: "${COLO_TEST_INFLUX}", name: colo, user: "", password: ""}
containers:
  nb:
    workload: "neighbor:6MB:1g"
    priority: true
    ipce: 90
    length: 15
  zip:
    workload: "7zip:2"
    num_cores: 2
    start_t: 1
`

func runSinkBench(t *testing.T, host, wait string) (bench struct {
	Influx struct {
		Queued, Delivered, Undelivered int64
		Spool                          string
	} `json:"influx"`
}, dir string, stderr string) {
	t.Helper()
	t.Setenv("COLO_TEST_INFLUX", host)
	yml := filepath.Join(t.TempDir(), "sink.yaml")
	if err := os.WriteFile(yml, []byte(sinkBench), 0o644); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "run")
	out, err := runColo(t, "run", yml, "--out", dir, "--json", "--db-wait", wait)
	if err != nil {
		t.Fatalf("colo run: %v\n%s", err, out)
	}
	i := strings.Index(out, "{")
	if i < 0 {
		t.Fatalf("no JSON in %q", out)
	}
	if err := json.NewDecoder(strings.NewReader(out[i:])).Decode(&bench); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	return bench, dir, out[:i]
}

// An unreachable database never stalls the run: it completes, the points that could not
// be delivered are counted and kept in the run directory.
func TestRunInfluxUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	l.Close() // nothing listens there any more: connection refused
	rep, dir, msg := runSinkBench(t, host, "1s")
	in := rep.Influx
	if in.Queued == 0 || in.Delivered != 0 || in.Undelivered != in.Queued {
		t.Fatalf("influx %+v", in)
	}
	if !strings.Contains(msg, fmt.Sprintf("%d undelivered", in.Undelivered)) {
		t.Errorf("stderr does not report the undelivered points: %q", msg)
	}
	b, err := os.ReadFile(filepath.Join(dir, "influx-undelivered.lp"))
	if err != nil || int64(bytes.Count(b, []byte("\n"))) != in.Undelivered {
		t.Fatalf("spool: %v, %d lines for %d undelivered", err, bytes.Count(b, []byte("\n")), in.Undelivered)
	}
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !st.Manifest().Complete {
		t.Fatal("the run is not marked complete")
	}
}

// Against a real InfluxDB 1.x on loopback: everything is delivered and the samples
// queried back are the samples the run directory holds.
func TestRunInfluxDelivers(t *testing.T) {
	u := influxtest.Start(t)
	if _, err := http.Post(u+"/query?"+url.Values{"q": {"CREATE DATABASE colo"}}.Encode(), "", nil); err != nil {
		t.Fatal(err)
	}
	rep, dir, _ := runSinkBench(t, u, "30s")
	in := rep.Influx
	if in.Queued == 0 || in.Delivered != in.Queued || in.Undelivered != 0 {
		t.Fatalf("influx %+v", in)
	}
	if _, err := os.Stat(filepath.Join(dir, "influx-undelivered.lp")); err == nil {
		t.Error("a spool file exists although everything was delivered")
	}
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.Runs()
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v %v", runs, err)
	}
	samples, err := st.Samples(runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	allocs, err := st.Allocations(runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := influxCount(t, u, "colo_sample", "interval_ns"); n != len(samples) || n == 0 {
		t.Errorf("influx holds %d samples, the run %d", n, len(samples))
	}
	// a point is identified by its series and time: two changes of one class at the same
	// instant (a probe buffer, then its first segment) are one point, the later
	distinct := map[string]bool{}
	for _, a := range allocs {
		distinct[fmt.Sprint(a.T, a.Socket, a.CLOS, a.Source)] = true
	}
	if n := influxCount(t, u, "colo_allocation", "mask"); n != len(distinct) || n == 0 {
		t.Errorf("influx holds %d allocations, the run %d (%d rows)", n, len(distinct), len(allocs))
	}
}

func influxCount(t *testing.T, u, meas, field string) int {
	t.Helper()
	q := url.Values{"db": {"colo"}, "q": {fmt.Sprintf("SELECT COUNT(%q) FROM %q", field, meas)}}
	resp, err := http.Post(u+"/query?"+q.Encode(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Results []struct {
			Series []struct {
				Values [][]any `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Results) == 0 || len(out.Results[0].Series) == 0 {
		return 0
	}
	return int(out.Results[0].Series[0].Values[0][1].(float64))
}

// A database that accepts connections but never answers: the run completes and the
// points are reported undelivered.
func TestRunInfluxSlow(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	rep, _, _ := runSinkBench(t, srv.URL, "500ms")
	if in := rep.Influx; in.Queued == 0 || in.Delivered != 0 || in.Undelivered != in.Queued {
		t.Fatalf("influx %+v", in)
	}
}
