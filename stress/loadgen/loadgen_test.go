package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// A server that stalls its first request for 100 ms while requests keep falling due every
// millisecond: with one request in flight at most, the requests due during the stall wait
// for it, and their latency from the due time must show it (a closed-loop measurement
// would show one slow request and p95 near the fast service time).
func TestCoordinatedOmissionCorrected(t *testing.T) {
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { time.Sleep(100 * time.Millisecond) })
	}))
	defer srv.Close()
	r, err := Run(context.Background(), Config{URL: srv.URL + "/kv/{key}", Rate: 1000, Duration: 200 * time.Millisecond, MaxInFlight: 1}, nil, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent != 200 || r.OK != 200 || r.Errors != 0 {
		t.Fatalf("sent %d ok %d errors %d, want 200 sent and ok (rate × duration, whatever the stall)", r.Sent, r.OK, r.Errors)
	}
	// Requests 0..49 were due at ≤ 49 ms and could not start before 100 ms: ≥ 50 ms each,
	// a quarter of the run, so the 75th percentile and above are ≥ 50 ms.
	if r.P95Ms < 50 || r.P99Ms < 50 || r.MaxMs < 100 {
		t.Errorf("p95 %.1f p99 %.1f max %.1f ms: the stall is not counted for the requests due during it", r.P95Ms, r.P99Ms, r.MaxMs)
	}
	if r.Late == 0 {
		t.Error("no request counted late although the stall held them past their due time")
	}
}

func TestSeedFixesTheRequestSequence(t *testing.T) {
	record := func(seed uint64) []string {
		var mu sync.Mutex
		var seen []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Method+" "+r.URL.Path)
			mu.Unlock()
		}))
		defer srv.Close()
		r, err := Run(context.Background(), Config{URL: srv.URL + "/kv/", Rate: 2000, Duration: 20 * time.Millisecond,
			MaxInFlight: 1, PutFraction: 0.5, Keys: 1000, Seed: seed}, nil, time.Now)
		if err != nil || r.OK != 40 {
			t.Fatalf("run: %+v %v", r, err)
		}
		return seen // one in flight at most: arrival order is due order
	}
	a, b, c := record(7), record(7), record(8)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different requests:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Error("seeds 7 and 8 gave the same requests")
	}
	puts := 0
	for _, s := range a {
		if strings.HasPrefix(s, "PUT /kv/") {
			puts++
		} else if !strings.HasPrefix(s, "GET /kv/") {
			t.Errorf("request %q", s)
		}
	}
	if puts == 0 || puts == len(a) {
		t.Errorf("%d PUTs of %d with --put-fraction 0.5", puts, len(a))
	}
}

func TestErrorsCounted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	r, err := Run(context.Background(), Config{URL: srv.URL, Rate: 500, Duration: 10 * time.Millisecond}, nil, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent != 5 || r.Errors != 5 || r.OK != 0 || !strings.Contains(r.FirstError, "503") {
		t.Errorf("%+v: want 5 sent, 5 errors (503)", r)
	}
	if _, err := Run(context.Background(), Config{URL: srv.URL, Rate: 0, Duration: time.Second}, nil, time.Now); err == nil {
		t.Error("rate 0 accepted")
	}
}
