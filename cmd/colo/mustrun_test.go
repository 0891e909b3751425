package main

import (
	"encoding/json"
	"testing"
)

// mustRunColo runs a colo command and returns its output (stdout and stderr), failing the
// test with the output when the command fails.
func mustRunColo(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runColo(t, args...)
	if err != nil {
		t.Fatalf("colo %v: %v\n%s", args, err, out)
	}
	return out
}

// jsonObject decodes out as one JSON object, failing the test when it is not one.
func jsonObject(t *testing.T, out string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return v
}
