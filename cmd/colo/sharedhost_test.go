package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue #26: GNU timeout signals colo and then its own process group, so colo gets the
// signal twice a moment apart; that is one stop. `timeout -s TERM|INT N colo run …` at
// moments from container creation to a running, allocated run leaves no container,
// network or group and system/default as before, and colo exits 128+N (before, the
// second signal made colo exit at once in about half the tries, leaving all of them).
func TestRunUnderTimeout(t *testing.T) {
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Fatal("GNU timeout (coreutils) is needed:", err)
	}
	tries := 10
	if testing.Short() {
		tries = 2
	}
	for i := 0; i < tries; i++ {
		sig, code := "TERM", 143
		if i%2 == 1 {
			sig, code = "INT", 130
		}
		after := 0.5 + 3.5*rand.Float64() // from creating the network to running jobs
		t.Run(fmt.Sprintf("%d-%s-%.1fs", i, sig, after), func(t *testing.T) {
			t.Parallel()
			e := newLinuxRunEnv(t)
			out := t.TempDir() + "/run"
			cmd := exec.Command("timeout", "--preserve-status", "-s", sig, fmt.Sprintf("%.2f", after), os.Args[0],
				"run", "../../examples/linux/colocation.yaml", "--platform", "linux", "--resctrl-root", e.root, "--out", out)
			cmd.Env = append(append(os.Environ(), "COLO_TEST_MAIN=1"), e.env()...)
			log := &syncBuffer{}
			cmd.Stdout, cmd.Stderr = log, log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := childOf(cmd.Process.Pid)
			err := cmd.Wait()
			var ee *exec.ExitError
			// a signal before colo's handler exists ends it by the default action (timeout
			// then reports 128+N too); either way nothing may be left
			if !errors.As(err, &ee) || ee.ExitCode() != code {
				t.Fatalf("exit %v, want %d; output:\n%s", err, code, log.String())
			}
			if strings.Contains(log.String(), "exiting without cleaning up") {
				t.Fatalf("timeout's second signal made colo exit at once:\n%s", log.String())
			}
			if cn, nn, gn, defOK := e.leftovers(t, pid); cn != 0 || nn != 0 || gn != 0 || !defOK {
				t.Fatalf("after timeout -s %s %.1f: %d containers, %d networks, %d groups, default restored %v; output:\n%s",
					sig, after, cn, nn, gn, defOK, log.String())
			}
		})
	}
}

// childOf waits for the child a process forks (GNU timeout's command) and returns its
// PID (0 if the process ended first).
func childOf(pid int) int {
	f := fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)
	for {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0
		}
		if c := strings.Fields(string(b)); len(c) > 0 {
			n, _ := strconv.Atoi(c[0])
			return n
		}
		time.Sleep(time.Millisecond)
	}
}
