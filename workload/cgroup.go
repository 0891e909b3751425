package workload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"colo/machine"
)

func nan() float64 { return math.NaN() }

// CgroupMode is how the host mounts cgroups.
type CgroupMode string

const (
	CgroupV1      CgroupMode = "v1"     // legacy: only v1 hierarchies
	CgroupHybrid  CgroupMode = "hybrid" // v1 controllers plus an empty v2 hierarchy (/sys/fs/cgroup/unified)
	CgroupV2      CgroupMode = "v2"     // unified
	CgroupUnknown CgroupMode = "unknown"
)

// MountPoint is one mounted cgroup hierarchy.
type MountPoint struct {
	Dir         string   // where it is mounted
	Root        string   // the cgroup this mount shows as its root (mountinfo field 4)
	Version     int      // 1 or 2
	Controllers []string // v1: from mount options (cpu, cpuacct, name=systemd, ...)
}

// Mounts lists the cgroup hierarchies of a mountinfo file (/proc/self/mountinfo).
func Mounts(mountinfo []byte) []MountPoint {
	var out []MountPoint
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		f := strings.Fields(sc.Text())
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+3 > len(f) || len(f) < 5 {
			continue
		}
		fstype := f[sep+1]
		switch fstype {
		case "cgroup2":
			out = append(out, MountPoint{Dir: unescapeMount(f[4]), Root: unescapeMount(f[3]), Version: 2})
		case "cgroup":
			var ctrls []string
			for _, o := range strings.Split(f[sep+3], ",") {
				switch o {
				case "rw", "ro", "relatime", "noatime", "nosuid", "nodev", "noexec", "clone_children", "xattr", "nsdelegate", "noprefix":
					continue
				}
				if strings.HasPrefix(o, "release_agent=") {
					continue
				}
				ctrls = append(ctrls, o)
			}
			out = append(out, MountPoint{Dir: unescapeMount(f[4]), Root: unescapeMount(f[3]), Version: 1, Controllers: ctrls})
		}
	}
	return out
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Mode classifies a set of cgroup mounts.
func Mode(mounts []MountPoint) CgroupMode {
	v1, v2 := false, false
	for _, m := range mounts {
		if m.Version == 2 {
			v2 = true
		} else {
			v1 = true
		}
	}
	switch {
	case v1 && v2:
		return CgroupHybrid
	case v1:
		return CgroupV1
	case v2:
		return CgroupV2
	}
	return CgroupUnknown
}

// HostMode reads /proc/self/mountinfo and classifies the host.
func HostMode() (CgroupMode, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return CgroupUnknown, err
	}
	return Mode(Mounts(b)), nil
}

// Cgroup holds the host directories of one workload's cgroup.
type Cgroup struct {
	// Version is 2 on a unified host, 1 otherwise (hybrid hosts have both kinds of Dirs).
	Version int
	// Dirs maps a v1 controller name ("cpu", "memory", "perf_event", "name=systemd") to
	// its directory; the key "" is the directory in the v2 (unified) hierarchy.
	Dirs map[string]string
	// Path is the cgroup path relative to the hierarchy root, e.g. /docker/<id> or
	// /system.slice/docker-<id>.scope, taken from the cpu (v1) or unified (v2) entry.
	Path string
}

// Dir returns the directory of a controller: a v1 directory when the controller is
// mounted as v1, else the unified directory ("" when neither exists).
func (c Cgroup) Dir(controller string) string {
	if d, ok := c.Dirs[controller]; ok {
		return d
	}
	return c.Dirs[""]
}

// PerfEventDir is the directory perf_event_open(PERF_FLAG_PID_CGROUP) needs: the v1
// perf_event hierarchy if mounted, else the v2 one (perf_event is implicit on v2).
func (c Cgroup) PerfEventDir() string { return c.Dir("perf_event") }

// Procs lists the PIDs (thread-group leaders) in the workload's cgroup (cgroup.procs of
// the unified directory or of a v1 hierarchy). It includes children the workload forked.
func (c Cgroup) Procs() ([]int, error) {
	var dirs []string
	if d, ok := c.Dirs[""]; ok {
		dirs = append(dirs, d)
	}
	for _, k := range []string{"pids", "cpu", "memory", "cpuset", "name=systemd"} {
		if d, ok := c.Dirs[k]; ok {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return nil, errors.New("cgroup has no directory: is the workload running?")
	}
	var lastErr error
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			lastErr = err
			continue
		}
		return parsePIDs(b), nil
	}
	return nil, fmt.Errorf("read cgroup.procs: %w (the workload has exited or its cgroup was removed)", lastErr)
}

// threadFiles are the files listing the cgroup's threads, in the order tried.
func (c Cgroup) threadFiles() ([]string, error) {
	var files []string
	for _, k := range []string{"cpu", "cpuacct", "memory", "pids", "cpuset", "name=systemd"} {
		if d, ok := c.Dirs[k]; ok {
			files = append(files, filepath.Join(d, "tasks"))
		}
	}
	if d, ok := c.Dirs[""]; ok {
		files = append(files, filepath.Join(d, "cgroup.threads"))
	}
	if len(files) == 0 {
		return nil, errors.New("cgroup has no directory: is the workload running?")
	}
	return files, nil
}

// Threads lists every thread ID in the cgroup (v1 "tasks", v2 "cgroup.threads"): what
// resctrl's tasks file needs, since it assigns threads, not processes.
func (c Cgroup) Threads() ([]int, error) {
	tl, err := OpenThreads(c)
	if err != nil {
		return nil, err
	}
	defer tl.Close()
	return tl.Read()
}

// ThreadList is a cgroup's thread list kept open: each Read re-reads it from offset 0
// (the kernel regenerates it), saving the path walk, open and close of Threads — for a
// caller that lists the same cgroup's threads every interval.
type ThreadList struct {
	f   *os.File
	buf []byte
}

// OpenThreads opens the cgroup's thread list (the first of Threads' files that opens).
func OpenThreads(c Cgroup) (*ThreadList, error) {
	files, err := c.threadFiles()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			lastErr = err
			continue
		}
		return &ThreadList{f: f, buf: make([]byte, 4096)}, nil
	}
	return nil, fmt.Errorf("open cgroup threads: %w (the workload has exited or its cgroup was removed)", lastErr)
}

// Read lists the cgroup's thread IDs, ascending, as Threads does.
func (t *ThreadList) Read() ([]int, error) {
	for {
		n, err := t.f.ReadAt(t.buf, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read cgroup threads: %w (the workload has exited or its cgroup was removed)", err)
		}
		if n == len(t.buf) && err == nil { // maybe more: read it whole
			t.buf = make([]byte, 2*len(t.buf))
			continue
		}
		return parsePIDs(t.buf[:n]), nil
	}
}

// Close releases the file.
func (t *ThreadList) Close() error { return t.f.Close() }

// parsePIDs reads the IDs of a cgroup's procs or threads file (one a line), ascending.
func parsePIDs(b []byte) []int {
	k := 0
	for _, c := range b {
		if c == '\n' {
			k++
		}
	}
	out := make([]int, 0, k+1)
	v, digits := 0, false
	for _, c := range b {
		if c >= '0' && c <= '9' {
			v, digits = 10*v+int(c-'0'), true
			continue
		}
		if digits {
			out = append(out, v)
		}
		v, digits = 0, false
	}
	if digits {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// CgroupAtPath resolves a cgroup path relative to the hierarchies' roots (the same path
// in every hierarchy, as container runtimes create it) onto this host's mounted
// hierarchies (/proc/self/mountinfo), as ResolveCgroup does for a process.
func CgroupAtPath(path string) (Cgroup, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Cgroup{}, err
	}
	mounts := Mounts(mi)
	var lines []string
	for i, m := range mounts {
		if m.Version == 2 {
			lines = append(lines, "0::"+path)
		} else {
			lines = append(lines, fmt.Sprintf("%d:%s:%s", i+1, strings.Join(m.Controllers, ","), path))
		}
	}
	return ResolveCgroup([]byte(strings.Join(lines, "\n")), mounts)
}

// ResolveCgroup maps the content of /proc/<pid>/cgroup onto the mounted hierarchies.
// It works for cgroupfs and systemd drivers alike because it reads where the kernel put
// the process instead of guessing the driver's naming scheme.
func ResolveCgroup(procCgroup []byte, mounts []MountPoint) (Cgroup, error) {
	cg := Cgroup{Dirs: map[string]string{}, Version: 1}
	if Mode(mounts) == CgroupV2 {
		cg.Version = 2
	}
	for _, line := range strings.Split(strings.TrimSpace(string(procCgroup)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		ctrls, path := parts[1], parts[2]
		if ctrls == "" { // v2 entry "0::/path"
			for _, m := range mounts {
				if m.Version == 2 {
					if d, ok := under(m, path); ok {
						cg.Dirs[""] = d
						if cg.Version == 2 || cg.Path == "" {
							cg.Path = path
						}
					}
				}
			}
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			for _, m := range mounts {
				if m.Version != 1 || !contains(m.Controllers, c) {
					continue
				}
				if d, ok := under(m, path); ok {
					cg.Dirs[c] = d
					if c == "cpu" {
						cg.Path = path
					}
				}
			}
		}
	}
	if len(cg.Dirs) == 0 {
		return cg, errors.New("no mounted cgroup hierarchy holds this process (is /sys/fs/cgroup mounted?)")
	}
	return cg, nil
}

func under(m MountPoint, path string) (string, bool) {
	root := m.Root
	if root == "/" {
		return filepath.Join(m.Dir, path), true
	}
	if path == root || strings.HasPrefix(path, root+"/") {
		return filepath.Join(m.Dir, strings.TrimPrefix(path, root)), true
	}
	return "", false
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// CgroupOfPID resolves the cgroup of a running process on this host.
func CgroupOfPID(pid int) (Cgroup, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return Cgroup{}, fmt.Errorf("pid %d: %w (the process has exited)", pid, err)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Cgroup{}, err
	}
	return ResolveCgroup(b, Mounts(mi))
}

// ExpectedCgroupPath is where a container runtime puts container id under the given
// cgroup driver and parent, following runc's naming: cgroupfs → <parent>/<id> (parent
// default /docker); systemd → <parent slice path>/docker-<id>.scope (parent default
// system.slice). Used to check ResolveCgroup's answer and to find a container's cgroup
// when its PID is not visible.
func ExpectedCgroupPath(driver, parent, id string) (string, error) {
	switch driver {
	case "cgroupfs":
		if parent == "" {
			parent = "/docker"
		}
		return filepath.Join("/", parent, id), nil
	case "systemd":
		if parent == "" {
			parent = "system.slice"
		}
		if !strings.HasSuffix(parent, ".slice") {
			return "", fmt.Errorf("systemd cgroup parent %q must name a slice (e.g. system.slice)", parent)
		}
		return filepath.Join(slicePath(parent), "docker-"+id+".scope"), nil
	}
	return "", fmt.Errorf("unknown cgroup driver %q (want cgroupfs or systemd)", driver)
}

// slicePath expands a systemd slice name: a-b-c.slice → /a.slice/a-b.slice/a-b-c.slice.
func slicePath(slice string) string {
	name := strings.TrimSuffix(slice, ".slice")
	if name == "-" || name == "" {
		return "/"
	}
	parts := strings.Split(name, "-")
	p := "/"
	for i := range parts {
		p = filepath.Join(p, strings.Join(parts[:i+1], "-")+".slice")
	}
	return p
}

// OnlineCPUs reads /sys/devices/system/cpu/online.
func OnlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	return machine.ParseCPUList(strings.TrimSpace(string(b)))
}

// CPUTime reads a cgroup's cumulative CPU time through a file descriptor kept open
// (one pread per sample: cheap enough for 50 Hz × 30 containers).
type CPUTime struct {
	f   *os.File
	v2  bool
	buf []byte
}

// OpenCPUTime opens cpuacct.usage (v1) or cpu.stat (v2) of the cgroup.
func OpenCPUTime(cg Cgroup) (*CPUTime, error) {
	if d, ok := cg.Dirs["cpuacct"]; ok {
		f, err := os.Open(filepath.Join(d, "cpuacct.usage"))
		if err != nil {
			return nil, fmt.Errorf("cgroup CPU time: %w (has the workload exited?)", err)
		}
		return &CPUTime{f: f, buf: make([]byte, 64)}, nil
	}
	if d, ok := cg.Dirs[""]; ok {
		f, err := os.Open(filepath.Join(d, "cpu.stat"))
		if err != nil {
			return nil, fmt.Errorf("cgroup CPU time: %w (has the workload exited?)", err)
		}
		return &CPUTime{f: f, v2: true, buf: make([]byte, 512)}, nil
	}
	return nil, errors.New("cgroup CPU time: no cpuacct (v1) or unified (v2) directory")
}

// Read returns the cumulative CPU time of every task in the cgroup.
func (c *CPUTime) Read() (uint64, error) {
	n, err := c.f.ReadAt(c.buf, 0)
	if n == 0 && err != nil {
		return 0, fmt.Errorf("cgroup CPU time: %w", err)
	}
	b := c.buf[:n]
	if !c.v2 {
		return strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	}
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(l, []byte("usage_usec ")); ok {
			us, err := strconv.ParseUint(string(v), 10, 64)
			return us * 1000, err
		}
	}
	return 0, errors.New("cgroup CPU time: no usage_usec in cpu.stat")
}

// Close releases the file.
func (c *CPUTime) Close() error { return c.f.Close() }
