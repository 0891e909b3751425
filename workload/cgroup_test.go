package workload

import (
	"math"
	"os"
	goruntime "runtime"
	"slices"
	"syscall"
	"testing"
	"time"
)

// Captured on this development host (Debian 12, docker.io 20.10, cgroupfs driver, hybrid).
const hybridMountinfo = `25 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
40 25 0:35 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
41 40 0:36 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
42 40 0:37 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
43 40 0:38 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
44 40 0:39 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
45 40 0:40 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
46 40 0:41 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
47 40 0:42 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const hybridProcCgroup = `9:name=systemd:/docker/a2f0e8dfed7d
8:pids:/docker/a2f0e8dfed7d
4:memory:/docker/a2f0e8dfed7d
3:cpuset:/docker/a2f0e8dfed7d
2:cpuacct:/docker/a2f0e8dfed7d
1:cpu:/docker/a2f0e8dfed7d
0::/docker/a2f0e8dfed7d
`

// A unified host with the systemd driver (Debian 12 default install, Docker 24).
const v2Mountinfo = `30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
const v2ProcCgroup = "0::/system.slice/docker-4f1c.scope\n"

// A v1 host whose cpu,cpuacct hierarchy is co-mounted and has a perf_event hierarchy.
const v1Mountinfo = `41 40 0:36 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
42 40 0:37 / /sys/fs/cgroup/perf_event rw,relatime - cgroup cgroup rw,perf_event
43 40 0:38 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
`
const v1ProcCgroup = `5:perf_event:/system.slice/docker-77.scope
4:memory:/system.slice/docker-77.scope
3:cpu,cpuacct:/system.slice/docker-77.scope
`

func TestModes(t *testing.T) {
	for _, c := range []struct {
		mi   string
		want CgroupMode
	}{{hybridMountinfo, CgroupHybrid}, {v2Mountinfo, CgroupV2}, {v1Mountinfo, CgroupV1}, {"", CgroupUnknown}} {
		if got := Mode(Mounts([]byte(c.mi))); got != c.want {
			t.Errorf("mode = %s, want %s", got, c.want)
		}
	}
	m := Mounts([]byte(hybridMountinfo))
	if len(m) != 7 || m[5].Controllers[0] != "name=systemd" || m[6].Version != 2 {
		t.Fatalf("mounts = %+v", m)
	}
}

// resolve is ResolveCgroup of a /proc/PID/cgroup text on a mountinfo text, failing the
// test on an error.
func resolve(t *testing.T, procCgroup, mountinfo string) Cgroup {
	t.Helper()
	cg, err := ResolveCgroup([]byte(procCgroup), Mounts([]byte(mountinfo)))
	if err != nil {
		t.Fatal(err)
	}
	return cg
}

// wantDriverPath requires cg's path to be the one the cgroup driver gives container id.
func wantDriverPath(t *testing.T, cg Cgroup, driver, id string) {
	t.Helper()
	if want, _ := ExpectedCgroupPath(driver, "", id); cg.Path != want {
		t.Errorf("path %s, %s driver expects %s", cg.Path, driver, want)
	}
}

func TestResolveHybridCgroupfs(t *testing.T) {
	cg := resolve(t, hybridProcCgroup, hybridMountinfo)
	if cg.Version != 1 || cg.Path != "/docker/a2f0e8dfed7d" {
		t.Fatalf("cg = %+v", cg)
	}
	if got := cg.Dir("cpuacct"); got != "/sys/fs/cgroup/cpuacct/docker/a2f0e8dfed7d" {
		t.Errorf("cpuacct dir %s", got)
	}
	// perf_event is not mounted as v1 here, so the unified directory carries it.
	if got := cg.PerfEventDir(); got != "/sys/fs/cgroup/unified/docker/a2f0e8dfed7d" {
		t.Errorf("perf dir %s", got)
	}
	wantDriverPath(t, cg, "cgroupfs", "a2f0e8dfed7d")
}

func TestResolveV2Systemd(t *testing.T) {
	cg := resolve(t, v2ProcCgroup, v2Mountinfo)
	if cg.Version != 2 || cg.PerfEventDir() != "/sys/fs/cgroup/system.slice/docker-4f1c.scope" || cg.Dir("memory") != cg.PerfEventDir() {
		t.Fatalf("cg = %+v", cg)
	}
	wantDriverPath(t, cg, "systemd", "4f1c")
}

func TestResolveV1Systemd(t *testing.T) {
	cg := resolve(t, v1ProcCgroup, v1Mountinfo)
	if cg.PerfEventDir() != "/sys/fs/cgroup/perf_event/system.slice/docker-77.scope" ||
		cg.Dir("cpuacct") != "/sys/fs/cgroup/cpu,cpuacct/system.slice/docker-77.scope" || cg.Dir("pids") != "" {
		t.Fatalf("cg = %+v", cg)
	}
}

func TestResolveNestedMountRoot(t *testing.T) {
	// Inside a container the hierarchy root is the container's own cgroup.
	mi := "47 40 0:42 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
	cg, err := ResolveCgroup([]byte("0::/docker/abc/child\n"), Mounts([]byte(mi)))
	if err != nil || cg.Dirs[""] != "/sys/fs/cgroup/child" {
		t.Fatalf("cg=%+v err=%v", cg, err)
	}
	if _, err := ResolveCgroup([]byte("0::/x\n"), nil); err == nil {
		t.Fatal("no mounts must fail")
	}
}

func TestExpectedCgroupPath(t *testing.T) {
	for _, c := range []struct{ driver, parent, want string }{
		{"cgroupfs", "", "/docker/id1"},
		{"cgroupfs", "/colo", "/colo/id1"},
		{"systemd", "", "/system.slice/docker-id1.scope"},
		{"systemd", "colo-bench.slice", "/colo.slice/colo-bench.slice/docker-id1.scope"},
	} {
		got, err := ExpectedCgroupPath(c.driver, c.parent, "id1")
		if err != nil || got != c.want {
			t.Errorf("%s %s: %s %v, want %s", c.driver, c.parent, got, err, c.want)
		}
	}
	if _, err := ExpectedCgroupPath("systemd", "/docker", "x"); err == nil {
		t.Error("systemd parent without .slice must fail")
	}
	if _, err := ExpectedCgroupPath("lxc", "", "x"); err == nil {
		t.Error("unknown driver must fail")
	}
}

func TestCPUCores(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := Stats{Time: t0, CPUTotalNs: 1e9, CPUAvailable: true}
	b := Stats{Time: t0.Add(2 * time.Second), CPUTotalNs: 4e9, CPUAvailable: true}
	if got := CPUCores(a, b); got != 1.5 {
		t.Errorf("cores %v", got)
	}
	if !math.IsNaN(CPUCores(b, a)) {
		t.Error("reversed samples must be NaN")
	}
}

func TestSpecValidate(t *testing.T) {
	ok := Spec{Name: "a-1", Cpuset: "0-1", Mounts: []Mount{{Source: "/tmp", Target: "/data"}}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Spec{{Name: ""}, {Name: "a b"}, {Name: "a", Cpuset: "x"}, {Name: "a", MemoryBytes: -1},
		{Name: "a", Mounts: []Mount{{Source: "rel", Target: "/x"}}}} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}

// selfCgroup is this test process's cgroup.
func selfCgroup(tb testing.TB) Cgroup {
	tb.Helper()
	cg, err := CgroupOfPID(os.Getpid())
	if err != nil {
		tb.Fatal(err)
	}
	return cg
}

func TestCgroupOfSelf(t *testing.T) {
	cg := selfCgroup(t)
	procs, err := cg.Procs()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range procs {
		found = found || p == os.Getpid()
	}
	if !found {
		t.Fatalf("own pid %d not in %v (cgroup %+v)", os.Getpid(), procs, cg)
	}
}

// A ThreadList kept open sees threads created after it was opened (each Read re-reads
// the kernel's list) and lists what Threads lists.
func TestThreadListRereads(t *testing.T) {
	cg := selfCgroup(t)
	tl, err := OpenThreads(cg)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	first, err := tl.Read()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(first, syscall.Gettid()) && !slices.Contains(first, os.Getpid()) {
		t.Fatalf("none of this process's threads in %v", first)
	}
	tid, release := make(chan int), make(chan struct{})
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread ends with the goroutine
		tid <- syscall.Gettid()
		<-release
	}()
	defer close(release)
	id := <-tid
	again, err := tl.Read()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(again, id) {
		t.Fatalf("thread %d, alive, missing from the re-read list %v", id, again)
	}
	if !slices.IsSorted(again) {
		t.Fatalf("not ascending: %v", again)
	}
	fresh, err := cg.Threads()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(fresh, id) {
		t.Fatalf("Threads misses thread %d: %v", id, fresh)
	}
}
