package main

import (
	"encoding/json"
	"testing"
)

func TestDoctorJSON(t *testing.T) {
	out := mustRunColo(t, "doctor", "--json")
	var checks []struct{ Name, Status, Value, Meaning, Fix string }
	if err := json.Unmarshal([]byte(out), &checks); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []string{"docker", "cgroups", "perf", "resctrl", "cpu governor", "turbo", "smt", "huge pages"}
	seen := map[string]bool{}
	for _, c := range checks {
		seen[c.Name] = true
		if c.Meaning == "" {
			t.Errorf("%s: no meaning", c.Name)
		}
		if (c.Status == "warn" || c.Status == "fail") && c.Fix == "" {
			t.Errorf("%s is %s without a fix", c.Name, c.Status)
		}
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no %q check in %s", w, out)
		}
	}
}

func TestImageBuildBadInput(t *testing.T) {
	if _, err := runColo(t, "image", "build", "--tag", ""); !isBadInput(err) {
		t.Errorf("empty tag: %v", err)
	}
	if _, err := runColo(t, "image", "build", "--binary", "/nonexistent/colo"); !isBadInput(err) {
		t.Errorf("missing binary: %v", err)
	}
	// A dynamically linked file is refused before anything is built.
	if _, err := runColo(t, "image", "build", "--binary", "/bin/sh"); !isBadInput(err) {
		t.Errorf("dynamic binary: %v", err)
	}
}
