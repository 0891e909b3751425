package report

import (
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"colo/store"
)

// The orchestrator's counters (summaries.extra) appear in "More summary numbers" with
// their values per scheduler and their meaning, known keys in a fixed order before
// unknown ones; a run's notes are listed (escaped) under the table; the run section
// counts jobs per state, not-started included.
func TestSummaryExtrasAndStates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	st, err := store.Create(dir, store.Meta{Name: "extras", Machine: "icx-4314-2s", Platform: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	extras := []map[string]float64{
		{"reprobes": 3, "migrations": 12, "jobs_not_started": 2, "jobs_queued_at_end": 5, "zz_custom": 1.5},
		{"reprobes": 0, "migrations": 1, "jobs_not_started": 2, "jobs_queued_at_end": 7},
	}
	states := []string{"completed", "completed", "queued", "not-started", "not-started", "killed"}
	for i, sched := range []string{"least-loaded", "dynamic"} {
		w, err := st.BeginRun(store.Run{Scheduler: sched})
		if err != nil {
			t.Fatal(err)
		}
		for id, state := range states {
			j := store.Job{ID: id, Name: "j", IPCETarget: math.NaN(), Socket: -1, Start: store.Unset, Stop: store.Unset, State: state}
			if err := w.Job(j); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Samples([]store.Sample{{Job: 0, T: time.Second, Interval: time.Second, IPC: 1, IPCE: 0.5, Stalled: 0.5,
			Instructions: 1, Cycles: 1, StallsTotal: math.NaN(), StallsL3Miss: math.NaN(), LLCRefs: math.NaN(), LLCMisses: math.NaN(),
			OccupancyBytes: math.NaN(), MemBytesLocal: math.NaN(), MemBytesTotal: math.NaN()}}); err != nil {
			t.Fatal(err)
		}
		var notes []string
		if i == 1 {
			notes = []string{"IPC/IPCE unavailable on this platform (no PMU) <b>"}
		}
		if err := w.Finish(store.Summary{Name: sched, JobsCompleted: 2, Extra: extras[i], Notes: notes}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Complete(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	html, _ := render(t, dir)
	row := func(k string) []string {
		m := regexp.MustCompile(`<tr data-key="` + k + `"><td><code>[^<]*</code></td><td>([^<]*)</td><td>([^<]*)</td><td class="meaning">([^<]*)</td></tr>`).FindStringSubmatch(html)
		if m == nil {
			t.Fatalf("no row %s in More summary numbers", k)
		}
		return m[1:]
	}
	for k, want := range map[string][2]string{"reprobes": {"3", "0"}, "migrations": {"12", "1"}, "jobs_not_started": {"2", "2"},
		"jobs_queued_at_end": {"5", "7"}, "zz_custom": {"1.5", "—"}} {
		got := row(k)
		if got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s: %v, want %v", k, got[:2], want)
		}
		if k != "zz_custom" && got[2] == "" {
			t.Errorf("%s has no meaning", k)
		}
	}
	order := regexp.MustCompile(`<tr data-key="([a-z_]+)"`).FindAllStringSubmatch(html, -1)
	var keys []string
	for _, o := range order {
		keys = append(keys, o[1])
	}
	if strings.Join(keys, ",") != "jobs_queued_at_end,jobs_not_started,reprobes,migrations,zz_custom" {
		t.Errorf("row order %v", keys)
	}
	if !strings.Contains(html, `<div class="warn notes" data-notes="1"><strong>Notes for dynamic:</strong><ul><li>IPC/IPCE unavailable on this platform (no PMU) &lt;b&gt;</li></ul></div>`) ||
		strings.Count(html, `class="warn notes"`) != 1 {
		t.Error("the dynamic run's note is not shown once, escaped")
	}
	if n := strings.Count(html, "6 jobs (0 priority; 2 completed, 1 killed, 1 queued, 2 not-started)"); n != 2 {
		t.Errorf("job state counts shown %d times, want once per scheduler", n)
	}
}
