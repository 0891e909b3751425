package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shortThesis copies the High Utilization scenario with a 5-minute max_t.
func shortThesis(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile("../../examples/thesis/high-utilization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(string(b), "max_t: 3600", "max_t: 300", 1)
	pool, err := os.ReadFile("../../examples/thesis/pool.yaml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "pool.yaml"), pool, 0o644)
	f := filepath.Join(dir, "hu.yaml")
	os.WriteFile(f, []byte(y), 0o644)
	return f
}

type repeatJSON struct {
	Repeat     int      `json:"repeat"`
	TraceSeeds []uint64 `json:"trace_seeds"`
	NoiseSeeds []uint64 `json:"noise_seeds"`
	Schedulers []struct {
		Name    string                         `json:"name"`
		Metrics map[string]map[string]*float64 `json:"metrics"`
	} `json:"schedulers"`
	Differences []struct {
		Name    string                    `json:"name"`
		Metrics map[string]map[string]any `json:"metrics"`
	} `json:"differences"`
}

// colo run --repeat on a generated trace: one trace per seed, intervals that contain their
// mean, a paired test per metric, and the same bytes whatever the parallelism.
func TestRunRepeat(t *testing.T) {
	f := shortThesis(t)
	a, err := runColo(t, "run", f, "--compare", "least-loaded,dynamic", "--repeat", "3", "--parallel", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := runColo(t, "run", f, "--compare", "least-loaded,dynamic", "--repeat", "3", "--parallel", "3", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("--parallel 1 and 3 give different output")
	}
	var r repeatJSON
	if err := json.Unmarshal([]byte(a), &r); err != nil {
		t.Fatalf("%v\n%s", err, a)
	}
	if r.Repeat != 3 || len(r.TraceSeeds) != 3 || r.TraceSeeds[0] != 1 || r.TraceSeeds[2] != 3 || len(r.Schedulers) != 2 || len(r.Differences) != 1 {
		t.Fatalf("%s", a)
	}
	for _, s := range r.Schedulers {
		iv := s.Metrics["batch_ipce"]
		if *iv["n"] != 3 || !(*iv["ci95_lo"] < *iv["mean"] && *iv["mean"] < *iv["ci95_hi"]) || *iv["sd"] <= 0 {
			t.Errorf("%s batch_ipce: different traces per seed must spread: %v", s.Name, iv)
		}
	}
	d := r.Differences[0].Metrics["priority_ipce"]
	if d["significant"] != true || d["df"] != 2.0 {
		t.Errorf("dynamic − least-loaded priority IPCE: %v", d)
	}
	text, err := runColo(t, "run", f, "--compare", "least-loaded,dynamic", "--repeat", "3")
	if err != nil || !strings.Contains(text, "95 % CI") || !strings.Contains(text, "paired two-sided t-test") {
		t.Fatalf("%v\n%s", err, text)
	}
}

// colo compare --repeat on a static trace draws sim noise (1 % by default) per seed, and
// writes the intervals into an HTML page.
func TestCompareRepeatStatic(t *testing.T) {
	html := filepath.Join(t.TempDir(), "iv.html")
	a, err := runColo(t, "compare", "../../examples/vp/victim-aggressor-hog.yaml", "--schedulers", "shared,vp", "--repeat", "4", "--format", "json", "--html", html)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := runColo(t, "compare", "../../examples/vp/victim-aggressor-hog.yaml", "--schedulers", "shared,vp", "--repeat", "4", "--format", "json")
	if a != b {
		t.Fatal("same seeds, different output")
	}
	var r repeatJSON
	if err := json.Unmarshal([]byte(a), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.TraceSeeds) != 0 || len(r.NoiseSeeds) != 4 || !strings.Contains(a, `"noise": 0.01`) {
		t.Fatalf("%s", a)
	}
	stp := r.Schedulers[1].Metrics["stp"]
	if *stp["sd"] <= 0 || !(*stp["ci95_lo"] < *stp["ci95_hi"]) {
		t.Errorf("vp stp: %v", stp)
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), "<svg") || !strings.Contains(string(page), "95 % CI [") || strings.Count(string(page), "<circle") != 2*5 {
		t.Fatalf("html: %v\n%s", err, page)
	}
	if _, err := runColo(t, "compare", "../../examples/vp/victim-aggressor-hog.yaml", "--noise", "0.1"); err == nil || !strings.Contains(err.Error(), "go with --repeat") {
		t.Errorf("--noise without --repeat: %v", err)
	}
}
