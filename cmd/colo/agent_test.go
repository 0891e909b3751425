package main

import (
	"colo/agent/api"
	"colo/agent/core"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Bad input to colo agent exits 2 with the file:line of a bad --policy-options file, and
// nothing is created on the mount; a port in use is a runtime failure named before
// resctrl is touched.
func TestAgentBadInput(t *testing.T) {
	root := mountForJSON(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "policy.yaml")
	os.WriteFile(bad, []byte("scheduler:\n  implementation: static-cat\n  reserve_ways: 99\n"), 0o644)
	unknown := filepath.Join(dir, "unknown.yaml")
	os.WriteFile(unknown, []byte("scheduler:\n  implementation: static-cat\n  options:\n    no_such_key: 1\n"), 0o644)
	before, _ := os.ReadDir(root)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy-options", bad}, bad + ":3: reserve_ways 99"},
		{[]string{"--policy-options", unknown}, unknown + ":4: dcat: unknown scheduler.options key \"no_such_key\""},
		{[]string{"--policy", "no-such-policy"}, "no-such-policy"},
		{[]string{"--interval", "5ms"}, "at least 20ms"},
		{[]string{"--runtime", "podman"}, "use docker, nri or process"},
		{[]string{"--runtime", "process", "--labels-dir", filepath.Join(dir, "nope")}, "--labels-dir " + filepath.Join(dir, "nope")},
		{[]string{"--runtime", "process", "--cgroup-parent", "../x"}, "--cgroup-parent \"../x\""},
		{[]string{"--mon-interval", "-1s"}, "--mon-interval -1s"},
		{[]string{"--profiles", dir}, "reporter_sensitivity.csv"},
	} {
		args := append([]string{"agent", "--resctrl-root", root, "--state-dir", dir, "--listen", "127.0.0.1:0"}, c.args...)
		_, stderr, err := runSplit(t, args...)
		if err == nil || exitStatus(err, nil, &strings.Builder{}) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("colo %v: exit %d, error %v (stderr %q), want exit 2 mentioning %q", args, exitStatus(err, nil, &strings.Builder{}), err, stderr, c.want)
		}
	}
	after, _ := os.ReadDir(root)
	if len(after) != len(before) {
		t.Errorf("bad input changed the mount: %d entries before, %d after", len(before), len(after))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, _, err = runSplit(t, "agent", "--resctrl-root", root, "--state-dir", dir, "--listen", l.Addr().String())
	if err == nil || exitStatus(err, nil, &strings.Builder{}) != 1 || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("port in use: %v", err)
	}
}

// colo top's table carries every container's class, allocation, monitoring and predicted
// slowdown, and says when IPC is unavailable and why.
func TestTopTable(t *testing.T) {
	occ := 3.5 * (1 << 20)
	ipc, slow := 1.25, 1.37
	st := api.Status{Instance: "ab12", Policy: "static-cat", Interval: "1s", Runtime: "docker", RuntimeConnected: true,
		ResctrlRoot: "/sys/fs/resctrl", Machine: "host", Sockets: 1, LLCWays: 12, DefaultMasks: map[string]string{"0": "0xff0"},
		Updated: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Containers: []api.ContainerStatus{
			{Name: "web", Request: core.Request{Class: core.Priority}, State: "running", Mask: "0xf", Ways: 4, MBA: 50,
				LLCOccupancyBytes: &occ, Monitoring: "container", Counters: "hardware", IPC: &ipc, Probe: "none", PredictedSlowdown: &slow},
			{Name: "batch", Request: core.Request{Class: core.Batch}, State: "running", Monitoring: "class", Counters: "cputime", Probe: "none"},
		}}
	var b strings.Builder
	if err := writeTop(&b, st); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, re := range []string{`web\s+priority\s+running\s+0\s+4\s+0xf\s+50\s+3\.5M`, `batch\s+batch\s+running\s+0\s+-\s+default`,
		`n/a\(cputime\)\s+-\s+class`, `1\.37x\s+container`, `system/default 0:0xff0`, `docker connected`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("top output lacks %s:\n%s", re, out)
		}
	}
	st.RuntimeConnected, st.RuntimeError = false, "dial unix: no such file"
	b.Reset()
	writeTop(&b, st)
	if !strings.Contains(b.String(), "DISCONNECTED dial unix") {
		t.Errorf("disconnected runtime not shown:\n%s", b.String())
	}
}
