package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"colo/store"
	"colo/store/storetest"
)

// outDir is where tests keep artefacts (HTML, screenshots) for a person to look at.
func outDir(t testing.TB) string {
	d := os.Getenv("COLO_TEST_OUT")
	if d == "" {
		d = filepath.Join(os.TempDir(), "colo-report-test")
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// generate writes a synthetic run directory named name (storetest.Generate with o) in a
// fresh temporary directory, failing the test on an error.
func generate(t testing.TB, name string, o storetest.Options) (string, storetest.Written) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	w, err := storetest.Generate(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return dir, w
}

// writePage writes html as name in the output directory (outDir) and returns its path.
func writePage(t testing.TB, name, html string) string {
	t.Helper()
	page := filepath.Join(outDir(t), name)
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	return page
}

func render(t testing.TB, dirs ...string) (string, Stats) {
	t.Helper()
	var buf bytes.Buffer
	st, err := Write(&buf, Options{Dirs: dirs})
	if err != nil {
		t.Fatal(err)
	}
	return buf.String(), st
}

func TestRenderSmall(t *testing.T) {
	dir, _ := generate(t, "run", storetest.Options{Seed: 1, Jobs: 10, Tick: 500 * time.Millisecond, Priority: 0.4, Partitions: true})
	html, st := render(t, dir)
	os.WriteFile(filepath.Join(outDir(t), "small.html"), []byte(html), 0o644)
	if st.Runs != 2 || st.Charts == 0 {
		t.Fatalf("stats %+v", st)
	}
	for _, bad := range []string{"http://", "https://", "src=\"//"} {
		if strings.Contains(html, bad) {
			t.Errorf("page references %q: it must not fetch anything", bad)
		}
	}
}

// A killed run: the report says what is missing and still draws what exists.
func TestRenderIncomplete(t *testing.T) {
	dir, _ := generate(t, "killed", storetest.Options{Seed: 2, Jobs: 8, Incomplete: true})
	html, st := render(t, dir)
	for _, want := range []string{
		"Incomplete run directory",
		"the run was not marked complete",
		"scheduler dynamic (run 2) did not finish",
		`class="unfinished"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Both runs are still drawn: 5 series each, and the dynamic run's bitmask panels.
	if n := strings.Count(html, `data-chart="series-ipce"`); n != 2 {
		t.Errorf("%d IPCE charts, want 2", n)
	}
	if n := strings.Count(html, `data-chart="bitmask"`); n != 2 {
		t.Errorf("%d bitmask panels, want 2", n)
	}
	if st.Runs != 2 {
		t.Errorf("stats %+v", st)
	}

	// Only a manifest (killed before the database was written).
	early := filepath.Join(t.TempDir(), "early")
	if err := os.MkdirAll(early, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(early, "run.json"), []byte(`{"format":"colo-run/1","name":"early","database":"colo.db","complete":false,"created":"2026-01-01T00:00:00Z"}`), 0o644)
	html, _ = render(t, early)
	if !strings.Contains(html, "colo.db is missing") || !strings.Contains(html, "No scheduler run was recorded") {
		t.Errorf("manifest-only report: %s", html[:min(len(html), 3000)])
	}
}

// --compare: two directories side by side; labels name the directory.
func TestRenderCompare(t *testing.T) {
	a := filepath.Join(t.TempDir(), "a")
	b := filepath.Join(t.TempDir(), "b")
	if _, err := storetest.Generate(a, storetest.Options{Seed: 3, Jobs: 6, Schedulers: []string{"least-loaded"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.Generate(b, storetest.Options{Seed: 3, Jobs: 6, Schedulers: []string{"dynamic"}, NoPMU: true}); err != nil {
		t.Fatal(err)
	}
	html, st := render(t, a, b)
	if st.Runs != 2 || !strings.Contains(html, "a: least-loaded") || !strings.Contains(html, "b: dynamic") {
		t.Fatalf("compare report: %+v", st)
	}
	// Without PMU, IPC/IPCE/stalled say unavailable instead of drawing zeros; occupancy
	// and bandwidth (RDT monitoring) are still drawn.
	for _, k := range []string{"ipc", "ipce", "stalled"} {
		if !strings.Contains(html, `data-unavailable="`+k+`"`) {
			t.Errorf("no 'unavailable' note for %s", k)
		}
	}
	if strings.Contains(html, "b: dynamic (n=") {
		t.Error("the CDF counts no-PMU jobs as never over target")
	}
	if n := strings.Count(html, `data-chart="series-occupancy"`); n != 2 {
		t.Errorf("%d occupancy charts, want 2", n)
	}
}

// Same run directory → byte-identical report.
func TestRenderDeterministic(t *testing.T) {
	dir, _ := generate(t, "run", storetest.Options{Seed: 5, Jobs: 12, Partitions: true})
	h1, _ := render(t, dir)
	h2, _ := render(t, dir)
	if h1 != h2 {
		t.Error("two renderings of the same run differ")
	}
}

// A class whose job stopped ends at the stop even when no removal was recorded.
func TestBitmaskEndsAtMemberStop(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	st, err := store.Create(dir, store.Meta{Name: "clamp"})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := st.BeginRun(store.Run{Scheduler: "dynamic"})
	w.Job(store.Job{ID: 1, Name: "a", Socket: 0, Start: 0, Stop: 50 * time.Second, State: "completed"})
	w.Job(store.Job{ID: 2, Name: "b", Socket: 0, Start: 0, Stop: store.Unset, State: "running"})
	w.Allocation(store.Allocation{T: 10 * time.Second, Socket: 0, CLOS: "job-1", Mask: 0x3, MBA: 10, Members: []int{1}})
	w.Allocation(store.Allocation{T: 10 * time.Second, Socket: 0, CLOS: "job-2", Mask: 0xc, MBA: 10, Members: []int{2}})
	w.Samples([]store.Sample{{Job: 2, T: 100 * time.Second, Interval: time.Second, IPC: 1, IPCE: 0.5, Stalled: 0.5}})
	st.Complete()
	st.Close()
	html, _ := render(t, dir)
	if !strings.Contains(html, `data-clos="job-1" data-mask="0x3" data-t0="10" data-t1="50"`) {
		t.Error("job-1's class does not end when job 1 stopped")
	}
	if !strings.Contains(html, `data-clos="job-2" data-mask="0xc" data-t0="10" data-t1="100"`) {
		t.Error("job-2's class does not run to the end of the run")
	}
}
