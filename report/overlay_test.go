package report

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"colo/store"
	"colo/store/storetest"
)

// A linux run whose monitoring reads 0 (a resctrl emulator mount): occupancy and bandwidth
// say "unavailable (emulator)" instead of drawing zeros; IPC, a real measurement, is drawn.
func TestEmulatorZerosAreUnavailable(t *testing.T) {
	dir, _ := generate(t, "emu", storetest.Options{Seed: 3, Jobs: 6, Emulator: true})
	html, _ := render(t, dir)
	for _, key := range []string{"occupancy", "bandwidth"} {
		i := strings.Index(html, `data-unavailable="`+key+`"`)
		if i < 0 || !strings.Contains(html[i:min(len(html), i+300)], "unavailable (emulator)") {
			t.Errorf("%s: no 'unavailable (emulator)' note", key)
		}
		for _, kind := range []string{"series-", "overlay-"} {
			if strings.Contains(html, `data-chart="`+kind+key+`"`) {
				t.Errorf("%s%s drawn from zeros", kind, key)
			}
		}
	}
	if !strings.Contains(html, `data-chart="series-ipc"`) || !strings.Contains(html, `data-chart="overlay-ipc"`) {
		t.Error("IPC, which was measured, is not drawn")
	}
	// The same zeros on the simulator are drawn: only a real host's monitoring is suspect.
	sim, _ := generate(t, "sim", storetest.Options{Seed: 3, Jobs: 6})
	if html, _ := render(t, sim); strings.Contains(html, "unavailable (emulator)") {
		t.Error("a sim run is reported as an emulator's")
	}
}

// Classes are named by their jobs' benchmark names, not colo's job-ID.
func TestClassNamesAreJobNames(t *testing.T) {
	r := &runData{jobs: nil, job: map[int]store.Job{}}
	for _, j := range []store.Job{{ID: 0, Name: "thrasher"}, {ID: 1, Name: "compute"}, {ID: 2, Name: "pool"}, {ID: 3, Name: "pool"}} {
		r.jobs = append(r.jobs, j)
		r.job[j.ID] = j
	}
	for _, c := range []struct {
		clos    string
		members []int
		want    string
	}{
		{"job-0", nil, "thrasher"},
		{"job-1", []int{1}, "compute"},
		{"shared", []int{0, 1}, "thrasher, compute"},
		{"job-2", nil, "pool #2"},
		{"system/default", nil, "system/default"},
		{"job-9", nil, "job-9"},
	} {
		if got := r.className(c.clos, c.members); got != c.want {
			t.Errorf("className(%q, %v) = %q, want %q", c.clos, c.members, got, c.want)
		}
	}
}

// near reports whether pixel c is within tol of the #rrggbb colour hex on each channel.
func near(c [3]uint8, hex string, tol int) bool {
	var want [3]int
	for i := range 3 {
		var v int
		for _, ch := range hex[1+2*i : 3+2*i] {
			v = v*16 + strings.IndexRune("0123456789abcdef", ch)
		}
		want[i] = v
	}
	for i := range 3 {
		d := int(c[i]) - want[i]
		if d < -tol || d > tol {
			return false
		}
	}
	return true
}

func countColour(img image.Image, hex string) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bb, _ := img.At(x, y).RGBA()
			if near([3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bb >> 8)}, hex, 24) {
				n++
			}
		}
	}
	return n
}

// TestChromiumSchedulersSideBySide renders a two-scheduler run in headless Chromium and
// checks the comparison a person makes: each overlay chart shows both schedulers' lines on
// one set of axes (counted in the screenshot's pixels, in each scheduler's colour), every
// chart has a legend, each scheduler keeps its colour from the summary table to the
// overlays and the CDF, and the partition scatter's labels overlap neither each other nor
// the points. The screenshots are kept in $COLO_TEST_OUT (default $TMPDIR/colo-report-test).
func TestChromiumSchedulersSideBySide(t *testing.T) {
	ctx, page, _ := reportInChromium(t, "side-by-side", storetest.Options{Seed: 11, Jobs: 14, Tick: 500 * time.Millisecond, Priority: 0.4, Partitions: true})
	out := filepath.Dir(page)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitReady("body")); err != nil {
		t.Fatal(err)
	}
	var info struct {
		NoLegend []string            `json:"noLegend"`
		Swatch   map[string]string   `json:"swatch"`
		Overlay  map[string][]string `json:"overlay"`
		CDF      map[string]string   `json:"cdf"`
		Overlays []string            `json:"overlays"`
		Overlap  []string            `json:"overlap"`
		Labels   int                 `json:"labels"`
		Ways     int                 `json:"ways"`
	}
	js, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){
	  var o={noLegend:[],swatch:{},overlay:{},cdf:{},overlays:[],overlap:[],labels:0,ways:0};
	  document.querySelectorAll('figure.chart').forEach(function(f){
	    if(!f.querySelector('figcaption .key'))o.noLegend.push(f.dataset.chart+' '+f.id)});
	  document.querySelectorAll('table.summary tr').forEach(function(tr){
	    var s=tr.querySelector('.swatch');if(s)o.swatch[tr.cells[0].textContent.trim()]=getComputedStyle(s).backgroundColor});
	  document.querySelectorAll('figure[data-chart^=overlay-]').forEach(function(f){
	    o.overlays.push(f.id);
	    f.querySelectorAll('path.overlay').forEach(function(p){
	      var k=p.dataset.scheduler;(o.overlay[k]=o.overlay[k]||[]).push(getComputedStyle(p).stroke)})});
	  document.querySelectorAll('figure[data-chart=cdf] path.cdf').forEach(function(p){
	    o.cdf[p.querySelector('title').textContent.split(':')[0]]=getComputedStyle(p).stroke});
	  var boxes=[];
	  document.querySelectorAll('figure[data-chart=scatter] text.plabel, figure[data-chart=scatter] circle.point').forEach(function(e){
	    var r=e.getBoundingClientRect();boxes.push([r.left,r.top,r.right,r.bottom,e.tagName+':'+(e.textContent||e.dataset.workload)])});
	  o.labels=document.querySelectorAll('figure[data-chart=scatter] text.plabel').length;
	  for(var i=0;i<boxes.length;i++)for(var j=i+1;j<boxes.length;j++){var a=boxes[i],b=boxes[j];
	    if(a[0]<b[2]-0.5&&b[0]<a[2]-0.5&&a[1]<b[3]-0.5&&b[1]<a[3]-0.5)o.overlap.push(a[4]+' / '+b[4])}
	  o.ways=document.querySelectorAll('figure[data-chart=ways] rect.ways').length;
	  return JSON.stringify(o)})()`))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(js), &info); err != nil {
		t.Fatal(err)
	}
	if len(info.NoLegend) > 0 {
		t.Errorf("charts without a legend: %v", info.NoLegend)
	}
	if len(info.Overlays) < 5 {
		t.Fatalf("%d overlay charts, want one per metric and the running jobs: %v", len(info.Overlays), info.Overlays)
	}
	for _, s := range []string{"least-loaded", "dynamic"} {
		sw := info.Swatch[s]
		if sw == "" || len(info.Overlay[s]) < len(info.Overlays) {
			t.Errorf("%s: swatch %q, %d overlay lines in %d charts", s, sw, len(info.Overlay[s]), len(info.Overlays))
		}
		for _, c := range append(info.Overlay[s], info.CDF[s]) {
			if c != sw {
				t.Errorf("%s: drawn in %s, its summary colour is %s", s, c, sw)
			}
		}
	}
	if info.Swatch["least-loaded"] == info.Swatch["dynamic"] {
		t.Error("both schedulers have the same colour")
	}
	if len(info.Overlap) > 0 || info.Labels == 0 {
		t.Errorf("scatter: %d labels, overlapping: %v", info.Labels, info.Overlap)
	}
	if info.Ways == 0 {
		t.Error("no ways-per-application chart for the partition results")
	}
	// The pixels: each overlay chart shows both schedulers' colours.
	for _, id := range info.Overlays {
		b, err := chromedp.Run(ctx, chromedp.Screenshot("#"+id))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, "side-by-side-"+id+".png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		a, d := countColour(img, palette[0]), countColour(img, palette[1])
		if a < 100 || d < 100 {
			t.Errorf("%s: %d pixels of least-loaded's colour, %d of dynamic's: both should be drawn", id, a, d)
		}
	}
	t.Logf("%d overlay charts, %d scatter labels, %d way blocks; screenshots in %s", len(info.Overlays), info.Labels, info.Ways, out)
}
