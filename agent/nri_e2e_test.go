package agent_test

// containerd + NRI end to end: containerd v2 and runc built by scripts/build-containerd.sh
// (cached), run under a temporary root; images come from `docker save` | `ctr images
// import` (no registry); a pod and its container are created through CRI with crictl,
// the colo.io/* vocabulary as annotations; `colo agent --runtime nri` discovers it through
// its NRI plugin, gives it its groups, and keeps following containerd across a restart.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"colo/agent/api"
	"colo/agent/core"
	"colo/internal/containerdtest"
	"colo/internal/testenv"
)

// containerdBin returns the directory of containerd, ctr, the runc shim, runc and crictl.
func containerdBin(t *testing.T) string {
	t.Helper()
	bin, err := containerdtest.Bin()
	testenv.Need(t, "containerd v2, runc and crictl (scripts/build-containerd.sh, run by scripts/setup.sh)", err)
	return bin
}

// pauseTag is the pod sandbox image, pinned in containerd's configuration.
const pauseTag = "colo.local/pause:1"

type containerd struct {
	t    *testing.T
	bin  string
	dir  string
	cmd  *exec.Cmd
	done chan error
}

func (c *containerd) sock() string { return containerdtest.Sock(c.dir) }

func startContainerd(t *testing.T, bin string) *containerd {
	t.Helper()
	// a short directory: unix socket paths are limited to 108 bytes
	dir, err := os.MkdirTemp("", "colo-ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	c := &containerd{t: t, bin: bin, dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(containerdtest.Config(dir, bin, pauseTag)), 0o644); err != nil {
		t.Fatal(err)
	}
	c.start()
	t.Cleanup(func() {
		c.crictlErr("rmp", "-fa") // the pods, their containers and shims
		c.stop()
		exec.Command("umount", "-R", filepath.Join(dir, "state")).Run()
		os.RemoveAll(dir)
	})
	return c
}

func (c *containerd) start() {
	c.t.Helper()
	log, err := os.OpenFile(filepath.Join(c.dir, "containerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer log.Close()
	c.cmd = exec.Command(filepath.Join(c.bin, "containerd"), "--config", filepath.Join(c.dir, "config.toml"))
	c.cmd.Env = append(os.Environ(), "PATH="+c.bin+":"+os.Getenv("PATH"))
	c.cmd.Stdout, c.cmd.Stderr = log, log
	if err := c.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.done = make(chan error, 1)
	go func() { c.done <- c.cmd.Wait() }()
	// ready when the CRI answers
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := c.crictlErr("version"); err == nil {
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(c.dir, "containerd.log"))
			c.t.Fatalf("containerd did not answer:\n%s", tail(string(b), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *containerd) stop() {
	if c.cmd == nil || c.cmd.ProcessState != nil {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
}

func (c *containerd) crictlErr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return containerdtest.Crictl(ctx, c.bin, c.sock(), args...)
}

func (c *containerd) crictl(args ...string) string {
	c.t.Helper()
	out, err := c.crictlErr(args...)
	if err != nil {
		c.t.Fatalf("%v\n%s", err, out)
	}
	return out
}

// importImage moves a Docker image into containerd's k8s.io namespace.
func (c *containerd) importImage(ref string) {
	c.t.Helper()
	if err := containerdtest.ImportImage(context.Background(), c.bin, c.sock(), c.dir, ref); err != nil {
		c.t.Fatal(err)
	}
}

// pauseImage builds the pod sandbox image in Docker.
func pauseImage(t *testing.T) string {
	t.Helper()
	if err := containerdtest.BuildPauseImage(context.Background(), t.TempDir(), pauseTag); err != nil {
		t.Fatal(err)
	}
	return pauseTag
}

// runPod creates a host-network pod with one throttled container through CRI and
// returns the container ID.
func (c *containerd) runPod(name, image string, annotations map[string]string) string {
	c.t.Helper()
	pod := map[string]any{
		"metadata":      map[string]any{"name": name, "namespace": "default", "uid": name + "-uid", "attempt": 0},
		"annotations":   annotations,
		"log_directory": filepath.Join(c.dir, "logs", name),
		"linux":         map[string]any{"security_context": map[string]any{"namespace_options": map[string]any{"network": 2}}},
	}
	ctr := map[string]any{
		"metadata":    map[string]any{"name": "work"},
		"image":       map[string]any{"image": image},
		"command":     []string{"/colo", "stress", "compute", "--duration", "900s"},
		"annotations": annotations,
		"log_path":    "work.log",
		"linux":       map[string]any{"resources": map[string]any{"cpu_period": 100000, "cpu_quota": 5000}},
	}
	pf, cf := filepath.Join(c.dir, name+"-pod.json"), filepath.Join(c.dir, name+"-ctr.json")
	for f, v := range map[string]any{pf: pod, cf: ctr} {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(f, b, 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	podID := c.crictl("runp", pf)
	id := c.crictl("create", podID, cf, pf)
	c.crictl("start", id)
	return id
}

func byID(st api.Status, id string) *api.ContainerStatus {
	for i := range st.Containers {
		if st.Containers[i].ID == id {
			return &st.Containers[i]
		}
	}
	return nil
}

func TestAgentNRIEndToEnd(t *testing.T) {
	bin, image := colo(t)
	cbin := containerdBin(t)
	pause := pauseImage(t)
	defer exec.Command("docker", "rmi", "-f", pause).Run()
	ctrd := startContainerd(t, cbin)
	ctrd.importImage(pause)
	ctrd.importImage(image)

	e, root := mountEmulator(t)
	before := comparable(e)
	a := startAgentArgs(t, bin, "--runtime", "nri", "--nri-socket", containerdtest.NRISock(ctrd.dir), "--policy", "static-cat",
		"--resctrl-root", root, "--state-dir", t.TempDir())
	a.until("NRI plugin synchronized", func(st api.Status) bool { return st.RuntimeConnected })

	prio := ctrd.runPod("colo-nri-prio", image, map[string]string{core.LabelClass: "priority"})
	st := a.until("the CRI container managed with its groups", func(st api.Status) bool {
		c := byID(st, prio)
		return c != nil && c.CtrlGroup != "" && c.Monitoring == "container"
	})
	c := byID(st, prio)
	if c.Request.Class != core.Priority {
		t.Errorf("annotation colo.io/class not read: %+v", c.Request)
	}
	es := e.State()
	g, ok := es.Group(c.CtrlGroup)
	if !ok || fmt.Sprintf("%#x", g.Schemata["L3"][c.Socket]) != c.Mask || len(g.Tasks) == 0 {
		t.Errorf("control group %q in the emulator: %v %+v (mask %s)", c.CtrlGroup, ok, g, c.Mask)
	}
	if mg, ok := es.Group(c.MonGroup); !ok || len(mg.Tasks) == 0 {
		t.Errorf("monitoring group %q: %v %+v", c.MonGroup, ok, mg)
	}

	// containerd restarts: the plugin sees the connection go, reconnects, resynchronizes
	ctrd.stop()
	a.until("the runtime reported down", func(st api.Status) bool { return !st.RuntimeConnected })
	ctrd.start()
	a.until("the plugin reconnected", func(st api.Status) bool { return st.RuntimeConnected && byID(st, prio) != nil })
	batch := ctrd.runPod("colo-nri-batch", image, map[string]string{core.LabelClass: "batch"})
	a.until("a container created after the restart discovered", func(st api.Status) bool {
		c := byID(st, batch)
		return c != nil && c.Monitoring != "none"
	})

	ctrd.crictl("stop", prio)
	a.until("stopped container released", func(st api.Status) bool { return byID(st, prio) == nil })
	if _, ok := e.State().Group(c.CtrlGroup); ok {
		t.Errorf("group %s of the stopped container still exists", c.CtrlGroup)
	}
	a.term()
	if after := comparable(e); !equalState(before, after) {
		t.Errorf("emulator after SIGTERM differs:\nbefore %+v\nafter  %+v", before, after)
	}
}
