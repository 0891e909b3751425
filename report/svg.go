package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Chart geometry (SVG user units; the SVG scales to the page width).
const (
	chartW  = 960
	marginL = 92
	marginR = 16
	marginT = 14
	marginB = 34
)

// linear maps [d0,d1] onto [r0,r1].
type linear struct{ d0, d1, r0, r1 float64 }

func (s linear) at(x float64) float64 {
	if s.d1 == s.d0 {
		return (s.r0 + s.r1) / 2
	}
	return s.r0 + (x-s.d0)/(s.d1-s.d0)*(s.r1-s.r0)
}

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		return []float64{lo}
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	return out
}

// fmtNum prints a tick label compactly.
func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'g', 3, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// fmtTime prints seconds as s or m:ss.
func fmtTime(sec float64, long bool) string {
	if !long {
		return fmtNum(sec) + "s"
	}
	m := int(sec) / 60
	return fmt.Sprintf("%d:%02d", m, int(sec)%60)
}

// f1 prints a coordinate with one decimal (keeps the HTML small).
func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

func esc(s string) string { return html.EscapeString(s) }

// frame draws the axes and grid of a chart and returns the scales.
type frame struct {
	sb   *strings.Builder
	x, y linear
	h    float64
}

func newFrame(sb *strings.Builder, h float64, x0, x1, y0, y1 float64, timeAxis bool, yLabel string) frame {
	return newFrameTicks(sb, h, x0, x1, y0, y1, timeAxis, yLabel, true)
}

// newFrameTicks is newFrame with the numeric y ticks optional (lane charts label rows).
func newFrameTicks(sb *strings.Builder, h float64, x0, x1, y0, y1 float64, timeAxis bool, yLabel string, yTicks bool) frame {
	return newFrameAxes(sb, h, x0, x1, y0, y1, timeAxis, yLabel, yTicks, true)
}

// newFrameAxes is newFrameTicks with the x ticks optional too (charts that label categories).
func newFrameAxes(sb *strings.Builder, h float64, x0, x1, y0, y1 float64, timeAxis bool, yLabel string, yTicks, xTicks bool) frame {
	f := frame{sb: sb, h: h,
		x: linear{x0, x1, marginL, chartW - marginR},
		y: linear{y0, y1, h - marginB, marginT}}
	fmt.Fprintf(sb, `<g class="axis">`)
	for _, v := range niceTicks(y0, y1, 5) {
		if !yTicks {
			break
		}
		py := f.y.at(v)
		fmt.Fprintf(sb, `<line class="grid" x1="%d" x2="%d" y1="%s" y2="%s"/><text x="%d" y="%s" text-anchor="end" dy="0.32em">%s</text>`,
			marginL, chartW-marginR, f1(py), f1(py), marginL-6, f1(py), fmtNum(v))
	}
	long := timeAxis && x1-x0 > 600
	xt := niceTicks(x0, x1, 10)
	if long { // ticks on whole minutes
		xt = niceTicks(x0/60, x1/60, 10)
		for i := range xt {
			xt[i] *= 60
		}
	}
	for _, v := range xt {
		if !xTicks {
			break
		}
		px := f.x.at(v)
		if px < marginL-0.5 || px > chartW-marginR+0.5 {
			continue
		}
		lbl := fmtNum(v)
		if timeAxis {
			lbl = fmtTime(v, long)
		}
		fmt.Fprintf(sb, `<line class="tick" x1="%s" x2="%s" y1="%s" y2="%s"/><text x="%s" y="%s" text-anchor="middle" dy="1.1em">%s</text>`,
			f1(px), f1(px), f1(h-marginB), f1(h-marginB+4), f1(px), f1(h-marginB+2), lbl)
	}
	fmt.Fprintf(sb, `<line class="frame" x1="%d" x2="%d" y1="%s" y2="%s"/>`, marginL, chartW-marginR, f1(h-marginB), f1(h-marginB))
	fmt.Fprintf(sb, `<line class="frame" x1="%d" x2="%d" y1="%d" y2="%s"/>`, marginL, marginL, marginT, f1(h-marginB))
	if yLabel != "" {
		fmt.Fprintf(sb, `<text class="ylabel" transform="translate(14,%s) rotate(-90)" text-anchor="middle">%s</text>`, f1((h-marginB+marginT)/2), esc(yLabel))
	}
	sb.WriteString(`</g>`)
	return f
}

// path writes an SVG path through the points, breaking at NaN values.
func (f frame) path(xs, ys []float64) string { return f.pathOpt(xs, ys, true) }

// joined writes an SVG path through the non-NaN points without breaking at NaN (bucket
// aliasing leaves empty buckets inside a job's life).
func (f frame) joined(xs, ys []float64) string { return f.pathOpt(xs, ys, false) }

func (f frame) pathOpt(xs, ys []float64, breakNaN bool) string {
	var sb strings.Builder
	pen := false
	for i := range xs {
		if math.IsNaN(ys[i]) {
			if breakNaN {
				pen = false
			}
			continue
		}
		if pen {
			sb.WriteByte('L')
		} else {
			sb.WriteByte('M')
			pen = true
		}
		sb.WriteString(f1(f.x.at(xs[i])))
		sb.WriteByte(',')
		sb.WriteString(f1(f.y.at(ys[i])))
	}
	return sb.String()
}

// palette holds categorical colours readable on light and dark backgrounds.
var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#8cd17d", "#a0cbe8", "#d4a6c8"}

func color(i int) string { return palette[((i%len(palette))+len(palette))%len(palette)] }

// fullFloat prints x in the shortest form that reads back as the same float64.
func fullFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
