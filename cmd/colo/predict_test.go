package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/data"
)

// The stable keys of `colo predict validate --json` and PROVENANCE.md's figures.
func TestPredictValidateJSON(t *testing.T) {
	out := mustRunColo(t, "predict", "validate", "--json")
	v := jsonObject(t, out)
	for _, k := range []string{"n", "median", "p90", "p95", "p99", "mean_abs", "mean", "min", "max", "scores", "convention", "method", "with_diagonal_zeros", "thesis_expected", "recorded_scores", "methods"} {
		if _, ok := v[k]; !ok {
			t.Errorf("key %q missing", k)
		}
	}
	near := func(got any, want float64) bool { f, ok := got.(float64); return ok && math.Abs(f-want) <= 0.005 }
	// data/bubbleup-spec2017/PROVENANCE.md: end to end n=342 1.19 / 6.84 / 9.87 / 15.49.
	if v["n"] != 342.0 || !near(v["median"], 1.19) || !near(v["p90"], 6.84) || !near(v["p95"], 9.87) || !near(v["p99"], 15.49) ||
		!near(v["mean_abs"], 2.44) || !near(v["mean"], -0.95) || !near(v["min"], -21.38) || !near(v["max"], 7.72) {
		t.Errorf("end-to-end figures: %v", out[:600])
	}
	te := v["thesis_expected"].(map[string]any)
	if te["n"] != 342.0 || !near(te["median"], 1.11) || !near(te["p90"], 5.51) || !near(te["p95"], 7.17) || !near(te["p99"], 9.90) {
		t.Errorf("validated predictions: %v", te)
	}
	wz := te["with_diagonal_zeros"].(map[string]any)
	if wz["n"] != 361.0 || !near(wz["median"], 0.98) || !near(wz["p90"], 5.45) {
		t.Errorf("thesis convention: %v", wz)
	}
	if s := v["scores"].(map[string]any); s["619.lbm_s"] != 60.0 || len(s) != 19 {
		t.Errorf("scores: %v", s)
	}
	if !strings.Contains(v["convention"].(string), "off-diagonal") {
		t.Error("the convention must say which cells count")
	}
}

// copyData copies the embedded data set to a temporary directory.
func copyData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sensitivity"), 0o755)
	for _, f := range []string{"reporter_sensitivity.csv", "contentiousness.csv", "contentiousness_scores.csv", "validated.csv"} {
		b, _ := data.FS.ReadFile(data.BubbleUp + "/" + f)
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	es, _ := data.FS.ReadDir(data.BubbleUp + "/sensitivity")
	for _, e := range es {
		b, _ := data.FS.ReadFile(data.BubbleUp + "/sensitivity/" + e.Name())
		os.WriteFile(filepath.Join(dir, "sensitivity", e.Name()), b, 0o644)
	}
	return dir
}

func TestPredictFromADirectoryMatchesTheEmbeddedSet(t *testing.T) {
	dir := copyData(t)
	a, err1 := runColo(t, "predict", "validate", "--json")
	b, err2 := runColo(t, "predict", "validate", "--json", "--data", dir)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	strip := func(s string) string { return s[strings.Index(s, `"method"`):] }
	if strip(a) != strip(strings.ReplaceAll(b, dir, "embedded:bubbleup-spec2017")) {
		t.Fatal("a copied directory gives different results")
	}
	out, err := runColo(t, "predict", "predict", "--data", dir, "605.mcf_s", "619.lbm_s")
	if err != nil || !strings.Contains(out, "605.mcf_s next to 619.lbm_s (score 60 MB)") || !strings.Contains(out, "619.lbm_s next to 605.mcf_s (score 4 MB)") {
		t.Fatalf("pair: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "predictions.json")); err == nil {
		t.Fatal("a single pair should not rewrite predictions.json")
	}
	// Three co-runners: mcf next to xz (0 MB) and lbm (60 MB) reads mcf's curve at 60 MB.
	out, err = runColo(t, "predict", "predict", "--data", dir, "605.mcf_s", "657.xz_s", "619.lbm_s")
	if err != nil || !strings.Contains(out, "combined 60 MB") {
		t.Fatalf("three co-runners: %v\n%s", err, out)
	}
	if _, err := runColo(t, "predict", "predict", "--data", dir, "--json"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "predictions.json")); err == nil {
		t.Fatal("predictions.json written without --write")
	}
	if _, err := runColo(t, "predict", "predict", "--data", dir, "--json", "--write"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "predictions.json")); err != nil {
		t.Fatal("predictions.json not written with --write")
	}
	// score never rewrites the scores file unless asked, and never a read-only one.
	before, _ := os.ReadFile(filepath.Join(dir, "contentiousness_scores.csv"))
	if _, err := runColo(t, "predict", "score", "--data", dir, "--method", "linear"); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "contentiousness_scores.csv"))
	if string(before) != string(after) {
		t.Fatal("score rewrote contentiousness_scores.csv without --write")
	}
	os.Chmod(filepath.Join(dir, "contentiousness_scores.csv"), 0o444)
	if _, err := runColo(t, "predict", "score", "--data", dir, "--write"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("overwrote a read-only file: %v", err)
	}
	after, _ = os.ReadFile(filepath.Join(dir, "contentiousness_scores.csv"))
	if string(before) != string(after) {
		t.Fatal("read-only scores file changed")
	}
}

func TestPredictBadInput(t *testing.T) {
	dir := copyData(t)
	// Drop the 8 MB point of one curve.
	p := filepath.Join(dir, "sensitivity", "605_mcf_s_data.csv")
	b, _ := os.ReadFile(p)
	lines := strings.Split(string(b), "\n")
	os.WriteFile(p, []byte(strings.Join(append(lines[:3:3], lines[4:]...), "\n")), 0o644)
	roDir := copyData(t)
	os.Chmod(roDir, 0o555)
	defer os.Chmod(roDir, 0o755)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"predict", "validate", "--data", dir}, "605_mcf_s_data.csv: dial points [8] MB are missing"},
		{[]string{"predict", "validate", "--data", "/nonexistent"}, "not a directory"},
		{[]string{"predict", "validate", "--method", "cubic"}, "unknown method"},
		{[]string{"predict", "predict", "605.mcf_s", "999.nope_s"}, "competitor 999.nope_s has no contentiousness score"},
		{[]string{"predict", "predict", "999.nope_s", "605.mcf_s"}, "999.nope_s has no sensitivity curve"},
		{[]string{"predict", "profile", "--app", "x=true"}, "give --runtime"},
		{[]string{"predict", "profile", "--runtime", "sim", "--app", "cpu"}, "read-only"},
		{[]string{"predict", "profile", "--runtime", "vm", "--data", t.TempDir(), "--app", "cpu"}, "--runtime \"vm\""},
		{[]string{"predict", "profile", "--runtime", "sim", "--data", t.TempDir(), "--app", "a=gpu:1"}, "unknown workload"},
		{[]string{"predict", "profile", "--runtime", "sim", "--data", t.TempDir(), "--dials", "4:16:4", "--app", "cpu"}, "must include 0"},
		{[]string{"predict", "profile", "--runtime", "process", "--data", t.TempDir(), "--app-cpus", "99", "--app", "true"}, "CPU 99 does not exist"},
		{[]string{"predict", "profile", "--runtime", "sim", "--data", roDir, "--app", "cpu"}, "read-only"},
		{[]string{"stress", "bubble"}, "unknown stress kind"},
		{[]string{"stress", "random", "--mb", "-1"}, "--mb -1"},
		{[]string{"stress", "compute", "--mb", "4"}, "no working set"},
		{[]string{"stress", "reporter", "--type", "type9"}, "unknown reporter type"},
	} {
		_, err := runColo(t, tc.args...)
		if err == nil || !isBadInput(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v (bad input %v), want %q", tc.args, err, isBadInput(err), tc.want)
		}
	}
}

// The whole pipeline on the simulated machine through the commands.
func TestPredictSimPipeline(t *testing.T) {
	dir := t.TempDir()
	apps := []string{"--app", "cpu=cpu", "--app", "neighbor=neighbor:6M:1g", "--app", "mload=mload:60M"}
	out, err := runColo(t, append([]string{"predict", "profile", "--runtime", "sim", "--data", dir, "--dials", "0:64:8", "--method", "linear"}, apps...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, f := range []string{"reporter_sensitivity.csv", "contentiousness.csv", "contentiousness_scores.csv", "sensitivity/neighbor_data.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%s not written: %v\n%s", f, err, out)
		}
	}
	out, err = runColo(t, append([]string{"predict", "validate", "--runtime", "sim", "--data", dir, "--dials", "0:64:8", "--method", "linear", "--json"}, apps...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil || v["n"] != 6.0 {
		t.Fatalf("%v %v", err, out)
	}
	s := v["scores"].(map[string]any)
	if !(s["mload"].(float64) > s["cpu"].(float64)) {
		t.Fatalf("mload should be more contentious than cpu: %v", s)
	}
	// Deterministic by seed: the same profile twice gives byte-identical files.
	dir2 := t.TempDir()
	if _, err := runColo(t, append([]string{"predict", "profile", "--runtime", "sim", "--data", dir2, "--dials", "0:64:8", "--method", "linear"}, apps...)...); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"reporter_sensitivity.csv", "contentiousness.csv", "sensitivity/neighbor_data.csv"} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, _ := os.ReadFile(filepath.Join(dir2, f))
		if string(a) != string(b) {
			t.Fatalf("%s differs between two runs with the same seed", f)
		}
	}
}
