package profiler

import (
	"colo/agent/core"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Freeze stops every task of the container's cgroup (cgroup v2 cgroup.freeze, v1
// freezer.state) until resume is called; it waits until the kernel reports the cgroup
// frozen.
func Freeze(c core.Container) (func() error, error) {
	if dir := c.CgroupDirs[""]; dir != "" && c.CgroupV == 2 {
		f := filepath.Join(dir, "cgroup.freeze")
		if err := os.WriteFile(f, []byte("1"), 0); err != nil {
			return nil, err
		}
		resume := func() error { return os.WriteFile(f, []byte("0"), 0) }
		if err := waitFor(filepath.Join(dir, "cgroup.events"), "frozen 1"); err != nil {
			_ = resume()
			return nil, err
		}
		return resume, nil
	}
	if dir := c.CgroupDirs["freezer"]; dir != "" {
		f := filepath.Join(dir, "freezer.state")
		if err := os.WriteFile(f, []byte("FROZEN"), 0); err != nil {
			return nil, err
		}
		resume := func() error { return os.WriteFile(f, []byte("THAWED"), 0) }
		if err := waitFor(f, "FROZEN"); err != nil {
			_ = resume()
			return nil, err
		}
		return resume, nil
	}
	return nil, errors.New("no cgroup freezer for the container")
}

// waitFor polls a cgroup file until it contains want (the kernel freezes asynchronously).
func waitFor(file, want string) error {
	for range 2000 {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), want) {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.New(file + ": not " + want + " after 10 s")
}
