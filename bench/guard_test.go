package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "colo/policy/guard" // registers guard, static-cat-mba
)

func guardRows(t *testing.T, file string, noise float64, seed uint64, names ...string) map[string]SchedulerOutcome {
	t.Helper()
	bm, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	bm.Noise, bm.Seed = noise, seed
	rows, err := Compare(bm, names)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]SchedulerOutcome{}
	for _, r := range rows {
		if r.GuardOutcome == nil {
			t.Fatalf("%s: no guard outcome for a benchmark with an SLO", r.Name)
		}
		out[r.Name] = r
	}
	return out
}

// The antagonist must-show: three noisy neighbours, one real cause; the guard
// throttles only the hog under counter noise (seeds 1–4), and the server's violations
// fall from the whole hog period to its first seconds.
func TestGuardFindsTheAntagonist(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rows := guardRows(t, "../examples/guard/antagonists.yaml", 0.01, seed, Shared, "guard")
		g, s := rows["guard"], rows[Shared]
		if g.AntagonistPrecision == nil || *g.AntagonistPrecision != 1 || g.Throttles == 0 {
			t.Errorf("seed %d: guard throttled %d times, precision %v, want every throttle on the hog", seed, g.Throttles, g.AntagonistPrecision)
		}
		if s.SLOViolationSeconds < 50 || g.SLOViolationSeconds > 4 {
			t.Errorf("seed %d: SLO violation seconds shared %v, guard %v", seed, s.SLOViolationSeconds, g.SLOViolationSeconds)
		}
		if s.Throttles != 0 || s.AntagonistPrecision != nil {
			t.Errorf("shared throttles nothing: %+v", s.GuardOutcome)
		}
	}
}

func TestServerKeysChecked(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"a: {workload: cpu, core: [0], slo_ms: 5}", "slo_ms, rate and request_minstr together"},
		{"a: {workload: cpu, core: [0], slo_ms: -1, rate: 1, request_minstr: 1}", "slo_ms -1 must be a number > 0"},
		{"a: {workload: cpu, core: [0], phases: [{workload: cpu, for: 5}]}", "workload or phases, not both"},
		{"a: {core: [0], phases: [{workload: cpu, for: 0}]}", "phase 0 needs a workload model and 0 < for"},
		{"a: {workload: cpu, core: [0], mba_mbps: 0}", "mba_mbps 0 must be a number > 0"},
		{"a: {core: [0], phases: [{workload: cpu, for: 1e300}]}", "phase 0 needs a workload model and 0 < for"},
	} {
		_, err := Parse("t.yaml", []byte("benchmark: {max_t: 10}\ncontainers:\n  "+c.yaml+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.yaml, err, c.want)
		}
	}
	bm, err := Parse("t.yaml", []byte("benchmark: {max_t: 10}\ncontainers:\n  a: {core: [0], slo_ms: 5, rate: 100, request_minstr: 2, antagonist: true, phases: [{workload: cpu, for: 5}, {workload: \"mlr:8M\", for: 2.5}]}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	j := bm.Jobs[0]
	if j.SLOms != 5 || j.Rate != 100 || j.RequestMInstr != 2 || !j.Antagonist || j.Workload != "cpu@5|mlr:8M@2.5" {
		t.Errorf("parsed %+v", j)
	}
}

// The Heracles must-show on examples/guard/heracles.yaml: the guard has no SLO
// violation after its first repercussion window and keeps at least 90 % of the best-effort
// throughput shared achieves, where shared breaks the SLO for the whole hog period.
func TestGuardHeracles(t *testing.T) {
	rows := guardRows(t, "../examples/guard/heracles.yaml", 0, 1, Shared, "static-cat-mba", "guard")
	g, s := rows["guard"], rows[Shared]
	if s.SLOViolationSeconds < 60 {
		t.Errorf("shared violates the SLO %v s: the scenario no longer hurts the server", s.SLOViolationSeconds)
	}
	if g.SLOViolationSecondsAfterWindow != 0 || g.SLOViolationSeconds > 3 {
		t.Errorf("guard: %v violation seconds, %v after the first window, want 0 after it", g.SLOViolationSeconds, g.SLOViolationSecondsAfterWindow)
	}
	if g.BEThroughput < 0.9*s.BEThroughput {
		t.Errorf("guard best-effort throughput %.2f < 90 %% of shared's %.2f", g.BEThroughput, s.BEThroughput)
	}
	if g.AntagonistPrecision == nil || *g.AntagonistPrecision < 0.5 {
		t.Errorf("guard precision %v", g.AntagonistPrecision)
	}
	if u := g.Utilization; !(u > 0.5 && u <= 1) {
		t.Errorf("utilization %v", u)
	}
	if st := rows["static-cat-mba"]; st.Throttles != 0 || st.BEThroughput <= 0 {
		t.Errorf("static-cat-mba: %+v", st.GuardOutcome)
	}
}

// mba_mbps holds the hog's bandwidth within the kernel selftest's 8 % once converged
// (from 10 s on), through colo run's loop, under least-loaded (which sets no MBA itself).
func TestMBAMBpsHeldInRun(t *testing.T) {
	bm, err := Load("../examples/guard/mbps.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bm.Noise, bm.Seed = 0.01, 1
	rec := &Memory{}
	if _, err := RunScheduler(bm, "least-loaded", rec); err != nil {
		t.Fatal(err)
	}
	var sum, n float64
	for _, s := range rec.Samples {
		if s.Job == 0 && s.T >= 10*time.Second {
			sum += s.MemBytesTotal / 1e6 / s.Interval.Seconds()
			n++
		}
	}
	if n < 20 || math.Abs(sum/n-20000) > 0.08*20000 {
		t.Errorf("hog held at %.0f MB/s over %v samples, want 20000 ± 8 %%", sum/n, n)
	}
	states := ""
	for _, e := range rec.Events {
		if e.Kind == "bandwidth" && e.Job == 0 {
			states += e.Text + "\n"
		}
	}
	if !strings.Contains(states, "converged: requested 20000 MB/s") {
		t.Errorf("no converged bandwidth event:\n%s", states)
	}
}

// The guard composes with a cache policy (guard.cache: dcat): dcat places the jobs and
// owns their masks, the guard throttles the hog's MBA; dcat alone does not protect the
// bandwidth-bound server.
func TestGuardOverDCat(t *testing.T) {
	b, err := os.ReadFile("../examples/guard/heracles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(string(b), "    tick_t: 1\n", "    tick_t: 1\n    options:\n      guard.cache: dcat\n", 1)
	f := filepath.Join(t.TempDir(), "heracles-dcat.yaml")
	if err := os.WriteFile(f, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := guardRows(t, f, 0, 1, "dcat", "guard")
	g, d := rows["guard"], rows["dcat"]
	if d.SLOViolationSeconds < 60 || g.SLOViolationSecondsAfterWindow != 0 || g.Throttles == 0 {
		t.Errorf("dcat %v s of violations; guard over dcat %v s after its first window with %d throttles",
			d.SLOViolationSeconds, g.SLOViolationSecondsAfterWindow, g.Throttles)
	}
	if g.AntagonistPrecision == nil || *g.AntagonistPrecision != 1 {
		t.Errorf("guard over dcat precision %v", g.AntagonistPrecision)
	}
}
