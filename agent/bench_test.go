package agent_test

// Agent overhead, measured (never asserted):
//
//	go test ./agent -run '^$' -bench AgentOverhead -benchtime 1x
//
// starts 30 throttled Docker containers, runs `colo agent` on the FUSE-mounted emulator at
// 1 s and at 50 ms, and reports the agent's CPU (% of one core over a 20 s window after
// every container is managed), its RSS, and the time from a container's start (Docker's
// State.StartedAt) to its monitoring group existing in the emulator.

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"colo/agent"
	"colo/agent/api"
)

func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ = 100
}

func procRSS(pid int) float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			kb, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func BenchmarkAgentOverhead(b *testing.B) {
	bin, image := colo(b)
	const n = 30
	pre := fmt.Sprintf("colobench-agent-%d", os.Getpid())
	for i := 0; i < n; i++ {
		class := []string{"batch", "priority", "best-effort"}[i%3]
		runContainer(b, image, fmt.Sprintf("%s-%02d", pre, i), "colo.io/class="+class)
	}
	for _, iv := range []string{"1s", "50ms"} {
		b.Run("interval="+iv, func(b *testing.B) {
			tb := b
			e, root := mountEmulator(tb)
			a := startAgentArgs(tb, bin, "--runtime", "docker", "--policy", "static-cat", "--resctrl-root", root,
				"--state-dir", b.TempDir(), "--interval", iv, "--no-perf=false")
			mine := func(st api.Status) int {
				k := 0
				for _, c := range st.Containers {
					if strings.HasPrefix(c.Name, pre) && c.Monitoring != "none" {
						k++
					}
				}
				return k
			}
			a.until("30 containers managed", func(st api.Status) bool { return mine(st) >= n })
			pid := a.cmd.Process.Pid
			for i := 0; i < b.N; i++ {
				c0, _ := procCPU(pid)
				t0 := time.Now()
				time.Sleep(20 * time.Second)
				c1, _ := procCPU(pid)
				b.ReportMetric(100*(c1-c0).Seconds()/time.Since(t0).Seconds(), "%cpu")
				b.ReportMetric(procRSS(pid), "MB-rss")
			}
			// time from docker run to the container's monitoring group
			name := fmt.Sprintf("%s-late-%s", pre, iv)
			id, _ := runContainer(tb, image, name, "colo.io/class=priority")
			group := "mon_groups/" + agent.GroupPrefix(a.status0().Instance) + id[:12]
			var seen time.Time
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if _, ok := e.State().Group(group); ok {
					seen = time.Now()
					break
				}
			}
			out, _ := exec.Command("docker", "inspect", "-f", "{{.State.StartedAt}}", id).Output()
			started, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(out)))
			if err == nil && !seen.IsZero() {
				b.ReportMetric(float64(seen.Sub(started).Milliseconds()), "ms-to-groups")
			}
			a.term()
		})
	}
}

func (p *agentProc) status0() api.Status {
	st, _ := p.status()
	return st
}
