package report

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"

	"colo/cbm"
	"colo/store"
)

// hollowMarker tells whether the i-th policy of the scatter is drawn as rings: the palette
// has 12 colours and colo partition 13 policies, so the colours repeat as rings.
func hollowMarker(i int) bool { return (i/len(palette))%2 == 1 }

// partitions draws STP versus unfairness for partition results, one colour per policy.
func (p *page) partitions(runs []*runData) {
	var parts []store.PartitionResult
	for _, r := range runs {
		parts = append(parts, r.parts...)
	}
	if len(parts) == 0 {
		return
	}
	p.section("partition", "Partitioning: STP versus unfairness")
	policies := map[string]int{}
	var names []string
	lo, hi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, q := range parts {
		if _, ok := policies[q.Policy]; !ok {
			policies[q.Policy] = 0
			names = append(names, q.Policy)
		}
		if !math.IsNaN(q.Unfairness) && !math.IsNaN(q.STP) {
			lo, hi = math.Min(lo, q.Unfairness), math.Max(hi, q.Unfairness)
			ylo, yhi = math.Min(ylo, q.STP), math.Max(yhi, q.STP)
		}
	}
	sort.Strings(names)
	for i, n := range names {
		policies[n] = i
	}
	if math.IsInf(lo, 0) {
		p.body.WriteString(`<p class="note">No partition result has both STP and unfairness.</p>`)
		return
	}
	padX, padY := math.Max((hi-lo)*0.08, 0.01), math.Max((yhi-ylo)*0.08, 0.01)
	const h = 320
	var sb strings.Builder
	f := newFrame(&sb, h, math.Max(1, lo-padX), hi+padX, ylo-padY, yhi+padY, false, "STP (higher is better)")
	// One group (series) per policy; each point carries its exact values for scripts and
	// tests. Points closer than a marker are spread around their centre so that none hides
	// another (the exact values stay in data-* and the tooltip).
	var all []scatterPoint
	for _, q := range parts {
		if !math.IsNaN(q.Unfairness) && !math.IsNaN(q.STP) {
			all = append(all, scatterPoint{q: q, x: f.x.at(q.Unfairness), y: f.y.at(q.STP)})
		}
	}
	spread(all, 13)
	labels := &labeler{}
	for _, pt := range all {
		labels.occupy(pt.x-6, pt.y-6, 12, 12)
	}
	total := 0
	for _, n := range names {
		var pts strings.Builder
		k := 0
		for _, pt := range all {
			q := pt.q
			if q.Policy != n {
				continue
			}
			fmt.Fprintf(&pts, `<circle class="point" r="5" cx="%s" cy="%s" data-workload="%s" data-stp="%s" data-unfairness="%s"><title>workload %s / %s: STP %.3f, unfairness %.3f, ANTT %.3f</title></circle>`,
				f1(pt.x), f1(pt.y), esc(q.Workload), fullFloat(q.STP), fullFloat(q.Unfairness), esc(q.Workload), esc(q.Policy), q.STP, q.Unfairness, q.ANTT)
			if len(all) <= maxPointLabels {
				text := q.Policy
				if len(parts) > len(names) { // several workloads: say which
					text = q.Policy + " · " + q.Workload
				}
				labels.place(&pts, pt.x, pt.y, text)
			}
			k++
		}
		total += k
		paint := fmt.Sprintf(`fill="%s"`, color(policies[n]))
		if hollowMarker(policies[n]) {
			paint = fmt.Sprintf(`style="--c:%s"`, color(policies[n]))
		}
		fmt.Fprintf(&sb, `<g class="policy-series%s" data-policy="%s" data-points="%d" %s>%s</g>`, map[bool]string{true: " ring", false: ""}[hollowMarker(policies[n])], esc(n), k, paint, pts.String())
	}
	fmt.Fprintf(&sb, `<text class="xlabel" x="%d" y="%d" text-anchor="middle">unfairness = max slowdown / min slowdown (lower is better)</text>`, (marginL+chartW-marginR)/2, h-2)
	var legend []string
	for _, n := range names {
		cls := "key dot"
		if hollowMarker(policies[n]) {
			cls = "key ring"
		}
		legend = append(legend, fmt.Sprintf(`<span class="%s" style="--c:%s">%s</span>`, cls, color(policies[n]), esc(n)))
	}
	note := ""
	if len(all) > maxPointLabels {
		note = fmt.Sprintf("(%d points: hover for workload and policy.) ", len(all))
	} else if labels.skipped > 0 {
		note = fmt.Sprintf("(%d %s left out where it would overlap: hover the unlabelled points.) ", labels.skipped, map[bool]string{true: "label", false: "labels"}[labels.skipped == 1])
	}
	p.chart("scatter", "One point per (workload, policy), labelled; points that would overlap are nudged apart (exact values on hover). "+note+strings.Join(legend, " "), h,
		fmt.Sprintf(`<g data-points="%d" data-labels="%d">%s</g>`, total, labels.placed, sb.String()))
	p.waysCharts(parts, names)
	// Table: per policy means.
	p.body.WriteString(`<details><summary>Partition results table</summary><table><tr><th>workload</th><th>policy</th><th>STP</th><th>ANTT</th><th>unfairness</th><th>Jain</th><th>apps (ways, slowdown)</th></tr>`)
	for _, q := range parts {
		var apps []string
		for _, a := range q.Apps {
			apps = append(apps, fmt.Sprintf("%s (%d, %.3f)", esc(a.App), a.Ways, a.Slowdown))
		}
		fmt.Fprintf(&p.body, `<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>`,
			esc(q.Workload), esc(q.Policy), frac(q.STP), frac(q.ANTT), frac(q.Unfairness), frac(q.Jain), strings.Join(apps, ", "))
	}
	p.body.WriteString(`</table></details>`)
}

// maxPointLabels is the most scatter points that get a text label each.
const maxPointLabels = 40

type scatterPoint struct {
	q    store.PartitionResult
	x, y float64 // SVG position
}

// spread pushes apart points closer than d (centre to centre) until none is, so that no
// marker hides another: pairwise relaxation, deterministic (input order; coincident points
// start apart on a circle).
func spread(pts []scatterPoint, d float64) {
	for i := range pts {
		for j := i + 1; j < len(pts); j++ {
			if pts[i].x == pts[j].x && pts[i].y == pts[j].y {
				a := 2 * math.Pi * float64(j) / 7
				pts[j].x += 0.3 * d * math.Cos(a)
				pts[j].y += 0.3 * d * math.Sin(a)
			}
		}
	}
	for iter := 0; iter < 200; iter++ {
		moved := false
		for i := range pts {
			for j := i + 1; j < len(pts); j++ {
				dx, dy := pts[j].x-pts[i].x, pts[j].y-pts[i].y
				dist := math.Hypot(dx, dy)
				if dist >= d {
					continue
				}
				push := (d - dist) / 2 * 1.05
				ux, uy := dx/dist, dy/dist
				pts[i].x, pts[i].y = pts[i].x-ux*push, pts[i].y-uy*push
				pts[j].x, pts[j].y = pts[j].x+ux*push, pts[j].y+uy*push
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}

// labeler places text labels next to points without overlapping each other or the points:
// right, left, above, below, then diagonals; a label that fits nowhere is left out.
type labeler struct {
	boxes           [][4]float64 // x, y, w, h
	placed, skipped int
}

func (l *labeler) occupy(x, y, w, h float64) { l.boxes = append(l.boxes, [4]float64{x, y, w, h}) }

func (l *labeler) free(x, y, w, h float64) bool {
	if x < marginL || x+w > chartW-marginR || y < 0 {
		return false
	}
	for _, b := range l.boxes {
		if x < b[0]+b[2] && b[0] < x+w && y < b[1]+b[3] && b[1] < y+h {
			return false
		}
	}
	return true
}

func (l *labeler) place(sb *strings.Builder, px, py float64, text string) {
	w, h := 7.0*float64(len([]rune(text)))+4, 13.0
	for _, o := range [][2]float64{{8, -h / 2}, {-8 - w, -h / 2}, {-w / 2, -8 - h}, {-w / 2, 8}, {6, -6 - h}, {6, 6}, {-6 - w, -6 - h}, {-6 - w, 6}} {
		x, y := px+o[0], py+o[1]
		if l.free(x, y, w, h) {
			l.occupy(x, y, w, h)
			fmt.Fprintf(sb, `<text class="plabel" x="%s" y="%s" dy="0.85em">%s</text>`, f1(x+1), f1(y), esc(text))
			l.placed++
			return
		}
	}
	l.skipped++
}

// maxWaysCharts bounds the per-workload ways charts (the table lists every workload).
const maxWaysCharts = 8

// waysCharts draws, for each workload (up to maxWaysCharts), which LLC ways each
// application got under each policy: one row per policy, one thin lane per application
// inside it, a block on every way of its mask, labelled with the application's name and
// way count; applications sharing ways line up vertically.
func (p *page) waysCharts(parts []store.PartitionResult, names []string) {
	var workloads []string
	byWL := map[string]map[string]store.PartitionResult{}
	for _, q := range parts {
		if byWL[q.Workload] == nil {
			byWL[q.Workload] = map[string]store.PartitionResult{}
			workloads = append(workloads, q.Workload)
		}
		byWL[q.Workload][q.Policy] = q
	}
	for wi, wl := range workloads {
		if wi == maxWaysCharts {
			fmt.Fprintf(&p.body, `<p class="note">Ways per application are drawn for the first %d of %d workloads; the table below lists every one.</p>`, maxWaysCharts, len(workloads))
			break
		}
		var pols []string
		ways, nApps := 1, 0
		var apps []string
		appIdx := map[string]int{}
		for _, n := range names {
			q, ok := byWL[wl][n]
			if !ok {
				continue
			}
			pols = append(pols, n)
			nApps = max(nApps, len(q.Apps))
			for _, a := range q.Apps {
				ways = max(ways, bits.Len64(a.Mask), a.Ways)
				if _, ok := appIdx[a.App]; !ok {
					appIdx[a.App] = len(apps)
					apps = append(apps, a.App)
				}
			}
		}
		if nApps == 0 {
			continue
		}
		const lane, gap = 13.0, 8.0
		rowH := lane*float64(nApps) + gap
		h := rowH*float64(len(pols)) + marginT + marginB
		var sb strings.Builder
		f := newFrameAxes(&sb, h, 0, float64(ways), 0, float64(len(pols)), false, "", false, false)
		for w := 0; w < ways; w++ {
			fmt.Fprintf(&sb, `<text x="%s" y="%s" text-anchor="middle" dy="1.1em">%d</text>`, f1(f.x.at(float64(w)+0.5)), f1(h-marginB+2), w)
		}
		fmt.Fprintf(&sb, `<text class="xlabel" x="%d" y="%s" text-anchor="middle">LLC way</text>`, (marginL+chartW-marginR)/2, f1(h-2))
		blocks := 0
		for pi, n := range pols {
			q := byWL[wl][n]
			top := marginT + rowH*float64(pi)
			fmt.Fprintf(&sb, `<text class="lane" x="%d" y="%s" text-anchor="end" dy="0.32em">%s</text>`, marginL-6, f1(top+(rowH-gap)/2), esc(n))
			for ai, a := range q.Apps {
				y := top + lane*float64(ai)
				col := color(appIdx[a.App])
				first := true
				for b, e := range cbm.Mask(a.Mask).Runs() {
					x0, x1 := f.x.at(float64(b)), f.x.at(float64(e))
					fmt.Fprintf(&sb, `<rect class="ways" data-policy="%s" data-app="%s" data-mask="%#x" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s / %s: %s, %d ways (mask %#x), slowdown %.3f</title></rect>`,
						esc(n), esc(a.App), a.Mask, f1(x0+0.5), f1(y+1), f1(x1-x0-1), f1(lane-2), col, esc(wl), esc(n), esc(a.App), a.Ways, a.Mask, a.Slowdown)
					if first && x1-x0 >= 6.2*float64(len(a.App)+5) {
						fmt.Fprintf(&sb, `<text class="wlabel" x="%s" y="%s" dy="0.32em">%s (%d)</text>`, f1(x0+4), f1(y+lane/2), esc(a.App), a.Ways)
					}
					first = false
					blocks++
				}
			}
		}
		var legend []string
		for i, a := range apps {
			legend = append(legend, fmt.Sprintf(`<span class="key block" style="--c:%s">%s</span>`, color(i), esc(a)))
		}
		p.chart("ways", fmt.Sprintf(`Workload %s: the LLC ways each application got under each policy (one lane per application; lanes that line up share those ways). %s`, esc(wl), strings.Join(legend, " ")), h,
			fmt.Sprintf(`<g data-points="%d">%s</g>`, blocks, sb.String()))
	}
}
