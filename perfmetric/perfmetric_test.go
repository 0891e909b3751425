package perfmetric

import (
	"bytes"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"colo/metric"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func TestParse(t *testing.T) {
	s, err := Parse(`:8080/metrics histogram_quantile(0.99, colo_serve_request_duration_seconds_bucket{op="get"})`)
	if err != nil {
		t.Fatal(err)
	}
	q := s.Query
	if q.Func != FuncQuantile || q.Quantile != 0.99 || q.Metric != "colo_serve_request_duration_seconds" || q.Match["op"] != "get" || !q.LowerIsBetter() {
		t.Errorf("parsed %+v", q)
	}
	if got := s.Endpoint("10.0.0.7"); got != "http://10.0.0.7:8080/metrics" {
		t.Errorf("endpoint %q", got)
	}
	s, err = Parse("https://svc.example:9100/m rate(work_total)")
	if err != nil || s.Query.Func != FuncRate || s.Endpoint("x") != "https://svc.example:9100/m" || s.Query.LowerIsBetter() {
		t.Errorf("%+v %v", s, err)
	}
	for _, bad := range []string{"", ":8080/metrics", "ftp://h:1/ m", ":1/m sum(x)", ":1/m histogram_quantile(2, x)",
		":1/m histogram_quantile(0.5 x)", ":1/m rate(x", `:1/m x{a!="b"}`, ":1/m 9x", "/metrics x"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// scrape renders reg as text exposition through client_golang's own handler and parses it.
func scrape(t *testing.T, reg *prometheus.Registry, at time.Time) Scrape {
	t.Helper()
	w := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	s, err := ParseText(bytes.NewReader(w.Body.Bytes()), at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The quantile of observations between two scrapes, read through a real client_golang
// histogram's exposition, lies within the observation's bucket of the exact quantile
// (25 % buckets), and ignores what was observed before the first scrape and in other series.
func TestHistogramQuantileBetweenScrapes(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lat_seconds", Buckets: prometheus.ExponentialBuckets(1e-5, 1.25, 60)}, []string{"op"})
	reg.MustRegister(h)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 { // before: ten times slower, must not count
		h.WithLabelValues("get").Observe(0.01 * rng.ExpFloat64())
	}
	t0 := time.Unix(1000, 0)
	prev := scrape(t, reg, t0)
	var xs []float64
	for range 20000 {
		x := 0.001 * rng.ExpFloat64()
		xs = append(xs, x)
		h.WithLabelValues("get").Observe(x)
		h.WithLabelValues("put").Observe(1) // other series, excluded by the matcher
	}
	cur := scrape(t, reg, t0.Add(10*time.Second))
	for _, qv := range []float64{0.5, 0.9, 0.99} {
		q := Query{Func: FuncQuantile, Quantile: qv, Metric: "lat_seconds", Match: map[string]string{"op": "get"}}
		got, ok := q.Eval(&prev, cur)
		exact := metric.Percentile(xs, qv*100)
		if !ok || math.Abs(got/exact-1) > 0.25 {
			t.Errorf("q%.2f = %g (ok %v), exact %g: off by more than a bucket", qv, got, ok, exact)
		}
	}
	q := Query{Func: FuncQuantile, Quantile: 0.99, Metric: "lat_seconds"}
	if all, _ := q.Eval(&prev, cur); all < 0.9 {
		t.Errorf("without the matcher the puts at 1 s make 50 %% of the window: p99 %g, want ≈ 1", all)
	}
	if _, ok := q.Eval(nil, cur); ok {
		t.Error("a quantile without a previous scrape")
	}
	if _, ok := q.Eval(&cur, cur); ok {
		t.Error("a quantile of no observations")
	}
}

func TestRateAndValue(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "work_total"}, []string{"w"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "level"})
	reg.MustRegister(c, g)
	c.WithLabelValues("a").Add(100)
	c.WithLabelValues("b").Add(50)
	t0 := time.Unix(0, 0)
	prev := scrape(t, reg, t0)
	c.WithLabelValues("a").Add(30)
	c.WithLabelValues("b").Add(10)
	g.Set(2.5)
	cur := scrape(t, reg, t0.Add(4*time.Second))
	r, ok := Query{Func: FuncRate, Metric: "work_total"}.Eval(&prev, cur)
	if !ok || r != 10 {
		t.Errorf("rate = %g %v, want (30+10)/4 = 10", r, ok)
	}
	r, _ = Query{Func: FuncRate, Metric: "work_total", Match: map[string]string{"w": "b"}}.Eval(&prev, cur)
	if r != 2.5 {
		t.Errorf("rate{w=b} = %g, want 10/4", r)
	}
	// A restarted target: the counter starts again from zero.
	reg2 := prometheus.NewRegistry()
	c2 := prometheus.NewCounter(prometheus.CounterOpts{Name: "work_total"})
	reg2.MustRegister(c2)
	c2.Add(8)
	if r, _ := (Query{Func: FuncRate, Metric: "work_total"}).Eval(&cur, scrape(t, reg2, t0.Add(8*time.Second))); r != 2 {
		t.Errorf("rate after a restart = %g, want 8/4", r)
	}
	if v, ok := (Query{Metric: "level"}).Eval(nil, cur); !ok || v != 2.5 {
		t.Errorf("gauge = %g %v", v, ok)
	}
	if _, ok := (Query{Metric: "absent"}).Eval(nil, cur); ok {
		t.Error("absent metric evaluated")
	}
}

func TestSlowdownDirection(t *testing.T) {
	lat := Query{Func: FuncQuantile}
	thr := Query{Func: FuncRate}
	if lat.Slowdown(1, 1.5) != 1.5 || thr.Slowdown(100, 50) != 2 || !math.IsNaN(thr.Slowdown(0, 1)) {
		t.Error("slowdown direction")
	}
	b := []Bucket{{1, 0}, {2, 10}, {4, 10}, {math.Inf(1), 10}}
	if got := HistogramQuantile(0.5, b); got != 1.5 {
		t.Errorf("median of 10 observations uniform in (1, 2] = %g, want 1.5", got)
	}
	if got := HistogramQuantile(1, slices.Clone(b)); got != 2 {
		t.Errorf("max = %g, want the bucket's bound 2", got)
	}
}
