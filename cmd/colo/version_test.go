package main

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// version's build_date is when the binary was built (the link-time value, else the
// binary's modification time), not the commit's time, which has a key of its own.
func TestVersionBuildDateIsTheBuild(t *testing.T) {
	out := mustRunColo(t, "version", "--json")
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, ok := v["commit_date"]; !ok {
		t.Errorf("no commit_date: %s", out)
	}
	exe, _ := os.Executable()
	st, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	got, err := time.Parse(time.RFC3339, v["build_date"].(string))
	if err != nil || !got.Equal(st.ModTime().UTC().Truncate(time.Second)) {
		t.Errorf("build_date %v (%v), want the binary's time %v", v["build_date"], err, st.ModTime().UTC())
	}
	buildDate = "2026-11-28T01:02:03Z"
	defer func() { buildDate = "" }()
	if b := buildVersion().BuildDate; b != buildDate {
		t.Errorf("with -X main.buildDate: %q", b)
	}
}
