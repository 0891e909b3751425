package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// ProcessThreads lists the thread IDs of process pid (/proc/PID/task), ascending: what
// resctrl's tasks file needs for a process, since it assigns threads.
func ProcessThreads(pid int) ([]int, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("%d is not a process ID", pid)
	}
	es, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	var out []int
	for _, e := range es {
		if t, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, t)
		}
	}
	sort.Ints(out)
	return out, nil
}

// CgroupDirThreads lists the threads of the cgroup v2 directory dir (its cgroup.threads);
// a cgroup without threads is an error (nothing to place).
func CgroupDirThreads(dir string) ([]int, error) {
	out, err := Cgroup{Version: 2, Dirs: map[string]string{"": dir}}.Threads()
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%s has no threads", dir)
	}
	return out, err
}
