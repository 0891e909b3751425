package process_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"colo/workload"
	"colo/workload/process"
)

func TestMain(m *testing.M) {
	switch os.Getenv("COLO_PROC_TEST") {
	case "spin":
		x := 0
		for i := 0; ; i++ {
			x += i
			if x == -3 {
				fmt.Println(x)
			}
		}
	case "exit3":
		fmt.Println("bye")
		os.Exit(3)
	case "sleep":
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

func newRuntime(t *testing.T, stateDir string) (*process.Runtime, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the process runtime needs root to create cgroups")
	}
	parent := fmt.Sprintf("colo-proctest-%d", os.Getpid())
	r, err := process.New(process.Options{Parent: parent, StateDir: stateDir, Labels: map[string]string{workload.LabelRun: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mi, _ := os.ReadFile("/proc/self/mountinfo")
		for _, m := range workload.Mounts(mi) {
			os.Remove(filepath.Join(m.Dir, parent))
		}
	})
	return r, parent
}

func spec(name, mode string) workload.Spec {
	return workload.Spec{Name: name, Command: []string{os.Args[0]}, Env: map[string]string{"COLO_PROC_TEST": mode}}
}

// start creates and starts a process of s, removed at the end of the test.
func start(t *testing.T, r *process.Runtime, s workload.Spec) string {
	t.Helper()
	ctx := context.Background()
	id, err := r.Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Remove(context.Background(), id) })
	if err := r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestProcessLifecycle(t *testing.T) {
	r, parent := newRuntime(t, t.TempDir())
	ctx := context.Background()
	s := spec("spinner", "spin")
	s.Cpuset, s.MemoryBytes = "0", 64<<20
	id := start(t, r, s)
	info, err := r.Inspect(ctx, id)
	if err != nil || info.State != workload.Running || info.PID <= 0 {
		t.Fatalf("%+v %v", info, err)
	}
	// The kernel agrees the process is in its own cgroup.
	cg, err := workload.CgroupOfPID(info.PID)
	if err != nil || cg.Path != "/"+parent+"/spinner" {
		t.Fatalf("kernel cgroup %+v %v", cg, err)
	}
	if got, _ := os.ReadFile(filepath.Join(info.Cgroup.Dir("cpuset"), "cpuset.cpus")); strings.TrimSpace(string(got)) != "0" {
		t.Errorf("cpuset.cpus = %q", got)
	}
	procs, err := info.Cgroup.Procs()
	if err != nil || len(procs) != 1 || procs[0] != info.PID {
		t.Errorf("procs %v %v", procs, err)
	}
	if _, err := os.Stat(info.Cgroup.PerfEventDir()); err != nil {
		t.Errorf("perf_event dir: %v", err)
	}
	s0, err := r.Stats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// the spinner's CPU time grows (an event: a loaded host only delays it), and only on
	// CPU 0, where it is pinned: the kernel's per-CPU accounting, not a rate over a wall
	// clock window (CPUCores over the ~20 ms between two reads gave 1.95 cores once under
	// -race and stress-ng: the reads and their timestamps are not atomic)
	s1 := s0
	for deadline := time.Now().Add(60 * time.Second); s1.CPUTotalNs <= s0.CPUTotalNs; {
		if time.Now().After(deadline) {
			t.Fatalf("the spinner used no CPU in 60 s (stats %+v)", s1)
		}
		time.Sleep(20 * time.Millisecond)
		s1, _ = r.Stats(ctx, id)
	}
	if c := workload.CPUCores(s0, s1); !(c > 0) {
		t.Errorf("cores used %v (stats %+v)", c, s1)
	}
	if s1.PerCPUPresent && len(s0.PerCPUNs) > 0 && len(s1.PerCPUNs) > 0 {
		for cpu := 1; cpu < len(s1.PerCPUNs) && cpu < len(s0.PerCPUNs); cpu++ {
			if d := s1.PerCPUNs[cpu] - s0.PerCPUNs[cpu]; d != 0 {
				t.Errorf("the spinner pinned to CPU 0 ran %d ns on CPU %d (stats %+v then %+v)", d, cpu, s0, s1)
			}
		}
		if s1.PerCPUNs[0] <= s0.PerCPUNs[0] {
			t.Errorf("no CPU time on CPU 0 (stats %+v then %+v)", s0, s1)
		}
	}
	if s1.MemoryLimit != 64<<20 || !s1.MemAvailable || s1.NetAvailable {
		t.Errorf("stats %+v", s1)
	}
	if err := r.Stop(ctx, id, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	ex, err := r.Wait(ctx, id)
	if err != nil || ex.Code == 0 {
		t.Errorf("stopped spinner exit %v %v", ex, err)
	}
	if err := r.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, d := range info.Cgroup.Dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s left behind", d)
		}
	}
	if _, err := r.Inspect(ctx, id); !errors.Is(err, workload.ErrNotFound) {
		t.Errorf("inspect after remove: %v", err)
	}
}

func TestProcessExitCodeAndBadSpecs(t *testing.T) {
	r, _ := newRuntime(t, t.TempDir())
	ctx := context.Background()
	id, err := r.Create(ctx, spec("quitter", "exit3"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Remove(context.Background(), id) })
	r.Start(ctx, id)
	ex, err := r.Wait(ctx, id)
	if err != nil || ex.Code != 3 || !ex.Failed() {
		t.Fatalf("exit %v %v", ex, err)
	}
	if out, _ := r.Output(id); !strings.Contains(out, "bye") {
		t.Errorf("output %q", out)
	}
	for _, s := range []workload.Spec{
		{Name: "img", Image: "colo:latest", Command: []string{"true"}},
		{Name: "vol", Command: []string{"true"}, Mounts: []workload.Mount{{Source: "/tmp", Target: "/x"}}},
		{Name: "nocmd"},
		{Name: "missing", Command: []string{"/nonexistent/colo-workload"}},
		{Name: "quitter", Command: []string{os.Args[0]}}, // duplicate name
	} {
		if _, err := r.Create(ctx, s); err == nil {
			t.Errorf("%s accepted", s.Name)
		}
	}
}

// A colo that crashed leaves running workloads; the next one lists and removes them.
func TestProcessReconcileAfterCrash(t *testing.T) {
	state := t.TempDir()
	r1, _ := newRuntime(t, state)
	ctx := context.Background()
	id, err := r1.Create(ctx, spec("orphan", "sleep"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r1.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	info, _ := r1.Inspect(ctx, id)
	t.Cleanup(func() { r1.Remove(context.Background(), id) })

	r2, _ := newRuntime(t, state) // "restarted colo": knows nothing in memory
	list, err := r2.List(ctx, map[string]string{workload.LabelRun: "t"})
	if err != nil || len(list) != 1 || list[0].Name != "orphan" || list[0].State != workload.Running || list[0].PID != info.PID {
		t.Fatalf("list %+v %v", list, err)
	}
	if err := r2.Remove(ctx, "orphan"); err != nil {
		t.Fatal(err)
	}
	if list, _ := r2.List(ctx, nil); len(list) != 0 {
		t.Errorf("still listed: %+v", list)
	}
	if _, err := r1.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
}
