package workload

import (
	"os"
	"slices"
	"testing"
)

// This process's threads include its main thread (whose ID is the PID); a process that
// does not exist and a cgroup directory without cgroup.threads are errors.
func TestProcessThreads(t *testing.T) {
	ts, err := ProcessThreads(os.Getpid())
	if err != nil || !slices.Contains(ts, os.Getpid()) || !slices.IsSorted(ts) {
		t.Fatalf("threads %v %v", ts, err)
	}
	if _, err := ProcessThreads(0); err == nil {
		t.Fatal("PID 0 accepted")
	}
	if _, err := CgroupDirThreads(t.TempDir()); err == nil {
		t.Fatal("a directory without cgroup.threads gave threads")
	}
}
