package main

import (
	"bytes"
	"strings"
	"testing"

	"colo/k8s/nodestate"
)

func TestExitCodesAndDryRun(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"publish"}, 2, "--node is required"},
		{[]string{"publish", "--node", "n1"}, 2, "exactly one of --agent"},
		{[]string{"publish", "--node", "n1", "--resident", "db=nope", "--dry-run"}, 2, `profile "nope"`},
		{[]string{"publish", "--node", "n1", "--resident", "db=605.mcf_s:gold", "--dry-run"}, 2, `class "gold"`},
		{[]string{"publish", "--node", "n1", "--resident", "db=605.mcf_s", "--profiles", "/nonexistent", "--dry-run"}, 2, "/nonexistent"},
		{[]string{"publish", "--bogus"}, 2, "unknown flag"},
		{[]string{"experiment", "--nodes", "0", "--scheduler", "x"}, 2, "--nodes"},
		{[]string{"publish", "--node", "n1", "--agent", "http://127.0.0.1:1", "--dry-run"}, 1, "127.0.0.1:1"},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != c.code || !strings.Contains(errb.String(), c.err) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), c.code, c.err)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"publish", "--node", "n1", "--resident", "db=605.mcf_s:priority:0.9", "--resident", "etl=619.lbm_s", "--dry-run"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	st, err := nodestate.Parse(bytes.TrimSpace(out.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(st.Residents) != 2 || st.Residents[0].Name != "db" || st.Residents[0].Class != "priority" || st.Node != "n1" {
		t.Fatalf("%+v", st)
	}
}
