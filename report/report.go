// Package report renders colo run directories as one self-contained HTML file: summary
// table per scheduler, per-container time series, the RDT bitmask panel, probes and
// decisions, the CDF of time over target and, for partition runs, STP versus unfairness.
// Charts are server-side SVG; the page fetches nothing and works from disk, in light and
// dark mode. Series are bucket means (at most maxBuckets points per job), so a 1-hour,
// 700-job run stays light in the browser.
package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"math/bits"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"colo/cbm"
	"colo/store"
)

// Options selects what to render.
type Options struct {
	Dirs  []string // the run directory first, then --compare directories
	Title string   // default: the first run's name
}

// dirInfo is one run directory's manifest and what it lacks.
type dirInfo struct {
	dir     string
	man     store.Manifest
	missing []string
}

// Stats tells what a rendering contained.
type Stats struct {
	Runs    int
	Jobs    int
	Samples int64
	Charts  int
}

// Write renders the report of opts.Dirs to w.
func Write(w io.Writer, opts Options) (Stats, error) {
	var st Stats
	if len(opts.Dirs) == 0 {
		return st, fmt.Errorf("no run directory given")
	}
	var runs []*runData
	var dirs []dirInfo
	for _, dir := range opts.Dirs {
		rs, man, missing, err := loadDir(dir, len(opts.Dirs) > 1)
		if err != nil {
			return st, err
		}
		runs = append(runs, rs...)
		dirs = append(dirs, dirInfo{dir: dir, man: man, missing: missing})
	}
	title := opts.Title
	if title == "" {
		title = "colo report: " + dirs[0].man.Name
	}
	p := &page{title: title}
	p.header(dirs)
	// Runs that only hold partitioning results (colo partition --out) are drawn by the
	// STP-versus-unfairness section alone: they have no scheduler summary, jobs or samples.
	var sched []*runData
	for _, r := range runs {
		if !r.partitionOnly() {
			sched = append(sched, r)
		}
	}
	assignColors(sched)
	if len(sched) > 0 || len(sched) == len(runs) {
		p.summary(sched)
	}
	p.overlays(sched)
	p.cdf(sched)
	p.partitions(runs)
	for _, r := range runs {
		st.Runs++
		if r.partitionOnly() {
			continue
		}
		p.runSection(r)
		st.Jobs += len(r.jobs)
		st.Samples += r.nSamples
	}
	st.Charts = p.charts
	_, err := io.WriteString(w, p.html())
	return st, err
}

type page struct {
	title  string
	body   strings.Builder
	toc    []string
	charts int
}

func (p *page) section(id, title string) {
	p.toc = append(p.toc, fmt.Sprintf(`<a href="#%s">%s</a>`, id, esc(title)))
	fmt.Fprintf(&p.body, `<h2 id="%s">%s</h2>`, id, esc(title))
}

// chart wraps an SVG body of height h in a figure; kind is a test hook (data-chart).
func (p *page) chart(kind, caption string, h float64, svg string) {
	p.charts++
	fmt.Fprintf(&p.body, `<figure class="chart" id="fig-%d" data-chart="%s"><svg viewBox="0 0 %d %s" role="img" aria-label="%s">%s</svg><figcaption>%s</figcaption></figure>`,
		p.charts, esc(kind), chartW, f1(h), esc(caption), svg, caption)
}

func (p *page) header(dirs []dirInfo) {
	fmt.Fprintf(&p.body, `<h1>%s</h1>`, esc(p.title))
	p.body.WriteString(`<table class="meta"><tr><th>run directory</th><th>name</th><th>machine</th><th>platform</th><th>seed</th><th>created</th><th>state</th></tr>`)
	for _, d := range dirs {
		state := `<span class="ok">complete</span>`
		if len(d.missing) > 0 {
			state = `<span class="bad">incomplete</span>`
		}
		created := ""
		if !d.man.Created.IsZero() {
			created = d.man.Created.UTC().Format("2006-01-02 15:04:05Z")
		}
		fmt.Fprintf(&p.body, `<tr><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%s</td></tr>`,
			esc(filepath.Base(d.dir)), esc(d.man.Name), esc(d.man.Machine), esc(d.man.Platform), d.man.Seed, created, state)
	}
	p.body.WriteString(`</table>`)
	for _, d := range dirs {
		if len(d.missing) == 0 {
			continue
		}
		fmt.Fprintf(&p.body, `<div class="warn" data-missing="%d"><strong>Incomplete run directory <code>%s</code>.</strong> Showing what exists. Missing:<ul>`, len(d.missing), esc(d.dir))
		for _, m := range d.missing {
			fmt.Fprintf(&p.body, `<li>%s</li>`, esc(m))
		}
		p.body.WriteString(`</ul></div>`)
	}
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.1f", x)
}

func frac(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.3f", x)
}

// delta is the relative change of x against base, in percent.
func delta(x, base float64) string {
	if math.IsNaN(x) || math.IsNaN(base) || base == 0 {
		return ""
	}
	return fmt.Sprintf(` <span class="delta">(%+.1f %%)</span>`, (x-base)/base*100)
}

func (p *page) summary(runs []*runData) {
	p.section("summary", "Summary per scheduler")
	if len(runs) == 0 {
		p.body.WriteString(`<p class="note">No scheduler run was recorded.</p>`)
		return
	}
	p.body.WriteString(`<table class="summary"><tr><th>scheduler</th><th>priority IPCE %</th><th>batch IPCE %</th><th>global IPCE %</th>` +
		`<th>time over target</th><th>p90</th><th>completed</th><th>rejected</th><th>queue delay s (mean / p90)</th><th>run s</th><th>wall s</th><th>samples</th></tr>`)
	var base *runData
	for _, r := range runs {
		if r.hasSum {
			base = r
			break
		}
	}
	for _, r := range runs {
		if !r.hasSum {
			fmt.Fprintf(&p.body, `<tr class="unfinished"><td>%s%s</td><td colspan="10">did not finish: no summary (%d jobs, %d samples recorded)</td><td>%d</td></tr>`,
				swatch(r), esc(r.label), len(r.jobs), r.nSamples, r.nSamples)
			continue
		}
		s := r.sum
		d := func(x, b float64) string {
			if r == base {
				return ""
			}
			return delta(x, b)
		}
		fmt.Fprintf(&p.body, `<tr><td>%s%s</td><td>%s%s</td><td>%s%s</td><td>%s%s</td><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%s / %s</td><td>%s</td><td>%s</td><td>%d</td></tr>`,
			swatch(r), esc(r.label), pct(s.PriorityIPCE), d(s.PriorityIPCE, base.sum.PriorityIPCE), pct(s.BatchIPCE), d(s.BatchIPCE, base.sum.BatchIPCE),
			pct(s.GlobalIPCE), d(s.GlobalIPCE, base.sum.GlobalIPCE), frac(s.TimeOverTarget), frac(s.TimeOverTargetP90),
			s.JobsCompleted, s.JobsRejected, pct(s.QueueDelayMean), pct(s.QueueDelayP90), pct(s.VirtualSeconds), frac(s.WallSeconds), r.nSamples)
	}
	p.body.WriteString(`</table>`)
	// Notes: what a run could not do on its platform (e.g. no IPCE without a PMU).
	for _, r := range runs {
		if len(r.sum.Notes) == 0 {
			continue
		}
		fmt.Fprintf(&p.body, `<div class="warn notes" data-notes="%d"><strong>Notes for %s:</strong><ul>`, len(r.sum.Notes), esc(r.label))
		for _, n := range r.sum.Notes {
			fmt.Fprintf(&p.body, `<li>%s</li>`, esc(n))
		}
		p.body.WriteString(`</ul></div>`)
	}
	// Extra summary numbers (probes, consolidations, allocation errors…), one column per run.
	keys := map[string]bool{}
	for _, r := range runs {
		for k := range r.sum.Extra {
			keys[k] = true
		}
	}
	if len(keys) > 0 {
		// Known counters first, in extraKeys' order and with their meaning; others after, sorted.
		var ks, rest []string
		for _, e := range extraKeys {
			if keys[e.key] {
				ks = append(ks, e.key)
			}
		}
		for k := range keys {
			if extraMeaning(k) == "" {
				rest = append(rest, k)
			}
		}
		sort.Strings(rest)
		ks = append(ks, rest...)
		p.body.WriteString(`<details open><summary>More summary numbers</summary><table class="extra"><tr><th></th>`)
		for _, r := range runs {
			fmt.Fprintf(&p.body, `<th>%s</th>`, esc(r.label))
		}
		p.body.WriteString(`<th>meaning</th></tr>`)
		for _, k := range ks {
			fmt.Fprintf(&p.body, `<tr data-key="%s"><td><code>%s</code></td>`, esc(k), esc(k))
			for _, r := range runs {
				v, ok := r.sum.Extra[k]
				if !ok {
					v = math.NaN()
				}
				cell := "—"
				if !math.IsNaN(v) {
					cell = strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.4f", v), "0"), ".")
				}
				fmt.Fprintf(&p.body, `<td>%s</td>`, cell)
			}
			fmt.Fprintf(&p.body, `<td class="meaning">%s</td></tr>`, esc(extraMeaning(k)))
		}
		p.body.WriteString(`</table></details>`)
	}
	if base != nil && len(runs) > 1 {
		fmt.Fprintf(&p.body, `<p class="note">Changes in parentheses are relative to %s.</p>`, esc(base.label))
	}
}

// extraKeys are the summary counters colo run stores in summaries.extra (bench.StoreSummary),
// in the order the report lists them, with what they count.
var extraKeys = []struct{ key, meaning string }{
	{"jobs_total", "jobs in the trace"},
	{"jobs_started", "jobs admitted (placed and started)"},
	{"jobs_queued_at_end", "jobs that arrived but still waited for admission when the run ended (state queued)"},
	{"jobs_not_started", "jobs arriving at or after max_t: the run ended before they could be admitted (state not-started)"},
	{"priority_jobs", "priority jobs in the trace"},
	{"batch_jobs", "batch jobs in the trace"},
	{"probes", "allocation probes started"},
	{"probes_failed", "probes that failed"},
	{"reprobes", "probes of a job that had been probed before"},
	{"migrations", "jobs moved to another socket (rebalancing, forced moves)"},
	{"consolidations", "scheduler decisions after which moved groups lost cached ways (consolidation)"},
	{"consolidated_ways", "ways whose cached lines moved groups lost, summed over the consolidations"},
	{"allocation_errors", "allocations the platform failed to apply"},
	{"allocation_mismatches", "collector read-backs that disagreed with what the scheduler applied"},
	{"samples", "collector samples recorded"},
	{"partition_results", "(workload, policy) results of colo partition"},
}

func extraMeaning(k string) string {
	for _, e := range extraKeys {
		if e.key == k {
			return e.meaning
		}
	}
	return ""
}

// cdf draws, per scheduler run, the empirical CDF of the priority jobs' time over target.
func (p *page) cdf(runs []*runData) {
	any := false
	for _, r := range runs {
		any = any || len(r.overTgt) > 0
	}
	if !any {
		return
	}
	p.section("cdf", "Time over target (priority jobs)")
	const h = 280
	var sb strings.Builder
	f := newFrame(&sb, h, 0, 1, 0, 1, false, "fraction of priority jobs")
	var legend []string
	for _, r := range runs {
		var xs []float64
		for _, v := range r.overTgt {
			xs = append(xs, v)
		}
		if len(xs) == 0 {
			continue
		}
		sort.Float64s(xs)
		var px, py []float64
		px, py = append(px, 0), append(py, 0)
		for k, x := range xs {
			px = append(px, x, x)
			py = append(py, float64(k)/float64(len(xs)), float64(k+1)/float64(len(xs)))
		}
		px, py = append(px, 1), append(py, 1)
		fmt.Fprintf(&sb, `<path class="series cdf" data-points="%d" style="stroke:%s" d="%s"><title>%s: %d priority jobs</title></path>`,
			len(xs), r.color, f.path(px, py), esc(r.label), len(xs))
		legend = append(legend, fmt.Sprintf(`<span class="key" style="--c:%s">%s (n=%d, median %.2f)</span>`, r.color, esc(r.label), len(xs), xs[len(xs)/2]))
	}
	fmt.Fprintf(&sb, `<text class="xlabel" x="%d" y="%d" text-anchor="middle">fraction of the job's life with IPCE ≥ its target</text>`, (marginL+chartW-marginR)/2, h-2)
	p.chart("cdf", "Empirical CDF of the priority jobs' time over target (the fraction of each job's life with IPCE at or above its target). Further right is better. "+strings.Join(legend, " "), h, sb.String())
}

// runSection draws one scheduler run: time series, bitmask panel, probes and decisions, jobs.
func (p *page) runSection(r *runData) {
	id := fmt.Sprintf("run-%d-%s", r.run.ID, sanitize(r.label))
	p.section(id, "Scheduler "+r.label)
	fmt.Fprintf(&p.body, `<p class="note">%s this scheduler's colour in the comparison charts.</p>`, swatch(r))
	prio := 0
	for _, j := range r.jobs {
		if j.Priority {
			prio++
		}
	}
	fmt.Fprintf(&p.body, `<p class="note">%d jobs (%d priority; %s), %d samples over %s; series are means over %s buckets.</p>`,
		len(r.jobs), prio, esc(stateCounts(r.jobs)), r.nSamples, fmtTime(r.tMax, r.tMax > 600), fmtNum(r.bucket)+" s")
	p.body.WriteString(`<section class="run">`)
	if r.nSamples == 0 {
		p.body.WriteString(`<p class="note">No samples were recorded for this run.</p>`)
	} else {
		for m := 0; m < nMetrics; m++ {
			p.seriesChart(r, m)
		}
	}
	p.allocationPanel(r)
	p.lanes(r)
	p.jobsTable(r)
	p.body.WriteString(`</section>`)
}

// jobStates lists the job states of colo run (bench.State*) in the order the report counts them.
var jobStates = []string{"completed", "running", "killed", "expired", "rejected", "queued", "not-started"}

// stateCounts says how many jobs ended in each state, e.g. "629 completed, 74 queued".
func stateCounts(jobs []store.Job) string {
	n := map[string]int{}
	for _, j := range jobs {
		n[j.State]++
	}
	var parts []string
	for _, st := range jobStates {
		if n[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
			delete(n, st)
		}
	}
	rest := slices.Sorted(maps.Keys(n))
	for _, st := range rest {
		parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
	}
	return strings.Join(parts, ", ")
}

func sanitize(s string) string {
	var sb strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			sb.WriteRune(c)
		} else {
			sb.WriteByte('_')
		}
	}
	return sb.String()
}

// seriesChart draws one metric for every job of a run, priority jobs highlighted, plus the
// mean over priority and over batch jobs.
func (p *page) seriesChart(r *runData, m int) {
	info := metricInfo[m]
	if why := r.unavailable(m); why != "" {
		fmt.Fprintf(&p.body, `<p class="note unavailable" data-unavailable="%s">%s: %s.</p>`, info.key, info.title, esc(why))
		return
	}
	ids := r.jobIDs()
	drawn, why := r.drawnJobs()
	draw := map[int]bool{}
	for _, id := range drawn {
		draw[id] = true
	}
	ymax := 0.0
	for _, id := range ids {
		js := r.series[id]
		for k := range js.cnt[m] {
			if v := js.mean(m, js.first+k); !math.IsNaN(v) {
				ymax = math.Max(ymax, v)
			}
		}
	}
	ymax = yTop(m, ymax)
	const h = 250
	var sb strings.Builder
	f := newFrame(&sb, h, 0, r.tMax, 0, ymax*1.02, true, info.unit)
	few := len(ids) <= len(palette)
	xs := make([]float64, 0, 64)
	ys := make([]float64, 0, 64)
	// Group means per bucket.
	gsum := [2][]float64{make([]float64, r.nBuckets), make([]float64, r.nBuckets)}
	gcnt := [2][]int{make([]int, r.nBuckets), make([]int, r.nBuckets)}
	points := 0
	var legend []string
	lines := 0
	for _, id := range ids {
		js := r.series[id]
		j := r.job[id]
		xs, ys = xs[:0], ys[:0]
		for k := range js.cnt[m] {
			b := js.first + k
			v := js.mean(m, b)
			xs = append(xs, (float64(b)+0.5)*r.bucket)
			ys = append(ys, v)
			if !math.IsNaN(v) && b < r.nBuckets {
				g := 0
				if j.Priority {
					g = 1
				}
				gsum[g][b] += v
				gcnt[g][b]++
				points++
			}
		}
		if !draw[id] {
			continue // counted in the means only
		}
		cls := "series batch"
		stroke := ""
		if j.Priority {
			cls = "series prio"
		}
		if few {
			stroke = fmt.Sprintf(` style="stroke:%s"`, color(lines))
			legend = append(legend, fmt.Sprintf(`<span class="key%s" style="--c:%s">%s</span>`, map[bool]string{true: " prio", false: ""}[j.Priority], color(lines), esc(jobName(j, id))))
		}
		lines++
		fmt.Fprintf(&sb, `<path class="%s" data-job="%d"%s d="%s"><title>%s</title></path>`, cls, id, stroke, f.joined(xs, ys), esc(jobTitle(j, id)))
	}
	if !few {
		for g, name := range []string{"batch", "prio"} {
			xs, ys = xs[:0], ys[:0]
			for b := 0; b < r.nBuckets; b++ {
				xs = append(xs, (float64(b)+0.5)*r.bucket)
				if gcnt[g][b] == 0 {
					ys = append(ys, math.NaN())
				} else {
					ys = append(ys, gsum[g][b]/float64(gcnt[g][b]))
				}
			}
			fmt.Fprintf(&sb, `<path class="series mean %s" d="%s"><title>mean over %s jobs</title></path>`, name, f.joined(xs, ys), map[string]string{"batch": "batch", "prio": "priority"}[name])
		}
		legend = append(legend, `<span class="key prio" style="--c:var(--prio)">priority jobs</span>`,
			`<span class="key" style="--c:var(--batch)">batch jobs</span>`,
			`<span class="key mean" style="--c:var(--prio)">priority mean</span>`,
			`<span class="key mean" style="--c:var(--fg)">batch mean</span>`)
	}
	// Probe segments as shaded bands on the IPCE chart.
	if m == mIPCE {
		for _, pr := range r.probes {
			x0, x1 := f.x.at(pr.Start.Seconds()), f.x.at(pr.End.Seconds())
			fmt.Fprintf(&sb, `<rect class="probeband" x="%s" y="%d" width="%s" height="%s"><title>probe job %d: %d ways, MBA %s, %s</title></rect>`,
				f1(x0), marginT, f1(math.Max(x1-x0, 0.5)), f1(h-marginB-marginT), pr.Job, pr.Ways, pct(pr.MBA), esc(pr.Result))
		}
	}
	if why != "" {
		why = `<span class="capped">` + esc(why) + `</span> `
	}
	p.chart("series-"+info.key, fmt.Sprintf(`%s (%s), %d jobs, %d points. %s%s`, info.title, info.unit, len(ids), points, why, strings.Join(legend, " ")), h,
		fmt.Sprintf(`<g data-points="%d" data-jobs="%d" data-lines="%d">%s</g>`, points, len(ids), lines, sb.String()))
}

func jobName(j store.Job, id int) string {
	if j.Name == "" {
		return fmt.Sprintf("job %d", id)
	}
	return j.Name
}

func jobTitle(j store.Job, id int) string {
	s := fmt.Sprintf("%s (#%d, %s", jobName(j, id), id, j.Model)
	if j.Priority {
		s += fmt.Sprintf(", priority, IPCE target %.0f %%", j.IPCETarget*100)
	}
	return s + ")"
}

// allocationPanel draws, per socket, which class held each way over time (the thesis's RDT
// bitmask panel): x = time, y = way index (way 0 at the bottom), one rectangle per run of
// contiguous ways per (class, mask) period.
func (p *page) allocationPanel(r *runData) {
	if len(r.allocs) == 0 {
		p.body.WriteString(`<p class="note">No cache allocations were recorded (scheduler without RDT).</p>`)
		return
	}
	periods := r.periods()
	classes := map[string]int{}
	var names []string
	for _, q := range periods {
		if _, ok := classes[q.clos]; !ok {
			classes[q.clos] = len(names)
			names = append(names, q.clos)
		}
	}
	for s := 0; s < r.sockets; s++ {
		const rowH = 16.0
		h := float64(r.ways)*rowH + marginT + marginB
		var sb strings.Builder
		f := newFrameTicks(&sb, h, 0, r.tMax, 0, float64(r.ways), true, "way", false)
		for w := 0; w < r.ways; w++ {
			fmt.Fprintf(&sb, `<text x="%d" y="%s" text-anchor="end" dy="0.32em">%d</text>`, marginL-6, f1(f.y.at(float64(w)+0.5)), w)
		}
		n := 0
		for _, q := range periods {
			if q.socket != s {
				continue
			}
			x0, x1 := f.x.at(q.t0), f.x.at(q.t1)
			fill := color(classes[q.clos])
			cls := "cbm"
			if q.clos == "system/default" {
				fill, cls = "var(--default)", "cbm default"
			}
			// One rect per run of contiguous set bits.
			for b, e := range cbm.Mask(q.mask).Runs() {
				y0, y1 := f.y.at(float64(e)), f.y.at(float64(b))
				fmt.Fprintf(&sb, `<rect class="%s" data-socket="%d" data-clos="%s" data-mask="%#x" data-t0="%g" data-t1="%g" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s (class %s): mask %#x (%d ways), MBA %s %%, %s–%s</title></rect>`,
					cls, s, esc(q.clos), q.mask, q.t0, q.t1, f1(x0), f1(y0), f1(math.Max(x1-x0, 0.5)), f1(y1-y0), fill,
					esc(r.className(q.clos, q.members)), esc(q.clos), q.mask, bits.OnesCount64(q.mask), pct(q.mba), fmtTime(q.t0, true), fmtTime(q.t1, true))
				n++
			}
		}
		legend := " " + r.classLegend(periods, s, names, classes)
		p.chart("bitmask", fmt.Sprintf(`L3 bitmask panel, socket %d: which class of service held each of the %d ways over time (grey: system/default). %d periods.%s`, s, r.ways, n, legend), h,
			fmt.Sprintf(`<g class="bitmask" data-socket="%d" data-points="%d">%s</g>`, s, n, sb.String()))
	}
}

// lanes draws probe segments (one lane per socket) and scheduler decisions (one lane per
// event kind) on the run's time axis.
func (p *page) lanes(r *runData) {
	if len(r.probes) == 0 && len(r.events) == 0 {
		return
	}
	kinds := map[string]int{}
	var names []string
	for _, e := range r.events {
		if _, ok := kinds[e.Kind]; !ok {
			kinds[e.Kind] = 0
			names = append(names, e.Kind)
		}
	}
	sort.Strings(names)
	var lanes []string
	probeLane := map[int]int{}
	sockets := map[int]bool{}
	for _, pr := range r.probes {
		sockets[pr.Socket] = true
	}
	ss := slices.Sorted(maps.Keys(sockets))
	for _, s := range ss {
		probeLane[s] = len(lanes)
		lanes = append(lanes, fmt.Sprintf("probe s%d", s))
	}
	for i, n := range names {
		kinds[n] = len(lanes)
		_ = i
		lanes = append(lanes, n)
	}
	const laneH = 22.0
	h := float64(len(lanes))*laneH + marginT + marginB
	var sb strings.Builder
	f := newFrameTicks(&sb, h, 0, r.tMax, 0, float64(len(lanes)), true, "", false)
	// Lane labels replace the numeric y axis.
	for i, l := range lanes {
		fmt.Fprintf(&sb, `<text class="lane" x="%d" y="%s" text-anchor="end" dy="0.32em">%s</text>`, marginL-4, f1(f.y.at(float64(i)+0.5)), esc(l))
	}
	n := 0
	for _, pr := range r.probes {
		y := f.y.at(float64(probeLane[pr.Socket]) + 0.85)
		x0, x1 := f.x.at(pr.Start.Seconds()), f.x.at(pr.End.Seconds())
		cls := "probe"
		switch pr.Result {
		case "best", "break":
			cls = "probe best" // the chosen combination, or the last one of the sweep
		case "failed":
			cls = "probe failed"
		}
		fmt.Fprintf(&sb, `<rect class="%s" data-job="%d" x="%s" y="%s" width="%s" height="%s"><title>probe job %d (%s): %d ways %#x, MBA %s %%, IPCE %s %%, %s</title></rect>`,
			cls, pr.Job, f1(x0), f1(y), f1(math.Max(x1-x0, 1)), f1(laneH*0.7), pr.Job, esc(jobName(r.job[pr.Job], pr.Job)), pr.Ways, pr.Mask, pct(pr.MBA), pct(pr.IPCE*100), esc(pr.Result))
		n++
	}
	for _, e := range r.events {
		x := f.x.at(e.T.Seconds())
		y := f.y.at(float64(kinds[e.Kind]) + 0.85)
		who := ""
		if e.Job >= 0 {
			who = fmt.Sprintf(" job %d (%s)", e.Job, jobName(r.job[e.Job], e.Job))
		}
		fmt.Fprintf(&sb, `<line class="event" data-job="%d" x1="%s" x2="%s" y1="%s" y2="%s" style="stroke:%s"><title>%s %s%s: %s</title></line>`,
			e.Job, f1(x), f1(x), f1(y), f1(y+laneH*0.7), color(kinds[e.Kind]), fmtTime(e.T.Seconds(), true), esc(e.Kind), esc(who), esc(e.Text))
		n++
	}
	var keys []string
	if len(r.probes) > 0 {
		keys = append(keys, `<span class="key" style="--c:var(--probe)">probe segment measured</span>`,
			`<span class="key" style="--c:var(--best)">chosen (or last of the sweep)</span>`, `<span class="key" style="--c:var(--bad)">failed</span>`)
	}
	for _, n := range names {
		keys = append(keys, fmt.Sprintf(`<span class="key" style="--c:%s">%s</span>`, color(kinds[n]), esc(n)))
	}
	p.chart("lanes", fmt.Sprintf(`Probe segments and scheduler decisions: %d probe segments, %d decisions; hover for details. %s`, len(r.probes), len(r.events), strings.Join(keys, " ")), h,
		fmt.Sprintf(`<g data-points="%d">%s</g>`, n, sb.String()))
}

func (p *page) jobsTable(r *runData) {
	if len(r.jobs) == 0 {
		return
	}
	fmt.Fprintf(&p.body, `<details><summary>Jobs (%d)</summary><table class="jobs"><tr><th>id</th><th>name</th><th>model</th><th>priority</th><th>IPCE target %%</th><th>cores</th><th>socket</th><th>arrival s</th><th>start s</th><th>stop s</th><th>state</th><th>mean IPCE %%</th><th>time over target</th><th>reason</th></tr>`, len(r.jobs))
	ts := func(d interface{ Seconds() float64 }, unset bool) string {
		if unset {
			return "—"
		}
		return fmt.Sprintf("%.1f", d.Seconds())
	}
	for _, j := range r.jobs {
		cls := ""
		if j.Priority {
			cls = ` class="prio"`
		}
		tot := "—"
		if v, ok := r.overTgt[j.ID]; ok {
			tot = frac(v)
		}
		mi := math.NaN()
		if v, ok := r.meanIPCE[j.ID]; ok {
			mi = v
		}
		fmt.Fprintf(&p.body, `<tr%s><td>%d</td><td>%s</td><td>%s</td><td>%v</td><td>%s</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>`,
			cls, j.ID, esc(j.Name), esc(j.Model), j.Priority, pct(j.IPCETarget*100), j.Cores, j.Socket,
			ts(j.Arrival, false), ts(j.Start, j.Start == store.Unset), ts(j.Stop, j.Stop == store.Unset), esc(j.State), pct(mi), tot, esc(j.Reason))
	}
	p.body.WriteString(`</table></details>`)
}
