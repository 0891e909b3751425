package sink

import (
	"bufio"
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"colo/store"
)

func TestLineProtocol(t *testing.T) {
	src := Source{Run: "run 1", Scheduler: "dyn,amic", Start: time.Unix(100, 0)}
	j := store.Job{ID: 3, Name: "a=b c", Priority: true}
	x := store.Sample{Job: 3, T: 1500 * time.Millisecond, Interval: 500 * time.Millisecond, Socket: 1,
		Instructions: 3e9, Cycles: 2e9, StallsTotal: math.NaN(), StallsL3Miss: math.NaN(), LLCRefs: math.NaN(), LLCMisses: math.NaN(),
		OccupancyBytes: 1048576, MemBytesLocal: 0, MemBytesTotal: 5e8, IPC: 1.5, IPCE: math.NaN(), Stalled: math.NaN()}
	got := SampleLine(src, j, x)
	want := `colo_sample,run=run\ 1,scheduler=dyn\,amic,job=3,name=a\=b\ c,priority=true,socket=1 ` +
		`interval_ns=500000000i,instructions=3e+09,cycles=2e+09,llc_occupancy_bytes=1.048576e+06,mem_bytes_local=0,` +
		`mem_bytes_total=5e+08,mem_bandwidth_bps=1e+09,ipc=1.5 101500000000`
	if got != want {
		t.Errorf("sample line\n got %s\nwant %s", got, want)
	}
	e := EventLine(Source{Run: "r", Scheduler: "s"}, store.Event{T: 0, Kind: "place", Job: -1, Text: `say "hi" \ there`})
	if !strings.Contains(e, `text="say \"hi\" \\ there"`) || !strings.Contains(e, "job=-1i") {
		t.Errorf("event line %s", e)
	}
	a := AllocationLine(Source{Run: "r", Scheduler: "s"}, store.Allocation{Socket: 0, CLOS: "prio-1", Mask: 0xf0, MBA: math.NaN(), Members: []int{1, 2}})
	if !strings.Contains(a, "mask=240i,ways=4i,members=\"1,2\"") || strings.Contains(a, "mba=") {
		t.Errorf("allocation line %s", a)
	}
}

// v2Server is a recorded InfluxDB 2.x write API contract (docs: POST /api/v2/write with
// org, bucket and precision query parameters, "Authorization: Token <token>", a
// line-protocol body, 204 No Content on success; 429/503 with Retry-After on overload;
// 401 for a bad token). It checks every request and keeps the lines it accepted.
// newV2Server serves a v2Server on loopback until the test ends and returns it with its
// URL.
func newV2Server(t *testing.T) (*v2Server, string) {
	srv := &v2Server{t: t}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts.URL
}

type v2Server struct {
	t        *testing.T
	mu       sync.Mutex
	lines    []string
	fail     []int // status codes to answer, in order, before succeeding
	requests int
}

func (v *v2Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.requests++
	bad := func(why string) {
		v.t.Errorf("2.x contract: %s", why)
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"code":"invalid","message":"`+why+`"}`)
	}
	switch {
	case r.Method != http.MethodPost:
		bad("method " + r.Method)
		return
	case r.URL.Path != "/api/v2/write":
		bad("path " + r.URL.Path)
		return
	case r.URL.Query().Get("org") != "colo-org" || r.URL.Query().Get("bucket") != "colo" || r.URL.Query().Get("precision") != "ns":
		bad("query " + r.URL.RawQuery)
		return
	case r.Header.Get("Content-Type") != "text/plain; charset=utf-8":
		bad("content type " + r.Header.Get("Content-Type"))
		return
	case r.Header.Get("Accept") != "application/json":
		bad("accept " + r.Header.Get("Accept"))
		return
	}
	if r.Header.Get("Authorization") != "Token s3cret" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"code":"unauthorized","message":"unauthorized access"}`)
		return
	}
	if len(v.fail) > 0 {
		code := v.fail[0]
		v.fail = v.fail[1:]
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "0")
		}
		w.WriteHeader(code)
		return
	}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" {
			continue
		}
		// measurement[,tags] fields timestamp: three space-separated parts once escaped
		// spaces and quoted string field values are set aside.
		if n := len(strings.Fields(quoted.ReplaceAllString(strings.ReplaceAll(l, `\ `, "_"), `""`))); n != 3 {
			bad("line with " + string(rune('0'+n)) + " parts: " + l)
			return
		}
		v.lines = append(v.lines, l)
	}
	w.WriteHeader(http.StatusNoContent)
}

var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// sendSamples sends testSamples(n) to s.
func sendSamples(s *Sink, n int) {
	src, j, xs := testSamples(n)
	for _, x := range xs {
		s.Sample(src, j, x)
	}
}

func testSamples(n int) (Source, store.Job, []store.Sample) {
	src := Source{Run: "r", Scheduler: "dynamic", Start: time.Unix(1700000000, 0)}
	j := store.Job{ID: 1, Name: "job-1"}
	var xs []store.Sample
	for i := 0; i < n; i++ {
		xs = append(xs, store.Sample{Job: 1, T: time.Duration(i) * time.Second, Interval: time.Second, IPC: float64(i) / 10,
			IPCE: 0.5, Stalled: 0.5, Instructions: 1, Cycles: 2, StallsTotal: 1, StallsL3Miss: 0, LLCRefs: 0, LLCMisses: 0,
			OccupancyBytes: 0, MemBytesLocal: 0, MemBytesTotal: 0})
	}
	return src, j, xs
}

func TestV2Contract(t *testing.T) {
	srv := &v2Server{t: t, fail: []int{http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusInternalServerError}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	s, err := New(Config{Host: ts.URL, Org: "colo-org", Database: "colo", Token: "s3cret", BatchSize: 100,
		Backoff: time.Millisecond, MaxRetries: 5})
	if err != nil {
		t.Fatal(err)
	}
	src, j, xs := testSamples(1050)
	var want []string
	for _, x := range xs {
		s.Sample(src, j, x)
		want = append(want, SampleLine(src, j, x))
	}
	st, err := s.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Delivered != 1050 || st.Undelivered != 0 || st.Retries != 3 {
		t.Fatalf("stats %+v: want 1050 delivered after 3 retries (429, 503, 500)", st)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if strings.Join(srv.lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("server received %d lines, differing from the %d written (or out of order)", len(srv.lines), len(want))
	}
	if srv.requests != 11+3 {
		t.Errorf("%d requests, want 11 batches + 3 retries", srv.requests)
	}
}

// A bad token is permanent: no retries, every point undelivered and spooled.
func TestV2Unauthorized(t *testing.T) {
	_, host := newV2Server(t)
	spool := filepath.Join(t.TempDir(), SpoolFile)
	s, err := New(Config{Host: host, Org: "colo-org", Database: "colo", Token: "wrong", BatchSize: 10,
		Backoff: time.Millisecond, SpoolPath: spool})
	if err != nil {
		t.Fatal(err)
	}
	sendSamples(s, 25)
	st, err := s.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Delivered != 0 || st.Undelivered != 25 || st.Retries != 0 || !strings.Contains(st.LastError, "401") {
		t.Fatalf("stats %+v", st)
	}
	b, _ := os.ReadFile(spool)
	if n := strings.Count(string(b), "\n"); n != 25 {
		t.Errorf("spool holds %d lines, want 25", n)
	}
}

// An unreachable database: the caller's puts complete, Close returns within its deadline
// and reports every point undelivered, and the spool holds them all, replayable later.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens here now
	dir := t.TempDir()
	spool := filepath.Join(dir, SpoolFile)
	s, err := New(Config{Host: addr, Database: "colo", BatchSize: 50, BufferLines: 200, Backoff: time.Millisecond,
		MaxBackoff: 5 * time.Millisecond, SpoolPath: spool})
	if err != nil {
		t.Fatal(err)
	}
	sendSamples(s, 1000) // never blocks: beyond 200 buffered lines they go to the spool
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := s.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Queued != 1000 || st.Delivered != 0 || st.Undelivered != 1000 || st.SpoolPath != spool {
		t.Fatalf("stats %+v", st)
	}
	if !strings.Contains(st.LastError, "connection refused") && !strings.Contains(st.LastError, "buffer full") {
		t.Errorf("last error %q", st.LastError)
	}
	b, _ := os.ReadFile(spool)
	if n := strings.Count(string(b), "\n"); n != 1000 {
		t.Fatalf("spool holds %d lines, want 1000", n)
	}
	// Replay the spool to a server that answers: everything arrives.
	srv, host := newV2Server(t)
	s2, err := New(Config{Host: host, Org: "colo-org", Database: "colo", Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s2.Replay(context.Background(), spool)
	if err != nil || n != 1000 {
		t.Fatalf("replayed %d, %v", n, err)
	}
	st2, _ := s2.Close(context.Background())
	if st2.Delivered != 1000 || len(srv.lines) != 1000 {
		t.Fatalf("replay stats %+v, server got %d", st2, len(srv.lines))
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{},
		{Host: "h"},
		{Host: "h", Database: "d", API: 3},
		{Host: "h", Database: "d", API: 2},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}

// Block (replaying a finished run): a slow database makes the producer wait instead of
// spooling, and every point arrives.
func TestBlockKeepsPace(t *testing.T) {
	srv := &v2Server{t: t}
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond)
		srv.ServeHTTP(w, r)
	})
	ts := httptest.NewServer(slow)
	defer ts.Close()
	s, err := New(Config{Host: ts.URL, Org: "colo-org", Database: "colo", Token: "s3cret", BatchSize: 20, BufferLines: 40, Block: true})
	if err != nil {
		t.Fatal(err)
	}
	sendSamples(s, 500)
	st, err := s.Close(context.Background())
	if err != nil || st.Delivered != 500 || st.Undelivered != 0 || len(srv.lines) != 500 {
		t.Fatalf("stats %+v, %v, server got %d", st, err, len(srv.lines))
	}
}

// Streaming during a run: an observer on the run writer sends what the run records, with
// the job's tags, while the store keeps everything too.
func TestObserverStreams(t *testing.T) {
	srv, host := newV2Server(t)
	s, err := New(Config{Host: host, Org: "colo-org", Database: "colo", Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Create(filepath.Join(t.TempDir(), "run"), store.Meta{Name: "obs"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.BeginRun(store.Run{Scheduler: "dynamic", Start: time.Unix(1000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	w.Observe(s.Observer("run-x"))
	w.Job(store.Job{ID: 4, Name: "neighbor-6mb", Priority: true, IPCETarget: 0.9, Socket: 1, Start: 0, Stop: store.Unset, State: "running"})
	_, _, xs := testSamples(3)
	for i := range xs {
		xs[i].Job = 4
	}
	w.Samples(xs)
	w.Allocation(store.Allocation{T: time.Second, Socket: 1, CLOS: "prio-4", Mask: 0xc, MBA: 20, Members: []int{4}})
	w.Event(store.Event{T: time.Second, Kind: "allocate", Job: 4, Text: "2 ways"})
	if err := w.Finish(store.Summary{VirtualSeconds: 3}); err != nil {
		t.Fatal(err)
	}
	st.Complete()
	st.Close()
	stats, err := s.Close(context.Background())
	if err != nil || stats.Delivered != 6 {
		t.Fatalf("stats %+v, %v; want 3 samples + allocation + event + summary", stats, err)
	}
	got := strings.Join(srv.lines, "\n")
	for _, want := range []string{
		"colo_sample,run=run-x,scheduler=dynamic,job=4,name=neighbor-6mb,priority=true,socket=0 ",
		"colo_allocation,run=run-x,scheduler=dynamic,socket=1,clos=prio-4 mask=12i,ways=2i,mba=20,members=\"4\" 1001000000000",
		"colo_event,run=run-x,scheduler=dynamic,kind=allocate job=4i,text=\"2 ways\" 1001000000000",
		"colo_summary,run=run-x,scheduler=dynamic jobs_completed=0i",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("streamed lines lack %q:\n%s", want, got)
		}
	}
}
