package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/agent"
	"colo/agent/api"
	"colo/agent/core"
)

// The colo binary with --runtime process on the FUSE-mounted emulator: a `sleep` in a
// hand-made cgroup under --cgroup-parent, labelled priority by its --labels-dir file (one
// bad line, logged with file:line), gets monitoring and control groups holding its PID;
// they go when the sleep ends; SIGTERM leaves the emulator as it was before the agent.
func TestProcessRuntimeAgentBinary(t *testing.T) {
	parent := fmt.Sprintf("colo-agent-cli-%d", os.Getpid())
	pid, end := agent.RealCgroup(t, parent, "web")
	bin, _ := colo(t)
	em, root := mountEmulator(t)
	before := comparable(em)
	labels := t.TempDir()
	if err := os.WriteFile(filepath.Join(labels, "web.labels"), []byte(core.LabelClass+"=priority\nbogus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startAgentArgs(t, bin, "--runtime", "process", "--cgroup-parent", parent, "--labels-dir", labels,
		"--policy", "static-cat", "--resctrl-root", root, "--state-dir", t.TempDir())
	st := p.until("the sleep's cgroup managed with its PID in its groups", func(st api.Status) bool {
		return agent.InGroups(em, byName(st, "web"), pid)
	})
	c := byName(st, "web")
	if st.Runtime != "process" || !st.RuntimeConnected || c.Request.Class != core.Priority || c.Mask == "" {
		t.Errorf("status: runtime %q connected %v; web class %s mask %q; want process, connected, priority with a mask", st.Runtime, st.RuntimeConnected, c.Request.Class, c.Mask)
	}
	end()
	p.until("the emptied cgroup's groups removed", func(st api.Status) bool { return byName(st, "web") == nil })
	p.term()
	if after := comparable(em); !equalState(before, after) {
		t.Errorf("emulator changed by the agent:\nbefore %+v\nafter  %+v", before, after)
	}
	if log := p.log(); !strings.Contains(log, "web.labels:2") {
		t.Errorf("the bad label line is not reported with file:line:\n%s", log)
	}
}
