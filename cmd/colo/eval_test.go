package main

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func isBadInput(err error) bool {
	var ue usageError
	return errors.As(err, &ue)
}

const readmeWorkload = "sphinx306,lbm06,libquantum06,applu00,soplex06,milc06"

// Issue 2 must-show: the PBBCache README example by colo eval, both mask sets, 4 decimals.
func TestEvalReadmeExample(t *testing.T) {
	for _, c := range []struct {
		masks          string
		nb, sd         []float64
		stp, antt, unf float64
	}{
		{"0x600,0x180,0x40,0x20,0x1e,0x1",
			[]float64{1.11045, 1.00697, 1.16813, 1.04627, 1.18749, 1.02608},
			[]float64{1.1605, 1.0409, 1.2434, 1.1232, 1.2238, 1.1365},
			5.21402, 1.15471, 1.19452},
		{"0x700,0x80,0x40,0x20,0x1e,0x1", nil, nil, 5.27237, 1.14205, 1.18588},
	} {
		out := mustRunColo(t, "eval", "--machine", "skx-6138", "--workload", readmeWorkload,
			"--masks", c.masks, "--bw-model", "stalls", "--max-bw", "35000", "--format", "json")
		var doc outputDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		r := doc.Results[0]
		near := func(what string, got, want float64) {
			if math.Abs(got-want) > 5e-5 {
				t.Errorf("%s %s = %.6f, want %v", c.masks, what, got, want)
			}
		}
		near("STP", r.STP, c.stp)
		near("ANTT", r.ANTT, c.antt)
		near("unfairness", r.Unfairness, c.unf)
		for i := range c.nb {
			near(r.Apps[i].Name+" slowdown_cache", r.Apps[i].SlowdownCache, c.nb[i])
			near(r.Apps[i].Name+" slowdown", r.Apps[i].Slowdown, c.sd[i])
		}
		if r.Workload != 1 || len(r.Apps) != 6 || r.Apps[0].Mask != strings.Split(c.masks, ",")[0] {
			t.Errorf("record %+v", r)
		}
	}
}

func TestEvalBadInput(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "m.csv")
	os.WriteFile(prof, []byte("BENCH,NR_WAYS,ipc,llcrpki,llcmpki,llcrpkc,llcmpkc,llc_usage_kb,bandwidth_mbps,llcm_bandwidth,stalls_l2_miss,stalls_l3_miss,stalls_total,stalls_store_buf\n"+
		"a,1,1.0,1,1,1,1,100,100,100,0.1,0.1,0.2,0.01\na,2,n/a,1,1,1,1,100,100,100,0.1,0.1,0.2,0.01\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "sphinx306,lbm", "--masks", "0x1,0x2"}, `unknown benchmark "lbm"`},
		{[]string{"--workload", "sphinx306,lbm06", "--masks", "0x5,0x2"}, "not contiguous"},
		{[]string{"--workload", "sphinx306,lbm06", "--masks", "0x1000,0x2"}, "wider than the 11-way cache"},
		{[]string{"--workload", "sphinx306,lbm06", "--masks", "0x3"}, "1 masks for 2 applications"},
		{[]string{"--workload", "sphinx306,lbm06", "--masks", "0x3,zz"}, `"zz" is not a hex bitmask`},
		{[]string{"--workload", "sphinx306,lbm06", "--masks", "0x3,0x4", "--machine", "nope"}, `unknown machine "nope"`},
		{[]string{"--workload", "sphinx306,lbm06", "--masks", "0x3,0x4", "--machine", "icx-4314-2s"}, "11 way counts but machine icx-4314-2s has 12"},
		{[]string{"--workload", "sphinx306,lbm06", "--masks", "0x3,0x4", "--bw-model", "fast"}, "unknown bandwidth model"},
		{[]string{"--workload", "sphinx306,lbm06", "--masks", "0x3,0x4", "--profiles", "/nonexistent.csv"}, "nonexistent.csv"},
		{[]string{"--workload", "sphinx306,lbm06", "--masks", "0x3,0x4", "--format", "xml"}, "--format"},
		{[]string{"--masks", "0x3"}, "--workload is required"},
		{[]string{"--workload", "a", "--masks", "0x1", "--profiles", prof}, prof + `:3: column ipc of a at 2 ways: "n/a" is not a finite number`},
	} {
		_, err := runColo(t, append([]string{"eval"}, c.args...)...)
		if err == nil || !isBadInput(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v (bad input %v), want exit 2 with %q", c.args, err, isBadInput(err), c.want)
		}
	}
}
