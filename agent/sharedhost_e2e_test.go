package agent_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"colo/agent"
	"colo/agent/api"
	"colo/agent/core"
)

// startHeld starts `colo agent ARGS` like startAgentArgs but does not reap it: a
// SIGKILLed agent stays a zombie until the test waits for it, as it does on a host whose
// supervisor has not collected it yet.
func startHeld(t *testing.T, bin string, args ...string) *agentProc {
	t.Helper()
	p := &agentProc{t: t, addr: freePort(t), logf: filepath.Join(t.TempDir(), "agent.log"), done: make(chan error, 1)}
	p.cmd = exec.Command(bin, append(append([]string{"agent"}, args...), "--interval", "100ms", "--no-perf", "--listen", p.addr)...)
	f, err := os.Create(p.logf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p.cmd.Stderr = f
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// Issue #26 item 2: the agent killed with SIGKILL and started again 0.1–1 s later, while
// the killed one is still a zombie (not reaped), ten times: each new agent undoes what
// the dead one left (kill(pid, 0) counted the zombie alive, so its groups stayed and the
// new agent recorded the squeezed default as found), and after a final clean stop the
// emulator is exactly as before the first agent.
func TestAgentKill9QuickRestart(t *testing.T) {
	parent := fmt.Sprintf("colo-i26-restart-%d", os.Getpid())
	_, end := agent.RealCgroup(t, parent, "web")
	defer end()
	bin, _ := colo(t)
	em, root := mountEmulator(t)
	before := comparable(em)
	labels, state := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(labels, "web.labels"), []byte(core.LabelClass+"=priority\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--runtime", "process", "--cgroup-parent", parent, "--labels-dir", labels,
		"--policy", "static-cat", "--resctrl-root", root, "--state-dir", state}
	n := 10
	if testing.Short() {
		n = 3
	}
	allocated := func(st api.Status) bool { c := byName(st, "web"); return c != nil && c.Mask != "" }
	var prev *agentProc
	for i := 0; i <= n; i++ {
		p := startHeld(t, bin, args...)
		p.until(fmt.Sprintf("agent %d allocates the priority cgroup", i), allocated)
		if prev != nil {
			prev.cmd.Wait() // the predecessor was a zombie until now
		}
		if i == n { // a clean stop
			p.cmd.Process.Signal(syscall.SIGTERM)
			if err := p.cmd.Wait(); err != nil {
				t.Fatalf("the last agent after SIGTERM: %v\n%s", err, p.log())
			}
			break
		}
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// the restart delay of the scenario (not a wait for an event)
		time.Sleep(100*time.Millisecond + rand.N(900*time.Millisecond))
		prev = p
	}
	if after := comparable(em); !equalState(before, after) {
		t.Errorf("the emulator after %d kill -9 + quick restarts and a clean stop:\nbefore %+v\nafter  %+v", n, before, after)
	}
	if rs, _ := filepath.Glob(filepath.Join(state, "journal", "*", "*.json")); len(rs) != 0 {
		t.Errorf("journal records left: %v", rs)
	}
}
