package docker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"colo/workload"
	"colo/workload/docker"
	"colo/workload/docker/dockertest"
)

type env struct {
	r     *docker.Runtime
	image string
	run   string
}

func setup(t *testing.T, network bool) env {
	t.Helper()
	run := dockertest.Name(t, "run")
	opts := docker.Options{Labels: map[string]string{workload.LabelRun: run}}
	if network {
		opts.Network = dockertest.Name(t, "net")
	}
	r := dockertest.Require(t, opts)
	if network {
		t.Cleanup(func() { r.RemoveNetwork(context.Background(), opts.Network) })
	}
	img := dockertest.BuildProgImage(t, r, "testdata/prog")
	return env{r: r, image: img, run: run}
}

func (e env) create(t *testing.T, s workload.Spec) string {
	t.Helper()
	ctx := context.Background()
	if s.Image == "" {
		s.Image = e.image
	}
	id, err := e.r.Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.r.Remove(context.Background(), id) })
	return id
}

func TestLifecycleCgroupStats(t *testing.T) {
	e := setup(t, false)
	ctx := context.Background()
	vol := t.TempDir()
	name := dockertest.Name(t, "life")
	id := e.create(t, workload.Spec{
		Name: name, Command: []string{"write", "/data/out.txt"}, Env: map[string]string{"MSG": "hello colo"},
		Cpuset: "0", MemoryBytes: 64 << 20, Mounts: []workload.Mount{{Source: vol, Target: "/data"}},
		Labels: map[string]string{workload.LabelJob: "writer"},
	})
	info, err := e.r.Inspect(ctx, id)
	if err != nil || info.State != workload.Created || info.PID != 0 {
		t.Fatalf("created: %+v %v", info, err)
	}
	if err := e.r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	// The env and the volume reached the container.
	// (an event: the file has the whole text; a loaded host only delays it)
	var got []byte
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if got, err = os.ReadFile(filepath.Join(vol, "out.txt")); err == nil && string(got) == "hello colo" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if string(got) != "hello colo" {
		t.Fatalf("volume file = %q, %v", got, err)
	}
	info, err = e.r.Inspect(ctx, id)
	if err != nil || info.State != workload.Running || info.PID <= 0 || info.Name != name || info.Cpuset != "0" {
		t.Fatalf("running: %+v %v", info, err)
	}
	if !strings.Contains(info.Cgroup.Path, id) {
		t.Errorf("cgroup path %q does not name the container", info.Cgroup.Path)
	}
	if want, _ := workload.ExpectedCgroupPath(e.r.CgroupDriver(), "", id); info.Cgroup.Path != want {
		t.Errorf("cgroup path %q, driver %s expects %q", info.Cgroup.Path, e.r.CgroupDriver(), want)
	}
	if _, err := os.Stat(info.Cgroup.PerfEventDir()); err != nil {
		t.Errorf("perf cgroup dir: %v", err)
	}
	procs, err := info.Cgroup.Procs()
	if err != nil || len(procs) != 1 || procs[0] != info.PID {
		t.Errorf("procs %v %v, root pid %d", procs, err, info.PID)
	}
	st, err := e.r.Stats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.MemoryLimit != 64<<20 || st.Cpuset != "0" || !st.CPUAvailable || st.CPUTotalNs == 0 || st.PIDs < 1 {
		t.Errorf("stats %+v", st)
	}
	// Re-pinning reaches the kernel's cpuset of the container.
	if cpus, _ := workload.OnlineCPUs(); len(cpus) > 1 {
		if err := e.r.SetCpuset(ctx, id, "1"); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(filepath.Join(info.Cgroup.Dir("cpuset"), "cpuset.cpus"))
		if strings.TrimSpace(string(got)) != "1" {
			t.Errorf("cpuset after SetCpuset: %q", got)
		}
	}
	list, err := e.r.List(ctx, map[string]string{workload.LabelRun: e.run, workload.LabelJob: "writer"})
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("list %+v %v", list, err)
	}
	if err := e.r.Stop(ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	ex, err := e.r.Wait(ctx, id)
	if err != nil || ex.Code == 0 {
		t.Errorf("stopped sleeper: %v %v (want a non-zero code)", ex, err)
	}
	if err := e.r.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := e.r.Remove(ctx, id); !errors.Is(err, workload.ErrNotFound) {
		t.Errorf("second remove: %v, want ErrNotFound", err)
	}
	if list, _ := e.r.List(ctx, map[string]string{workload.LabelRun: e.run}); len(list) != 0 {
		t.Errorf("left behind: %+v", list)
	}
}

func TestExitCodesAndImmediateExit(t *testing.T) {
	e := setup(t, false)
	ctx := context.Background()
	id := e.create(t, workload.Spec{Name: dockertest.Name(t, "exit3"), Command: []string{"exit", "3"}})
	if err := e.r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	ex, err := e.r.Wait(ctx, id)
	if err != nil || ex.Code != 3 || !ex.Failed() {
		t.Fatalf("exit %v %v", ex, err)
	}
	info, err := e.r.Inspect(ctx, id)
	if err != nil || info.State != workload.Exited || info.Exit.Code != 3 || info.PID != 0 {
		t.Fatalf("inspect after exit: %+v %v", info, err)
	}
	if logs, err := e.r.Logs(ctx, id, 5); err != nil || !strings.Contains(logs, "exiting with 3") {
		t.Errorf("logs %q %v", logs, err)
	}
	// A clean exit is not a failure.
	id0 := e.create(t, workload.Spec{Name: dockertest.Name(t, "exit0"), Command: []string{"exit", "0"}})
	e.r.Start(ctx, id0)
	if ex, err := e.r.Wait(ctx, id0); err != nil || ex.Failed() {
		t.Fatalf("exit 0: %v %v", ex, err)
	}
}

func TestNetworkByNameAndPrivileged(t *testing.T) {
	e := setup(t, true)
	ctx := context.Background()
	server := dockertest.Name(t, "srv")
	sid := e.create(t, workload.Spec{Name: server, Command: []string{"serve"}})
	// Privileged containers cannot start on this VM (runc: "unable to apply caps"), so the
	// flag is checked on a created container.
	pid := e.create(t, workload.Spec{Name: dockertest.Name(t, "priv"), Command: []string{"exit", "0"}, Privileged: true})
	cid := e.create(t, workload.Spec{Name: dockertest.Name(t, "cli"), Command: []string{"dial", server + ":8080"}})
	if err := e.r.Start(ctx, sid); err != nil {
		t.Fatal(err)
	}
	if err := e.r.Start(ctx, cid); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 120*time.Second) // a bound, not a speed
	defer cancel()
	if ex, err := e.r.Wait(wctx, cid); err != nil || ex.Code != 0 {
		t.Fatalf("client could not reach %s by name: %v %v", server, ex, err)
	}
	for _, c := range []struct {
		id   string
		want bool
	}{{pid, true}, {sid, false}} {
		ci, err := e.r.Client().ContainerInspect(ctx, c.id)
		if err != nil || ci.HostConfig.Privileged != c.want {
			t.Errorf("privileged = %v, want %v (%v)", ci.HostConfig.Privileged, c.want, err)
		}
	}
}

func TestMissingImage(t *testing.T) {
	r := dockertest.Require(t, docker.Options{})
	_, err := r.Create(context.Background(), workload.Spec{Name: dockertest.Name(t, "noimg"), Image: "colo-missing-image:nope"})
	if !errors.Is(err, workload.ErrNotFound) || !strings.Contains(err.Error(), "colo image build --tag colo-missing-image:nope") {
		t.Fatalf("err = %v", err)
	}
}

func TestDockerUnreachable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	_, err := docker.New(context.Background(), docker.Options{PingTimeout: time.Second})
	if !errors.Is(err, workload.ErrUnavailable) || !strings.Contains(err.Error(), "start dockerd") {
		t.Fatalf("err = %v", err)
	}
}

// Spec.CgroupParent puts the container under the given parent cgroup (the sensitivity
// probe keeps target and neighbour under separate parents).
func TestCgroupParent(t *testing.T) {
	e := setup(t, false)
	ctx := context.Background()
	parent := "/colotest-parent" // one fixed name: the empty parent stays behind, as the probe's do
	if e.r.CgroupDriver() == "systemd" {
		parent = "colotest-parent.slice"
	}
	id := e.create(t, workload.Spec{Name: dockertest.Name(t, "child"), Command: []string{"sleep", "60s"}, CgroupParent: parent})
	if err := e.r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	info, err := e.r.Inspect(ctx, id)
	if err != nil || !strings.Contains(info.Cgroup.Path, "colotest-parent") {
		t.Fatalf("cgroup %q under parent %q (%v)", info.Cgroup.Path, parent, err)
	}
}
