package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 4 must-show: colo partition reproduces the ucp and opt-stp rows of PBBCache's
// README example (stalls model, 35,000 MB/s).
func TestPartitionReadmeRows(t *testing.T) {
	out := mustRunColo(t, "partition", "--machine", "skx-6138", "--workload", readmeWorkload,
		"--policy", "ucp,opt-stp", "--bw-model", "stalls", "--max-bw", "35000", "--format", "json", "--jobs", "1")
	var doc outputDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := map[string]struct {
		masks          []string
		nb, sd         []float64
		stp, antt, unf float64
	}{
		"ucp": {[]string{"0x600", "0x180", "0x40", "0x20", "0x1e", "0x1"},
			[]float64{1.11045, 1.00697, 1.16813, 1.04627, 1.18749, 1.02608},
			[]float64{1.1605, 1.0409, 1.24338, 1.12323, 1.22376, 1.13648}, 5.21402, 1.15471, 1.19452},
		"opt-stp": {[]string{"0x700", "0x80", "0x40", "0x20", "0x1e", "0x1"},
			[]float64{1.07895, 1.0097, 1.16813, 1.04627, 1.18749, 1.02608},
			[]float64{1.09653, 1.04493, 1.23916, 1.11914, 1.22186, 1.13067}, 5.27237, 1.14205, 1.18588},
	}
	if len(doc.Results) != 2 {
		t.Fatalf("%d results", len(doc.Results))
	}
	for _, r := range doc.Results {
		w := want[r.Policy]
		if r.Workload != 1 || len(r.Apps) != 6 {
			t.Fatalf("record %+v", r)
		}
		for i, a := range r.Apps {
			if a.Mask != w.masks[i] || math.Abs(a.SlowdownCache-w.nb[i]) > 5e-6 || math.Abs(a.Slowdown-w.sd[i]) > 5e-6 {
				t.Errorf("%s %s: %s %.5f %.5f, want %s %v %v", r.Policy, a.Name, a.Mask, a.SlowdownCache, a.Slowdown, w.masks[i], w.nb[i], w.sd[i])
			}
		}
		if math.Abs(r.STP-w.stp) > 5e-6 || math.Abs(r.ANTT-w.antt) > 5e-6 || math.Abs(r.Unfairness-w.unf) > 5e-6 {
			t.Errorf("%s: STP %.5f ANTT %.5f unf %.5f", r.Policy, r.STP, r.ANTT, r.Unfairness)
		}
	}
}

// Every policy runs on every shipped workload, and the JSON has the documented keys.
func TestPartitionAllPoliciesShippedWorkloads(t *testing.T) {
	out := mustRunColo(t, "partition", "--workloads", "../../data/pbbcache-skylake/workloads.csv",
		"--policy", "shared,equal,ucp,ucp-slowdown,kpart,dunn,cpa,lfoc,lfoc+,opt-stp,opt-unf,optc-stp,optc-unf", "--format", "json", "--jobs", "2")
	var raw struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Results) != 6*13 {
		t.Fatalf("%d results, want 78", len(raw.Results))
	}
	byWL := map[float64]map[string]float64{}
	for _, r := range raw.Results {
		for _, k := range []string{"workload", "policy", "stp", "antt", "unfairness", "seconds", "apps"} {
			if _, ok := r[k]; !ok {
				t.Fatalf("result without key %q: %v", k, r)
			}
		}
		for _, a := range r["apps"].([]any) {
			for _, k := range []string{"name", "cluster", "mask", "ways", "slowdown_cache", "slowdown"} {
				if _, ok := a.(map[string]any)[k]; !ok {
					t.Fatalf("app without key %q", k)
				}
			}
		}
		wl := r["workload"].(float64)
		if byWL[wl] == nil {
			byWL[wl] = map[string]float64{}
		}
		byWL[wl][r["policy"].(string)+"/unf"] = r["unfairness"].(float64)
		byWL[wl][r["policy"].(string)+"/stp"] = r["stp"].(float64)
	}
	// The optima dominate: optc-unf is at least as fair as every policy, optc-stp at least as
	// productive, and clustering is at least as good as strict partitioning.
	for wl, m := range byWL {
		for _, p := range []string{"shared", "equal", "ucp", "ucp-slowdown", "kpart", "lfoc", "lfoc+", "opt-stp", "opt-unf"} {
			if m["optc-unf/unf"] > m[p+"/unf"]+1e-9 {
				t.Errorf("W%v: optc-unf %v less fair than %s %v", wl, m["optc-unf/unf"], p, m[p+"/unf"])
			}
			if m["optc-stp/stp"] < m[p+"/stp"]-1e-9 {
				t.Errorf("W%v: optc-stp %v below %s %v", wl, m["optc-stp/stp"], p, m[p+"/stp"])
			}
		}
	}
}

func TestPartitionBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "w.csv")
	os.WriteFile(bad, []byte("lbm06,mcf06\nlbm06,,mcf06\n"), 0o644)
	unk := filepath.Join(dir, "u.csv")
	os.WriteFile(unk, []byte("lbm06,mcf06\n\nlbm06,nosuch00\n"), 0o644)
	twelve := strings.TrimSuffix(strings.Repeat("lbm06,", 12), ",")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "lbm06,nosuch00"}, `--workload: unknown benchmark "nosuch00"`},
		{[]string{"--workload", "lbm06,mcf06", "--policy", "ucp,best"}, `--policy: unknown policy "best"`},
		{[]string{"--workload", twelve, "--policy", "ucp"}, "12 applications do not fit in the 11 ways"},
		{[]string{"--workloads", bad}, bad + `:2: workload "lbm06,,mcf06": empty name at position 2`},
		{[]string{"--workloads", unk}, unk + `:3: unknown benchmark "nosuch00"`},
		{[]string{"--workloads", filepath.Join(dir, "none.csv")}, "none.csv"},
		{[]string{"--workload", "lbm06", "--workloads", bad}, "not both"},
		{[]string{}, "give the applications"},
		{[]string{"--workload", "lbm06", "--thresholds", "strict"}, "--thresholds"},
		{[]string{"--workload", "lbm06", "--jobs", "-1"}, "--jobs"},
		{[]string{"--workload", "lbm06", "--jobs", "x"}, "invalid argument"},
	} {
		_, err := runColo(t, append([]string{"partition"}, c.args...)...)
		if err == nil || !isBadInput(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v (bad input %v), want exit 2 with %q", c.args, err, isBadInput(err), c.want)
		}
	}
	// Duplicate names are distinct instances, as in PBBCache.
	if _, err := runColo(t, "partition", "--workload", "lbm06,lbm06,mcf06", "--policy", "ucp,optc-unf"); err != nil {
		t.Errorf("duplicates: %v", err)
	}
}

func TestClassifyCommand(t *testing.T) {
	out := mustRunColo(t, "classify", "--workload", "zeusmp06,gap00,lbm06", "--format", "json")
	var doc struct {
		Apps []classOut `json:"apps"`
	}
	json.Unmarshal([]byte(out), &doc)
	got := []string{doc.Apps[0].Class, doc.Apps[1].Class, doc.Apps[2].Class}
	if strings.Join(got, ",") != "streaming,streaming,streaming" {
		t.Errorf("paper thresholds: %v", got)
	}
	// zeusmp06 and gap00 flip to light with PBBCache's 14 (seed001.md §6.2).
	out, _ = runColo(t, "classify", "--workload", "zeusmp06,gap00,lbm06", "--format", "json", "--thresholds", "pbbcache")
	json.Unmarshal([]byte(out), &doc)
	got = []string{doc.Apps[0].Class, doc.Apps[1].Class, doc.Apps[2].Class}
	if strings.Join(got, ",") != "light,light,streaming" {
		t.Errorf("pbbcache thresholds: %v", got)
	}
	if _, err := runColo(t, "classify", "--workload", "nope"); err == nil || !isBadInput(err) {
		t.Errorf("unknown benchmark: %v", err)
	}
}
