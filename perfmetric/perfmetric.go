// Package perfmetric reads a tenant's own performance metric, the value of the label or
// annotation colo.io/perf-metric: "URL QUERY", a Prometheus text endpoint and a small
// PromQL-like query over it, e.g.
//
//	http://:8080/metrics histogram_quantile(0.99, colo_serve_request_duration_seconds{op="get"})
//	:9100/metrics rate(colo_stress_work_total)
//
// (This is how Bubble-Up profiled microservices: the service's own latency read from
// Prometheus.) The query forms are NAME{MATCHERS} (the summed value of the matching
// series: a gauge), rate(NAME{…}) (per second, between two scrapes) and
// histogram_quantile(Q, NAME{…}) (the Q-quantile of the observations between two
// scrapes, the buckets of the matching series summed). A URL without a host is the
// tenant's own (the caller fills it in, Spec.Endpoint). The package is pure: parsing and
// evaluation of scrapes the caller fetched.
package perfmetric

import (
	"fmt"
	"io"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Label is the container label / pod annotation carrying a Spec.
const Label = "colo.io/perf-metric"

// Query functions.
const (
	FuncValue    = ""                   // the summed value of the matching series
	FuncRate     = "rate"               // per-second increase between two scrapes
	FuncQuantile = "histogram_quantile" // quantile of the observations between two scrapes
)

// Query is a parsed query.
type Query struct {
	Func     string
	Quantile float64 // for FuncQuantile, in [0, 1]
	Metric   string
	Match    map[string]string // label = value matchers (all must hold)
}

// Spec is a parsed colo.io/perf-metric value.
type Spec struct {
	URL   *url.URL // scheme http unless given; Host may lack its hostname (":8080")
	Query Query
	raw   string
}

// String returns the value Parse read.
func (s Spec) String() string { return s.raw }

// Parse reads "URL QUERY".
func Parse(v string) (Spec, error) {
	v = strings.TrimSpace(v)
	i := strings.IndexAny(v, " \t")
	if i < 0 {
		return Spec{}, fmt.Errorf("%s %q: want \"URL QUERY\"", Label, v)
	}
	raw, qs := v[:i], strings.TrimSpace(v[i+1:])
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Port() == "" && u.Hostname() == "" {
		return Spec{}, fmt.Errorf("%s %q: bad endpoint %q (want [http://][HOST]:PORT/PATH)", Label, v, v[:i])
	}
	q, err := ParseQuery(qs)
	if err != nil {
		return Spec{}, fmt.Errorf("%s %q: %w", Label, v, err)
	}
	return Spec{URL: u, Query: q, raw: v}, nil
}

// Endpoint returns the URL to scrape, with host standing in for a missing hostname.
func (s Spec) Endpoint(host string) string {
	u := *s.URL
	if u.Hostname() == "" {
		u.Host = host + ":" + u.Port()
	}
	return u.String()
}

// ParseQuery reads one of the three query forms.
func ParseQuery(s string) (Query, error) {
	s = strings.TrimSpace(s)
	var q Query
	inner := s
	if f, rest, ok := strings.Cut(s, "("); ok && !strings.Contains(f, "{") {
		q.Func = strings.TrimSpace(f)
		if !strings.HasSuffix(rest, ")") {
			return Query{}, fmt.Errorf("query %q: missing )", s)
		}
		inner = strings.TrimSpace(strings.TrimSuffix(rest, ")"))
		switch q.Func {
		case FuncRate:
		case FuncQuantile:
			qv, sel, ok := strings.Cut(inner, ",")
			if !ok {
				return Query{}, fmt.Errorf("query %q: histogram_quantile(Q, NAME) takes two arguments", s)
			}
			x, err := strconv.ParseFloat(strings.TrimSpace(qv), 64)
			if err != nil || x < 0 || x > 1 {
				return Query{}, fmt.Errorf("query %q: quantile %q must be a number in [0, 1]", s, qv)
			}
			q.Quantile, inner = x, strings.TrimSpace(sel)
		default:
			return Query{}, fmt.Errorf("query %q: unknown function %q (rate, histogram_quantile)", s, q.Func)
		}
	}
	name, match, err := parseSelector(inner)
	if err != nil {
		return Query{}, fmt.Errorf("query %q: %w", s, err)
	}
	if q.Func == FuncQuantile {
		name = strings.TrimSuffix(name, "_bucket")
	}
	q.Metric, q.Match = name, match
	return q, nil
}

func parseSelector(s string) (string, map[string]string, error) {
	name, rest, has := strings.Cut(s, "{")
	name = strings.TrimSpace(name)
	if !model.LegacyValidation.IsValidMetricName(name) {
		return "", nil, fmt.Errorf("bad metric name %q", name)
	}
	if !has {
		return name, nil, nil
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasSuffix(rest, "}") {
		return "", nil, fmt.Errorf("missing }")
	}
	m := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		v = strings.TrimSpace(v)
		uq, err := strconv.Unquote(v)
		if !ok || err != nil || k == "" || strings.HasSuffix(k, "!") {
			return "", nil, fmt.Errorf("matcher %q: only label=\"value\"", kv)
		}
		m[k] = uq
	}
	return name, m, nil
}

// LowerIsBetter reports whether smaller values mean better performance (a latency
// quantile); rates and gauges are taken as throughput (higher is better).
func (q Query) LowerIsBetter() bool { return q.Func == FuncQuantile }

// NeedsPrevious reports whether the query is evaluated between two scrapes.
func (q Query) NeedsPrevious() bool { return q.Func != FuncValue }

// Slowdown is performance at baseline over performance now, ≥ 1 when worse: now/base for
// a latency, base/now for a throughput (the Bubble-Up degradation, MICRO'11 §3).
func (q Query) Slowdown(base, now float64) float64 {
	if base <= 0 || now <= 0 {
		return math.NaN()
	}
	if q.LowerIsBetter() {
		return now / base
	}
	return base / now
}

// Scrape is one parsed exposition with its time.
type Scrape struct {
	At       time.Time
	Families map[string]*dto.MetricFamily
}

// ParseText reads a Prometheus text exposition.
func ParseText(r io.Reader, at time.Time) (Scrape, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return Scrape{}, err
	}
	return Scrape{At: at, Families: fams}, nil
}

func (q Query) matches(m *dto.Metric) bool {
	for k, v := range q.Match {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k {
				found = lp.GetValue() == v
				break
			}
		}
		if !found && v != "" {
			return false
		}
	}
	return true
}

// sum adds the matching series' values (counter, gauge or untyped); ok is false when
// the metric is absent or no series matches.
func (q Query) sum(s Scrape) (float64, bool) {
	f := s.Families[q.Metric]
	if f == nil {
		return 0, false
	}
	var v float64
	n := 0
	for _, m := range f.GetMetric() {
		if !q.matches(m) {
			continue
		}
		switch {
		case m.Counter != nil:
			v += m.Counter.GetValue()
		case m.Gauge != nil:
			v += m.Gauge.GetValue()
		case m.Untyped != nil:
			v += m.Untyped.GetValue()
		default:
			continue
		}
		n++
	}
	return v, n > 0
}

// Bucket is a cumulative histogram bucket: Count observations ≤ Upper.
type Bucket struct {
	Upper float64
	Count float64
}

// buckets sums the matching series' cumulative buckets by upper bound, sorted, with the
// +Inf bucket last (its count the sample count).
func (q Query) buckets(s Scrape) ([]Bucket, bool) {
	f := s.Families[q.Metric]
	if f == nil {
		return nil, false
	}
	by := map[float64]float64{}
	n := 0
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		if h == nil || !q.matches(m) {
			continue
		}
		n++
		inf := false
		for _, b := range h.GetBucket() {
			by[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			inf = inf || math.IsInf(b.GetUpperBound(), 1)
		}
		if !inf { // the text format lists le="+Inf"; a protobuf exposition may not
			by[math.Inf(1)] += float64(h.GetSampleCount())
		}
	}
	if n == 0 {
		return nil, false
	}
	out := make([]Bucket, 0, len(by))
	for u, c := range by {
		out = append(out, Bucket{u, c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Upper < out[j].Upper })
	return out, true
}

// HistogramQuantile is Prometheus's histogram_quantile over cumulative buckets sorted by
// upper bound (+Inf last): with rank r = q·N (N the +Inf count), find the first bucket
// whose cumulative count c_i ≥ r and interpolate linearly inside it,
//
//	x = lo + (hi − lo)·(r − c_{i−1})/(c_i − c_{i−1}),
//
// with lo = 0 for the first bucket (when its bound is positive); a rank in the +Inf
// bucket gives the largest finite bound (Prometheus documentation, "histogram_quantile":
// linear interpolation within a bucket, observations assumed uniform in it). NaN when
// there are no observations.
func HistogramQuantile(q float64, b []Bucket) float64 {
	if len(b) == 0 || b[len(b)-1].Count <= 0 || !math.IsInf(b[len(b)-1].Upper, 1) {
		return math.NaN()
	}
	rank := q * b[len(b)-1].Count
	i := sort.Search(len(b), func(i int) bool { return b[i].Count >= rank })
	if i == len(b)-1 {
		if i == 0 {
			return math.NaN()
		}
		return b[i-1].Upper
	}
	lo, prev := 0.0, 0.0
	if i > 0 {
		lo, prev = b[i-1].Upper, b[i-1].Count
	} else if b[0].Upper <= 0 {
		return b[0].Upper
	}
	if b[i].Count == prev {
		return b[i].Upper
	}
	return lo + (b[i].Upper-lo)*(rank-prev)/(b[i].Count-prev)
}

// Eval evaluates the query on cur, and for rate and histogram_quantile on the change
// since prev (nil: not yet possible, ok false). A counter that went down (the target
// restarted) and a series missing from prev are read from zero. ok is false when the series is missing, no time passed,
// or no observation fell between the scrapes.
func (q Query) Eval(prev *Scrape, cur Scrape) (float64, bool) {
	switch q.Func {
	case FuncValue:
		return q.sum(cur)
	case FuncRate:
		if prev == nil {
			return 0, false
		}
		dt := cur.At.Sub(prev.At).Seconds()
		c, ok := q.sum(cur)
		p, _ := q.sum(*prev) // a series born since (created at its first increment) was 0
		if !ok || dt <= 0 {
			return 0, false
		}
		if c < p {
			p = 0
		}
		return (c - p) / dt, true
	case FuncQuantile:
		if prev == nil {
			return 0, false
		}
		c, ok := q.buckets(cur)
		if !ok {
			return 0, false
		}
		p, _ := q.buckets(*prev) // a series born since had no observations
		d := delta(p, c)
		v := HistogramQuantile(q.Quantile, d)
		return v, !math.IsNaN(v)
	}
	return 0, false
}

// delta is cur − prev bucket by bucket (prev as zero where the target restarted).
func delta(prev, cur []Bucket) []Bucket {
	pv := map[float64]float64{}
	for _, b := range prev {
		pv[b.Upper] = b.Count
	}
	if len(cur) > 0 && len(prev) > 0 && cur[len(cur)-1].Count < prev[len(prev)-1].Count {
		pv = nil
	}
	out := make([]Bucket, len(cur))
	for i, b := range cur {
		out[i] = Bucket{b.Upper, b.Count - pv[b.Upper]}
	}
	return out
}
