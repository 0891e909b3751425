package agent

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"colo/agent/api"
	"colo/agent/core"
	"colo/agent/discovery/process"
	"colo/agent/host"
	"colo/internal/testenv"
	"colo/resctrl/emu"
	"colo/workload"
)

// RealCgroup creates cgroup parent/name on every v2 hierarchy and on the v1 cpu, cpuacct
// and pids ones (as an operator would), moves a new `sleep` into it and returns its PID
// and a function that ends the sleep; the cgroups and the process go at cleanup. It needs
// root. (Exported for the external end-to-end tests of package agent_test.)
func RealCgroup(t *testing.T, parent, name string) (pid int, end func()) {
	t.Helper()
	var notRoot error
	if os.Geteuid() != 0 {
		notRoot = errors.New("not root")
	}
	testenv.Need(t, "root (to create cgroups)", notRoot)
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, m := range workload.Mounts(mi) {
		if m.Root == "/" && (m.Version == 2 || slices.ContainsFunc(m.Controllers, func(c string) bool {
			return c == "cpu" || c == "cpuacct" || c == "pids"
		})) && !slices.Contains(dirs, m.Dir) {
			dirs = append(dirs, m.Dir)
		}
	}
	if len(dirs) == 0 {
		t.Fatal("no cgroup hierarchy mounted")
	}
	cmd := exec.Command("sleep", "3600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := false
	end = func() {
		if !ended {
			ended = true
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	t.Cleanup(func() {
		end()
		for _, d := range dirs {
			for _, p := range []string{filepath.Join(d, parent, name), filepath.Join(d, parent)} {
				for i := 0; i < 50; i++ { // a reaped task may leave its cgroup a moment later
					if err := os.Remove(p); err == nil || errors.Is(err, os.ErrNotExist) {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}
	})
	for _, d := range dirs {
		dir := filepath.Join(d, parent, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatalf("move sleep into %s: %v", dir, err)
		}
	}
	return cmd.Process.Pid, end
}

// End to end on this host's real cgroups (v1, hybrid or v2): a `sleep` in a cgroup made
// by hand under a unique parent, labelled priority by a labels file, is found by the
// process discovery; the agent (in-process resctrl emulator) gives it a monitoring group
// holding the sleep's PID and a control group with the policy's mask; when the sleep
// ends the cgroup is empty and the groups go.
func TestProcessRuntimeEndToEnd(t *testing.T) {
	parent := fmt.Sprintf("colo-agent-e2e-%d", os.Getpid())
	pid, end := RealCgroup(t, parent, "web")
	labels := t.TempDir()
	if err := os.WriteFile(filepath.Join(labels, "web.labels"), []byte(core.LabelClass+"=priority\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	em, err := emu.NewNamed("intel", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	disc := &process.Source{Parent: parent, LabelsDir: labels, Interval: 20 * time.Millisecond}
	h := startAgentWrapped(t, em, "static-cat", t.TempDir(), func(g Groups) Groups { return g }, func(o *Options) {
		o.Discovery, o.Host = disc, &host.Linux{NoPerf: true}
	})
	st := h.until("the sleep's cgroup managed with its PID in its groups", func(st api.Status) bool {
		return InGroups(em, find(st, "web"), pid)
	})
	c := find(st, "web")
	if c.Request.Class != core.Priority || c.Mask == "" || c.Monitoring != "container" || c.Cgroup != "/"+parent+"/web" {
		t.Errorf("tenant web: class %s, mask %q, monitoring %q, cgroup %s; want priority with a mask, its own monitoring group, cgroup /%s/web", c.Request.Class, c.Mask, c.Monitoring, c.Cgroup, parent)
	}
	end()
	h.until("the emptied cgroup's groups removed", func(st api.Status) bool { return find(st, "web") == nil })
	if _, ok := em.State().Group(c.MonGroup); ok {
		t.Errorf("monitoring group %s still exists after the cgroup emptied", c.MonGroup)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}

// InGroups says whether the emulator's control and monitoring groups of tenant c (nil:
// not managed) both hold pid. (Exported for package agent_test.)
func InGroups(em *emu.Emulator, c *api.ContainerStatus, pid int) bool {
	if c == nil || c.MonGroup == "" || c.CtrlGroup == "" {
		return false
	}
	st := em.State()
	m, okm := st.Group(c.MonGroup)
	g, okc := st.Group(c.CtrlGroup)
	return okm && okc && slices.Contains(m.Tasks, pid) && slices.Contains(g.Tasks, pid)
}
