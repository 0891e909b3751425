package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"

	"colo/bench"
)

// WriteIntervals writes a self-contained HTML page for `colo run|compare --repeat N --html`:
// per metric, each scheduler's mean over the seeds as a dot with its 95 % confidence
// interval as a whisker (metric.MeanCI), then the paired t-tests against the baseline
// (metric.PairedTTest) as a table. Deterministic: the same report gives the same bytes.
func WriteIntervals(w io.Writer, r *bench.RepeatReport) error {
	var b strings.Builder
	e := html.EscapeString
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s — %d seeds</title>\n", e(r.Benchmark), r.Repeat)
	b.WriteString(`<style>body{font-family:sans-serif;margin:2em;color:#222}svg{display:block;margin:0 0 1.5em}` +
		`table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}` +
		`th:first-child,td:first-child{text-align:left}.sig{font-weight:bold}</style></head><body>` + "\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p>%d seeds (noise seeds %s", e(r.Benchmark), r.Repeat, e(seeds(r.NoiseSeeds)))
	if len(r.TraceSeeds) > 0 {
		fmt.Fprintf(&b, ", trace seeds %s", e(seeds(r.TraceSeeds)))
	}
	fmt.Fprintf(&b, ", noise %s). Dots are means, whiskers 95 %% confidence intervals of the mean (Student's t).</p>\n", num(r.Noise))
	for _, m := range r.Metrics {
		fmt.Fprintf(&b, "<h2>%s</h2>\n", e(m))
		b.WriteString(intervalSVG(r, m))
	}
	if len(r.Diffs) > 0 {
		fmt.Fprintf(&b, "<h2>Differences</h2>\n<p>%s. Bold: significant.</p>\n<table><tr><th>scheduler − baseline</th><th>metric</th><th>mean diff</th><th>95 %% CI</th><th>t</th><th>p</th></tr>\n", e(r.Test))
		for _, d := range r.Diffs {
			for _, m := range r.Metrics {
				pt := d.Metrics[m]
				cls := ""
				if pt.Significant {
					cls = ` class="sig"`
				}
				fmt.Fprintf(&b, "<tr%s><td>%s − %s</td><td>%s</td><td>%s</td><td>[%s, %s]</td><td>%s</td><td>%s</td></tr>\n",
					cls, e(d.Name), e(d.Baseline), e(m), num(pt.Mean), num(pt.Lo), num(pt.Hi), num(pt.T), num(pt.P))
			}
		}
		b.WriteString("</table>\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "<p>note: %s</p>\n", e(n))
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// intervalSVG draws one metric: a row per scheduler, x = the metric's value.
func intervalSVG(r *bench.RepeatReport, m string) string {
	const width, left, right, rowH, top = 640.0, 130.0, 20.0, 26.0, 10.0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range r.Schedulers {
		iv := s.Metrics[m]
		for _, x := range []float64{iv.Mean, iv.Lo, iv.Hi} {
			if !math.IsNaN(x) {
				lo, hi = math.Min(lo, x), math.Max(hi, x)
			}
		}
	}
	if math.IsInf(lo, 1) {
		return "<p>no values</p>\n"
	}
	if hi == lo {
		lo, hi = lo-1, hi+1
	}
	pad := (hi - lo) * 0.08
	lo, hi = lo-pad, hi+pad
	x := func(v float64) float64 { return left + (v-lo)/(hi-lo)*(width-left-right) }
	h := top + rowH*float64(len(r.Schedulers)) + 24
	var b strings.Builder
	fmt.Fprintf(&b, "<svg width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" role=\"img\" aria-label=\"%s\">\n", width, h, width, h, html.EscapeString(m))
	axisY := top + rowH*float64(len(r.Schedulers))
	fmt.Fprintf(&b, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#888\"/>\n", left, axisY, width-right, axisY)
	for _, t := range []float64{lo + pad, (lo + hi) / 2, hi - pad} {
		fmt.Fprintf(&b, "<text x=\"%s\" y=\"%g\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n", f2(x(t)), axisY+16, num(t))
	}
	for i, s := range r.Schedulers {
		iv := s.Metrics[m]
		y := top + rowH*float64(i) + rowH/2
		fmt.Fprintf(&b, "<text x=\"%g\" y=\"%g\" font-size=\"12\" text-anchor=\"end\">%s</text>\n", left-8, y+4, html.EscapeString(s.Name))
		if !math.IsNaN(iv.Lo) {
			fmt.Fprintf(&b, "<line x1=\"%s\" y1=\"%g\" x2=\"%s\" y2=\"%g\" stroke=\"#1f77b4\" stroke-width=\"2\"><title>95 %% CI [%s, %s]</title></line>\n",
				f2(x(iv.Lo)), y, f2(x(iv.Hi)), y, num(iv.Lo), num(iv.Hi))
			for _, v := range []float64{iv.Lo, iv.Hi} {
				fmt.Fprintf(&b, "<line x1=\"%s\" y1=\"%g\" x2=\"%s\" y2=\"%g\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n", f2(x(v)), y-6, f2(x(v)), y+6)
			}
		}
		if !math.IsNaN(iv.Mean) {
			fmt.Fprintf(&b, "<circle cx=\"%s\" cy=\"%g\" r=\"4\" fill=\"#d62728\"><title>mean %s, sd %s, n %d</title></circle>\n", f2(x(iv.Mean)), y, num(iv.Mean), num(iv.SD), iv.N)
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

func num(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

func seeds(s []uint64) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = strconv.FormatUint(x, 10)
	}
	return strings.Join(parts, ",")
}
