package scrape

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"colo/perfmetric"
	"colo/stress/kvserve"
)

// Fetch reads colo stress serve's own /metrics and the spec's query evaluates on it.
func TestFetchServeMetrics(t *testing.T) {
	s, err := kvserve.New(kvserve.Config{MB: 1, Reads: 3})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	spec, err := perfmetric.Parse(srv.URL + `/metrics histogram_quantile(0.5, colo_serve_request_duration_seconds{op="get"})`)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t0 := time.Unix(0, 0)
	prev, err := Fetch(ctx, nil, spec.Endpoint("127.0.0.1"), func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := srv.Client().Get(srv.URL + "/kv/1"); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := Fetch(ctx, nil, spec.Endpoint("127.0.0.1"), func() time.Time { return t0.Add(time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	v, ok := spec.Query.Eval(&prev, cur)
	if !ok || v <= 0 || v > 10 {
		t.Errorf("median get latency %g s (ok %v) over 10 gets", v, ok)
	}
	if _, err := Fetch(ctx, nil, srv.URL+"/nothing", time.Now); err == nil {
		t.Error("a 404 parsed")
	}
}
