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
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/agent"
	"colo/internal/testenv"
	"colo/runtime/docker"
)

// containerdBin returns the directory of containerd, ctr, the runc shim, runc and crictl.
func containerdBin(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("bash", "../scripts/build-containerd.sh").Output()
	var bin string
	if err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		bin = lines[len(lines)-1]
		for _, b := range []string{"containerd", "ctr", "containerd-shim-runc-v2", "runc", "crictl"} {
			if _, serr := os.Stat(filepath.Join(bin, b)); serr != nil {
				err = serr
			}
		}
	}
	testenv.Need(t, "containerd v2, runc and crictl (scripts/build-containerd.sh, run by scripts/setup.sh)", err)
	return bin
}

type containerd struct {
	t    *testing.T
	bin  string
	dir  string
	cmd  *exec.Cmd
	done chan error
}

func (c *containerd) sock() string    { return filepath.Join(c.dir, "containerd.sock") }
func (c *containerd) nriSock() string { return filepath.Join(c.dir, "nri.sock") }

func startContainerd(t *testing.T, bin string) *containerd {
	t.Helper()
	// a short directory: unix socket paths are limited to 108 bytes
	dir, err := os.MkdirTemp("", "colo-ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	c := &containerd{t: t, bin: bin, dir: dir}
	cfg := fmt.Sprintf(`version = 3
root = "%[1]s/root"
state = "%[1]s/state"
[grpc]
  address = "%[1]s/containerd.sock"
[ttrpc]
  address = "%[1]s/containerd.sock.ttrpc"
[plugins."io.containerd.nri.v1.nri"]
  disable = false
  socket_path = "%[1]s/nri.sock"
  plugin_path = "%[1]s/nri-plugins"
  plugin_config_path = "%[1]s/nri-conf"
[plugins."io.containerd.cri.v1.runtime"]
  # this VM refuses lowering oom_score_adj below the parent's
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      snapshotter = "native"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "%[2]s/runc"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "native"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "colo.local/pause:1"
[plugins."io.containerd.grpc.v1.cri"]
  disable_tcp_service = true
`, dir, bin)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c.start()
	t.Cleanup(func() {
		c.crictl("rmp", "-fa") // the pods, their containers and shims
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
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "crictl"), append([]string{"--runtime-endpoint", "unix://" + c.sock(), "--image-endpoint", "unix://" + c.sock(), "--timeout", "30s"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return strings.TrimSpace(string(out) + "\n" + stderr.String()), err
	}
	return strings.TrimSpace(string(out)), nil
}

func (c *containerd) crictl(args ...string) string {
	c.t.Helper()
	out, err := c.crictlErr(args...)
	if err != nil {
		c.t.Fatalf("crictl %v: %v\n%s", args, err, out)
	}
	return out
}

// importImage moves a Docker image into containerd's k8s.io namespace.
func (c *containerd) importImage(ref string) {
	c.t.Helper()
	tar := filepath.Join(c.dir, "image.tar")
	if out, err := exec.Command("docker", "save", "-o", tar, ref).CombinedOutput(); err != nil {
		c.t.Fatalf("docker save %s: %v\n%s", ref, err, out)
	}
	defer os.Remove(tar)
	out, err := exec.Command(filepath.Join(c.bin, "ctr"), "--address", c.sock(), "-n", "k8s.io", "images", "import", tar).CombinedOutput()
	if err != nil {
		c.t.Fatalf("ctr images import %s: %v\n%s", ref, err, out)
	}
}

// pauseImage builds the pod sandbox image: a static program that waits for a signal.
func pauseImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := "package main\n\nimport (\n\t\"os\"\n\t\"os/signal\"\n\t\"syscall\"\n)\n\nfunc main() {\n\tc := make(chan os.Signal, 1)\n\tsignal.Notify(c, syscall.SIGTERM, syscall.SIGINT)\n\t<-c\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "pause.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", "pause", "pause.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build pause: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "pause"))
	if err != nil {
		t.Fatal(err)
	}
	cli, err := docker.New(context.Background(), docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	tag := "colo.local/pause:1"
	if _, err := docker.BuildScratchImage(context.Background(), cli.Client(), tag, []docker.ImageFile{{Path: "/pause", Mode: 0o755, Data: data}}, []string{"/pause"}, nil); err != nil {
		t.Fatal(err)
	}
	return tag
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

func byID(st agent.Status, id string) *agent.ContainerStatus {
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
	a := startAgentArgs(t, bin, "--runtime", "nri", "--nri-socket", ctrd.nriSock(), "--policy", "static-cat",
		"--resctrl-root", root, "--state-dir", t.TempDir())
	a.until("NRI plugin synchronized", func(st agent.Status) bool { return st.RuntimeConnected })

	prio := ctrd.runPod("colo-nri-prio", image, map[string]string{agent.LabelClass: "priority"})
	st := a.until("the CRI container managed with its groups", func(st agent.Status) bool {
		c := byID(st, prio)
		return c != nil && c.CtrlGroup != "" && c.Monitoring == "container"
	})
	c := byID(st, prio)
	if c.Request.Class != agent.Priority {
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
	a.until("the runtime reported down", func(st agent.Status) bool { return !st.RuntimeConnected })
	ctrd.start()
	a.until("the plugin reconnected", func(st agent.Status) bool { return st.RuntimeConnected && byID(st, prio) != nil })
	batch := ctrd.runPod("colo-nri-batch", image, map[string]string{agent.LabelClass: "batch"})
	a.until("a container created after the restart discovered", func(st agent.Status) bool {
		c := byID(st, batch)
		return c != nil && c.Monitoring != "none"
	})

	ctrd.crictl("stop", prio)
	a.until("stopped container released", func(st agent.Status) bool { return byID(st, prio) == nil })
	if _, ok := e.State().Group(c.CtrlGroup); ok {
		t.Errorf("group %s of the stopped container still exists", c.CtrlGroup)
	}
	a.term()
	if after := comparable(e); !equalState(before, after) {
		t.Errorf("emulator after SIGTERM differs:\nbefore %+v\nafter  %+v", before, after)
	}
}
