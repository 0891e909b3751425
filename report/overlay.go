package report

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"

	"colo/store"
)

// unavailable says why metric m of run r is not drawn ("" when it is): no sample carries it
// (no PMU, no RDT monitoring), or, on a real host, every sample of a monitoring metric
// reads 0, which is what a resctrl emulator mount returns (real RDT monitoring of a
// running job never does): those zeros are not measurements.
func (r *runData) unavailable(m int) string {
	switch {
	case !r.avail[m]:
		return "unavailable on this host (no samples carry it, e.g. no PMU or no RDT monitoring)"
	case (m == mOcc || m == mBW) && !r.nonzero[m] && r.platform != "sim" && r.platform != "":
		return "unavailable (emulator): every sample reads 0, which is what a resctrl emulator mount returns; these zeros are not measurements"
	}
	return ""
}

// className names a class of service for people: the jobs it holds (their names from the
// benchmark) rather than colo's internal "job-ID".
func (r *runData) className(clos string, members []int) string {
	if clos == "system/default" {
		return clos
	}
	ids := members
	if len(ids) == 0 {
		var id int
		if _, err := fmt.Sscanf(clos, "job-%d", &id); err == nil {
			ids = []int{id}
		}
	}
	var names []string
	for _, id := range ids {
		if j, ok := r.job[id]; ok && j.Name != "" {
			names = append(names, r.uniqueName(j))
		}
	}
	if len(names) == 0 {
		return clos
	}
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("+%d", len(names)-3))
	}
	return strings.Join(names, ", ")
}

// assignColors gives every scheduler run its colour, used by the summary, the overlays, the
// CDF and its own section alike.
func assignColors(runs []*runData) {
	for i, r := range runs {
		r.color = color(i)
	}
}

// swatch is a scheduler's colour key in tables and headings.
func swatch(r *runData) string {
	return fmt.Sprintf(`<span class="swatch" style="--c:%s"></span>`, r.color)
}

// overlays draws, when several scheduler runs have samples, one chart per metric with every
// scheduler on the same axes: the mean over all jobs (solid) and over priority jobs
// (dashed), per bucket, in the scheduler's colour; then the number of running jobs.
func (p *page) overlays(runs []*runData) {
	var rs []*runData
	for _, r := range runs {
		if r.nSamples > 0 {
			rs = append(rs, r)
		}
	}
	if len(rs) < 2 {
		return
	}
	p.section("compare", "Schedulers compared on shared axes")
	tMax := 0.0
	for _, r := range rs {
		tMax = math.Max(tMax, r.tMax)
	}
	for m := 0; m < nMetrics; m++ {
		p.overlay(rs, m, tMax)
	}
	p.runningOverlay(rs, tMax)
}

// groupMeans returns the per-bucket mean of metric m over the jobs of r (priority only when
// prio), with the bucket centres.
func (r *runData) groupMeans(m int, prio bool) (xs, ys []float64, n int) {
	sum := make([]float64, r.nBuckets)
	cnt := make([]int, r.nBuckets)
	for id, js := range r.series {
		if prio && !r.job[id].Priority {
			continue
		}
		n++
		for k := range js.cnt[m] {
			b := js.first + k
			if v := js.mean(m, b); !math.IsNaN(v) && b < r.nBuckets {
				sum[b] += v
				cnt[b]++
			}
		}
	}
	for b := range sum {
		xs = append(xs, (float64(b)+0.5)*r.bucket)
		if cnt[b] == 0 {
			ys = append(ys, math.NaN())
		} else {
			ys = append(ys, sum[b]/float64(cnt[b]))
		}
	}
	return xs, ys, n
}

func (p *page) overlay(rs []*runData, m int, tMax float64) {
	info := metricInfo[m]
	type line struct {
		r      *runData
		xs, ys []float64
		px, py []float64 // priority jobs; nil when the run has none or only priority jobs
	}
	var lines []line
	var missing []string
	ymax := 0.0
	for _, r := range rs {
		if why := r.unavailable(m); why != "" {
			missing = append(missing, fmt.Sprintf(`<span class="key none" style="--c:%s">%s: %s</span>`, r.color, esc(r.label), esc(strings.SplitN(why, ":", 2)[0])))
			continue
		}
		l := line{r: r}
		var n int
		l.xs, l.ys, n = r.groupMeans(m, false)
		if px, py, np := r.groupMeans(m, true); np > 0 && np < n {
			l.px, l.py = px, py
		}
		for _, ys := range [][]float64{l.ys, l.py} {
			for _, v := range ys {
				if !math.IsNaN(v) {
					ymax = math.Max(ymax, v)
				}
			}
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		fmt.Fprintf(&p.body, `<p class="note unavailable" data-unavailable="%s">%s: %s</p>`, info.key, info.title, strings.Join(missing, " "))
		return
	}
	ymax = yTop(m, ymax)
	const h = 260
	var sb strings.Builder
	f := newFrame(&sb, h, 0, tMax, 0, ymax*1.02, true, info.unit)
	points := 0
	var legend []string
	dashed := false
	for i, l := range lines {
		for _, v := range l.ys {
			if !math.IsNaN(v) {
				points++
			}
		}
		w := overlayWidth(i, len(lines))
		fmt.Fprintf(&sb, `<path class="series overlay" data-scheduler="%s" style="stroke:%s;stroke-width:%s" d="%s"><title>%s: mean over all jobs</title></path>`,
			esc(l.r.label), l.r.color, f1(w), f.joined(l.xs, l.ys), esc(l.r.label))
		if l.px != nil {
			dashed = true
			fmt.Fprintf(&sb, `<path class="series overlay prio-mean" data-scheduler="%s" style="stroke:%s;stroke-width:%s" d="%s"><title>%s: mean over priority jobs</title></path>`,
				esc(l.r.label), l.r.color, f1(w*0.8), f.joined(l.px, l.py), esc(l.r.label))
		}
		legend = append(legend, fmt.Sprintf(`<span class="key mean" style="--c:%s">%s</span>`, l.r.color, esc(l.r.label)))
	}
	how := "Mean over all jobs per scheduler"
	if dashed {
		how += " (solid) and over priority jobs (dashed)"
	}
	p.chart("overlay-"+info.key, fmt.Sprintf(`%s (%s). %s. %s %s`, info.title, info.unit, how,
		strings.Join(legend, " "), strings.Join(missing, " ")), h,
		fmt.Sprintf(`<g data-points="%d" data-lines="%d">%s</g>`, points, len(lines), sb.String()))
}

// runningOverlay draws the number of running jobs over time per scheduler (a step line from
// the jobs' start and stop times).
func (p *page) runningOverlay(rs []*runData, tMax float64) {
	type step struct {
		t float64
		d int
	}
	type line struct {
		r      *runData
		xs, ys []float64
	}
	var lines []line
	var legend []string
	ymax, points := 1, 0
	for _, r := range rs {
		var steps []step
		for _, j := range r.jobs {
			if j.Start == store.Unset {
				continue
			}
			stop := tMax
			if j.Stop != store.Unset {
				stop = j.Stop.Seconds()
			}
			steps = append(steps, step{j.Start.Seconds(), 1}, step{stop, -1})
		}
		if len(steps) == 0 {
			continue
		}
		sort.SliceStable(steps, func(a, b int) bool {
			if steps[a].t != steps[b].t {
				return steps[a].t < steps[b].t
			}
			return steps[a].d < steps[b].d // stops before starts at the same instant
		})
		l := line{r: r, xs: []float64{0}, ys: []float64{0}}
		n := 0
		for _, s := range steps {
			l.xs, l.ys = append(l.xs, s.t), append(l.ys, float64(n))
			n += s.d
			l.xs, l.ys = append(l.xs, s.t), append(l.ys, float64(n))
			ymax = max(ymax, n)
		}
		points += len(steps)
		lines = append(lines, l)
		legend = append(legend, fmt.Sprintf(`<span class="key mean" style="--c:%s">%s</span>`, r.color, esc(r.label)))
	}
	if len(lines) == 0 {
		return
	}
	const h = 220
	var sb strings.Builder
	f := newFrame(&sb, h, 0, tMax, 0, float64(ymax)*1.05, true, "running jobs")
	for i, l := range lines {
		fmt.Fprintf(&sb, `<path class="series overlay" data-scheduler="%s" style="stroke:%s;stroke-width:%s" d="%s"><title>%s: running jobs</title></path>`,
			esc(l.r.label), l.r.color, f1(overlayWidth(i, len(lines))), f.path(l.xs, l.ys), esc(l.r.label))
	}
	p.chart("overlay-running", "Jobs running over time per scheduler. "+strings.Join(legend, " "), h,
		fmt.Sprintf(`<g data-points="%d" data-lines="%d">%s</g>`, points, len(lines), sb.String()))
}

// classLegend is the bitmask panel's legend for socket s: every class with its jobs' names
// when there are few; with many (a 700-job run), how to read the colours and the jobs that
// held the most way-seconds.
func (r *runData) classLegend(periods []classPeriod, s int, names []string, classes map[string]int) string {
	on := map[string]float64{} // way-seconds per class on the socket
	members := map[string][]int{}
	for _, q := range periods {
		if q.socket == s {
			on[q.clos] += float64(bits.OnesCount64(q.mask)) * (q.t1 - q.t0)
			if len(members[q.clos]) == 0 {
				members[q.clos] = q.members
			}
		}
	}
	key := func(c string) string {
		col := color(classes[c])
		if c == "system/default" {
			col = "var(--default)"
		}
		return fmt.Sprintf(`<span class="key block" style="--c:%s">%s</span>`, col, esc(r.className(c, members[c])))
	}
	var keys []string
	if len(on) <= 16 {
		for _, c := range names {
			if _, ok := on[c]; ok {
				keys = append(keys, key(c))
			}
		}
		return strings.Join(keys, " ")
	}
	top := make([]string, 0, len(on))
	for c := range on {
		if c != "system/default" {
			top = append(top, c)
		}
	}
	sort.Slice(top, func(a, b int) bool {
		if on[top[a]] != on[top[b]] {
			return on[top[a]] > on[top[b]]
		}
		return top[a] < top[b]
	})
	keys = append(keys, key("system/default"))
	for _, c := range top[:min(8, len(top))] {
		keys = append(keys, key(c))
	}
	return fmt.Sprintf(`%d classes, one colour each (the %d colours repeat; hover a block for its jobs, mask and MBA). The most ways × time: %s`,
		len(on), len(palette), strings.Join(keys, " "))
}

// uniqueName is the job's name from the benchmark, with its id when other jobs share the
// name (jobs drawn from one pool entry).
func (r *runData) uniqueName(j store.Job) string {
	if r.nameCount == nil {
		r.nameCount = map[string]int{}
		for _, x := range r.jobs {
			r.nameCount[x.Name]++
		}
	}
	if r.nameCount[j.Name] > 1 {
		return fmt.Sprintf("%s #%d", j.Name, j.ID)
	}
	return j.Name
}

// overlayWidth is the stroke width of the i-th of n overlaid schedulers: earlier ones are
// drawn wider, so that where two schedulers' lines coincide both stay visible (a wide band
// of the first around the second).
func overlayWidth(i, n int) float64 { return 2 + 2.2*float64(n-1-i) }
