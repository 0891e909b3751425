package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"colo/internal/testenv"
	"colo/store/storetest"
)

// chromiumPath finds the Debian chromium binary (installed by scripts/setup.sh).
// Missing chromium fails the test in CI (CI=true) and skips it elsewhere.
func chromiumPath(t *testing.T) string {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	testenv.Need(t, "chromium (apt-get install chromium; scripts/setup.sh installs it)", errors.New("no chromium, chromium-browser or google-chrome on PATH"))
	return ""
}

// browser is one headless Chromium with everything that could reach the network off.
// reportInChromium generates a run directory (storetest.Generate with o), writes its
// report as name.html in outDir and opens a headless Chromium, closed when the test ends;
// with -short the test is skipped.
func reportInChromium(t *testing.T, name string, o storetest.Options) (context.Context, string, storetest.Written) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short")
	}
	dir, w := generate(t, "run", o)
	html, _ := render(t, dir)
	page := writePage(t, name+".html", html)
	ctx, cancel := browser(t)
	t.Cleanup(cancel)
	return ctx, page, w
}

func browser(t *testing.T) (context.Context, func()) {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1200, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelC := context.WithTimeout(ctx, 90*time.Second)
	return ctx, func() { cancelC(); cancelB(); cancelA() }
}

type chartInfo struct {
	Kind   string `json:"kind"`
	Points int    `json:"points"`
	Marks  int    `json:"marks"`
}

type cbmRect struct {
	Socket int     `json:"socket"`
	CLOS   string  `json:"clos"`
	Mask   string  `json:"mask"`
	T0     float64 `json:"t0"`
	T1     float64 `json:"t1"`
}

// TestChromium renders the report of a small synthetic two-scheduler run with partition
// results in headless Chromium and checks: no console errors or exceptions, no request
// leaves file://, every chart has data points, and the bitmask panel holds exactly the
// masks the run allocated at several instants; dark mode changes the page background. With
// COLO_TEST_SHOTS=1, screenshots (light and dark) are kept in $COLO_TEST_OUT or
// $TMPDIR/colo-report-test.
func TestChromium(t *testing.T) {
	ctx, page, written := reportInChromium(t, "chromium", storetest.Options{Seed: 7, Jobs: 12, Tick: 500 * time.Millisecond, Priority: 0.5, Partitions: true})
	out := filepath.Dir(page)
	var mu sync.Mutex
	var problems, requests []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value))
				}
				problems = append(problems, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
				problems = append(problems, "log: "+e.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			requests = append(requests, e.Request.URL)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		func() error { _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); return err }(),
		func() error { _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); return err }(),
		func() error { _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); return err }(),
		chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitReady("body")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Hover a job path: the page script must run without errors and highlight it.
	hl, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(function(){var p=document.querySelector('path[data-job]');p.dispatchEvent(new MouseEvent('mouseover',{bubbles:true}));return document.querySelectorAll('.hl').length})()`))
	if err != nil || hl == 0 {
		t.Errorf("hover highlight: %d elements, %v", hl, err)
	}
	chartsJSON, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(Array.from(document.querySelectorAll('figure.chart')).map(function(f){
			var g=f.querySelector('[data-points]');
			return {kind:f.dataset.chart, points: g?parseInt(g.getAttribute('data-points')):0,
			        marks: f.querySelectorAll('path.series[d^="M"], rect.cbm, rect.probe, line.event, circle.point, rect.ways').length};
		}))`))
	if err != nil {
		t.Fatal(err)
	}
	lightBG, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	if err != nil {
		t.Fatal(err)
	}
	rectsJSON, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(Array.from(document.querySelectorAll('g.bitmask rect.cbm')).map(function(r){
			return {socket:+r.dataset.socket, clos:r.dataset.clos, mask:r.dataset.mask, t0:+r.dataset.t0, t1:+r.dataset.t1};
		}))`))
	if err != nil {
		t.Fatal(err)
	}
	// The page is also switched to dark mode (its problems are collected like the light
	// mode's). COLO_TEST_SHOTS=1 keeps full-page screenshots of both modes and one per chart
	// for a person to look at; they assert nothing and take half the test's time, so they
	// are off by default.
	shots := os.Getenv("COLO_TEST_SHOTS") != ""
	save := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if shots {
		light, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		save("report-light.png", light)
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	if dark, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`)); err != nil {
		t.Fatal(err)
	} else if dark == lightBG {
		t.Errorf("dark mode: the page background stays %s", dark)
	}
	if shots {
		dark, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		save("report-dark.png", dark)
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
			t.Fatal(err)
		}
		n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('figure.chart').length`))
		for i := 1; i <= n; i++ {
			b, err := chromedp.Run(ctx, chromedp.Screenshot(fmt.Sprintf("#fig-%d", i)))
			if err != nil {
				t.Fatal(err)
			}
			save(fmt.Sprintf("fig-%02d.png", i), b)
		}
		if top, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
			save("top.png", top)
		}
		t.Logf("screenshots in %s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("page problems:\n%s", strings.Join(problems, "\n"))
	}
	for _, u := range requests {
		if !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
			t.Errorf("page requested %s: the report must not fetch anything", u)
		}
	}

	var charts []chartInfo
	if err := json.Unmarshal([]byte(chartsJSON), &charts); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, c := range charts {
		kinds[c.Kind]++
		if c.Marks == 0 {
			t.Errorf("chart %s has no drawn data", c.Kind)
		}
		if c.Kind != "cdf" && c.Kind != "scatter" && c.Points == 0 {
			t.Errorf("chart %s reports 0 data points", c.Kind)
		}
	}
	// 2 schedulers × 5 metrics; bitmask panels for 2 sockets of the dynamic run; lanes for
	// both; one CDF; one scatter; the ways per application of the 3 workloads; the
	// schedulers overlaid per metric and in running jobs.
	want := map[string]int{"series-ipc": 2, "series-ipce": 2, "series-stalled": 2, "series-occupancy": 2, "series-bandwidth": 2,
		"bitmask": 2, "lanes": 2, "cdf": 1, "scatter": 1, "ways": 3,
		"overlay-ipc": 1, "overlay-ipce": 1, "overlay-stalled": 1, "overlay-occupancy": 1, "overlay-bandwidth": 1, "overlay-running": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s charts, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}

	// The bitmask panel: at every allocation instant (and just after), the rectangles that
	// cover time t on each socket are exactly the classes and masks the run held.
	var rects []cbmRect
	if err := json.Unmarshal([]byte(rectsJSON), &rects); err != nil {
		t.Fatal(err)
	}
	if len(rects) == 0 || len(written.Allocations) == 0 {
		t.Fatalf("%d rects, %d allocations", len(rects), len(written.Allocations))
	}
	checked := 0
	for _, a := range written.Allocations {
		at := a.T + 250*time.Millisecond
		want := storetest.MasksAt(written.Allocations, at)
		got := map[int]map[string]uint64{}
		for _, r := range rects {
			ts := at.Seconds()
			if r.T0 <= ts && ts < r.T1 {
				var m uint64
				fmt.Sscanf(r.Mask, "0x%x", &m)
				if got[r.Socket] == nil {
					got[r.Socket] = map[string]uint64{}
				}
				got[r.Socket][r.CLOS] |= m
			}
		}
		for s := range want {
			if len(want[s]) == 0 {
				delete(want, s)
			}
		}
		if fmt.Sprint(sortedMasks(got)) != fmt.Sprint(sortedMasks(want)) {
			t.Fatalf("bitmask panel at t=%v: shows %v, the run held %v", at, sortedMasks(got), sortedMasks(want))
		}
		checked++
	}
	// The fixture must exercise exclusive priority masks, not only system/default.
	prio := 0
	for _, r := range rects {
		if strings.HasPrefix(r.CLOS, "prio-") {
			prio++
		}
	}
	if prio == 0 {
		t.Error("no priority class in the bitmask panel")
	}
	t.Logf("%d charts, %d bitmask rectangles (%d priority), checked at %d instants", len(charts), len(rects), prio, checked)
}

func sortedMasks(m map[int]map[string]uint64) []string {
	var out []string
	for s, cl := range m {
		for c, mask := range cl {
			out = append(out, fmt.Sprintf("s%d:%s=%#x", s, c, mask))
		}
	}
	sort.Strings(out)
	return out
}
