package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"colo/cbm"
	"colo/internal/testenv"
	"colo/policy"
	"colo/report"
	"colo/store"
)

var (
	seriesRe = regexp.MustCompile(`<g class="policy-series(?: ring)?" data-policy="([^"]+)" data-points="(\d+)"[^>]*>(.*?)</g>`)
	pointRe  = regexp.MustCompile(`<circle class="point"[^>]* data-workload="([^"]+)" data-stp="([^"]+)" data-unfairness="([^"]+)"`)
)

// colo partition --out writes a partition run; the store reads back exactly the JSON
// output of the same command, and colo report draws STP versus unfairness with one series
// per policy holding one point per workload, at the JSON's values. The page is then
// loaded in headless Chromium (no console errors, the same series and points in the DOM);
// COLO_TEST_SHOTS=1 keeps a screenshot of the scatter in $COLO_TEST_OUT.
func TestPartitionOutReportScatter(t *testing.T) {
	pols := policy.Names() // all 13: more than the 12 colours, so rings are exercised too
	dir := filepath.Join(t.TempDir(), "part")
	stdout, stderr, err := runSplit(t, "partition", "--workloads", "../../data/pbbcache-skylake/workloads.csv",
		"--policy", strings.Join(pols, ","), "--bw-model", "stalls", "--format", "json", "--jobs", "2", "--progress", "off", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, dir) {
		t.Errorf("stderr does not name the run directory: %q", stderr)
	}
	var doc outputDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	nwl := 0
	for _, r := range doc.Results {
		nwl = max(nwl, r.Workload)
	}
	if nwl < 2 || len(doc.Results) != nwl*len(pols) {
		t.Fatalf("%d results for %d workloads × %d policies", len(doc.Results), nwl, len(pols))
	}
	type key struct {
		wl  string
		pol string
	}
	want := map[key]resultOut{}
	for _, r := range doc.Results {
		want[key{strconv.Itoa(r.Workload), r.Policy}] = r
	}

	// The store holds the same results (round trip), in a complete partition directory.
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	man := st.Manifest()
	if man.Kind != "partition" || !man.Complete || man.Machine != doc.Machine || man.Labels["bw_model"] != "stalls" {
		t.Errorf("manifest %+v", man)
	}
	runs, err := st.Runs()
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	got, err := st.Partitions(runs[0].ID)
	st.Close()
	if err != nil || len(got) != len(doc.Results) {
		t.Fatalf("%d partitions read back (%v), want %d", len(got), err, len(doc.Results))
	}
	for _, p := range got {
		w, ok := want[key{p.Workload, p.Policy}]
		if !ok {
			t.Fatalf("unexpected partition row %s/%s", p.Workload, p.Policy)
		}
		if p.STP != w.STP || p.ANTT != w.ANTT || p.Unfairness != w.Unfairness || p.Jain != w.Jain || len(p.Apps) != len(w.Apps) {
			t.Errorf("%s/%s: stored %+v, JSON %+v", p.Workload, p.Policy, p, w)
			continue
		}
		for i, a := range p.Apps {
			e := w.Apps[i]
			if a.App != e.Name || a.Cluster != e.Cluster || a.Ways != e.Ways || cbm.Mask(a.Mask).String() != e.Mask || a.Slowdown != e.Slowdown {
				t.Errorf("%s/%s app %d: stored %+v, JSON %+v", p.Workload, p.Policy, i, a, e)
			}
		}
	}

	// The report: one series per policy, one point per workload, values equal to the JSON.
	var buf bytes.Buffer
	stats, err := report.Write(&buf, report.Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if stats.Runs != 1 || strings.Contains(html, `data-chart="series-`) || !strings.Contains(html, `data-chart="scatter"`) {
		t.Errorf("stats %+v: a partition run draws the scatter and no scheduler time series", stats)
	}
	series := seriesRe.FindAllStringSubmatch(html, -1)
	if len(series) != len(pols) {
		t.Fatalf("%d series in the scatter, want one per policy (%d)", len(series), len(pols))
	}
	seen := map[key]bool{}
	for _, s := range series {
		pol := s[1]
		pts := pointRe.FindAllStringSubmatch(s[3], -1)
		if n, _ := strconv.Atoi(s[2]); n != nwl || len(pts) != nwl {
			t.Errorf("policy %s: data-points %s, %d circles; want %d (one per workload)", pol, s[2], len(pts), nwl)
		}
		for _, p := range pts {
			k := key{p[1], pol}
			w, ok := want[k]
			if !ok || seen[k] {
				t.Errorf("point %v: not in the JSON output or drawn twice", k)
				continue
			}
			seen[k] = true
			stp, _ := strconv.ParseFloat(p[2], 64)
			unf, _ := strconv.ParseFloat(p[3], 64)
			if stp != w.STP || unf != w.Unfairness {
				t.Errorf("point %v: STP %v unfairness %v, JSON %v %v", k, stp, unf, w.STP, w.Unfairness)
			}
		}
	}
	if len(seen) != len(doc.Results) {
		t.Errorf("%d points drawn, %d results", len(seen), len(doc.Results))
	}

	checkScatterInChromium(t, html, pols, nwl)
}

func checkScatterInChromium(t *testing.T, html string, pols []string, nwl int) {
	if testing.Short() {
		return
	}
	var chromium string
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		testenv.Need(t, "chromium (apt-get install chromium; scripts/setup.sh installs it)", errors.New("no chromium on PATH"))
		return
	}
	out := os.Getenv("COLO_TEST_OUT")
	if out == "" {
		out = filepath.Join(os.TempDir(), "colo-report-test")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(out, "partition-report.html")
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-default-apps", true), chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1200, 900))
	defer cancelA()
	ctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	ctx, cancelC := context.WithTimeout(ctx, 60*time.Second)
	defer cancelC()
	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				problems = append(problems, fmt.Sprintf("console.%s", e.Type))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitReady("body")); err != nil {
		t.Fatal(err)
	}
	// Per series: policy and the number of circles the browser laid out with a size.
	js, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(Array.from(document.querySelectorAll('figure[data-chart=scatter] g.policy-series')).map(function(g){
		var cs=Array.from(g.querySelectorAll('circle.point')), st=cs.length?getComputedStyle(cs[0]):null;
		return {policy:g.dataset.policy, drawn:cs.filter(function(c){var b=c.getBoundingClientRect();return b.width>0&&b.height>0}).length,
		        look: st?st.fill+'/'+(st.fill==='none'?st.stroke:''):''};
	}))`))
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Policy string `json:"policy"`
		Drawn  int    `json:"drawn"`
		Look   string `json:"look"`
	}
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(pols) {
		t.Errorf("Chromium shows %d policy series, want %d: %s", len(got), len(pols), js)
	}
	looks := map[string]string{}
	for _, g := range got {
		if g.Drawn != nwl {
			t.Errorf("Chromium: policy %s has %d visible points, want %d", g.Policy, g.Drawn, nwl)
		}
		if other, ok := looks[g.Look]; ok || g.Look == "" {
			t.Errorf("Chromium: policies %s and %s look the same (%q)", g.Policy, other, g.Look)
		}
		looks[g.Look] = g.Policy
	}
	if os.Getenv("COLO_TEST_SHOTS") != "" {
		b, err := chromedp.Run(ctx, chromedp.Screenshot(`figure[data-chart=scatter]`))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, "partition-scatter.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot in %s", filepath.Join(out, "partition-scatter.png"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("page problems: %v", problems)
	}
}

// --out naming a directory that already holds a run is bad input (exit code 2) that says
// what to do, and the existing run is left untouched.
func TestPartitionOutExistingRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "part")
	args := []string{"partition", "--workload", readmeWorkload, "--policy", "ucp", "--format", "json", "--progress", "off", "--out", dir}
	if _, stderr, err := runSplit(t, args...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	before, err := os.ReadFile(filepath.Join(dir, store.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = runSplit(t, args...)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "choose a new --out directory") {
		t.Fatalf("second --out into %s: %v, want bad input naming the fix", dir, err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, store.ManifestFile))
	if !bytes.Equal(before, after) {
		t.Error("the existing run's manifest changed")
	}
}
