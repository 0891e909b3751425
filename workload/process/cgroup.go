// The cgroup side of the process runtime: the parent cgroup and per-workload
// directories (v1 and v2), limits, cpusets, CPU quotas, memory events and statistics.

package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"colo/machine"
	"colo/workload"
)

func hasAny(xs, ys []string) bool {
	for _, x := range xs {
		for _, y := range ys {
			if x == y {
				return true
			}
		}
	}
	return false
}

func (r *Runtime) prepareParent(m workload.MountPoint) error {
	dir := filepath.Join(m.Dir, r.opts.Parent)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if m.Version == 1 && hasAny(m.Controllers, []string{"cpuset"}) {
		// A new v1 cpuset is empty; inherit the root's CPUs and memory nodes.
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			cur, _ := os.ReadFile(filepath.Join(dir, f))
			if strings.TrimSpace(string(cur)) != "" {
				continue
			}
			v, err := os.ReadFile(filepath.Join(m.Dir, f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
				return err
			}
		}
	}
	if m.Version == 2 && r.mode == workload.CgroupV2 {
		// Delegate the controllers colo sets to the workload cgroups.
		for _, d := range []string{m.Dir, dir} {
			avail, _ := os.ReadFile(filepath.Join(d, "cgroup.controllers"))
			var want []string
			for _, c := range []string{"cpuset", "cpu", "memory", "pids", "io"} {
				if strings.Contains(" "+strings.TrimSpace(string(avail))+" ", " "+c+" ") {
					want = append(want, "+"+c)
				}
			}
			if len(want) > 0 {
				if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0o644); err != nil {
					// e.g. EBUSY inside a container whose cgroup root holds processes:
					// workloads still get their own cgroup (membership, CPU time, perf);
					// asking for a cpuset or memory limit then fails with this cause.
					r.ctrlErr = fmt.Errorf("enable controllers %v in %s: %w", want, d, err)
				}
			}
		}
	}
	return nil
}

func (r *Runtime) dirsFor(name string) map[string]string {
	dirs := map[string]string{}
	for _, m := range r.mounts {
		d := filepath.Join(m.Dir, r.opts.Parent, name)
		if m.Version == 2 {
			dirs[""] = d
			continue
		}
		for _, c := range m.Controllers {
			if contains(v1Controllers, c) {
				dirs[c] = d
			}
		}
	}
	return dirs
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func uniqueDirs(dirs map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

func versionOf(m workload.CgroupMode) int {
	if m == workload.CgroupV2 {
		return 2
	}
	return 1
}

func (r *Runtime) applyLimits(s workload.Spec, dirs map[string]string) error {
	write := func(dir, file, val string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(val), 0o644); err != nil {
			if r.ctrlErr != nil && errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("set %s=%s: the controller is not available to colo's cgroups (%v); run without this limit or on a host where colo may delegate controllers", file, val, r.ctrlErr)
			}
			return fmt.Errorf("set %s=%s: %w", file, val, err)
		}
		return nil
	}
	if d, ok := dirs["cpuset"]; ok { // v1: both files must be set before tasks join
		cpus := s.Cpuset
		if cpus == "" {
			b, _ := os.ReadFile(filepath.Join(filepath.Dir(d), "cpuset.cpus"))
			cpus = strings.TrimSpace(string(b))
		}
		mems, _ := os.ReadFile(filepath.Join(filepath.Dir(d), "cpuset.mems"))
		if err := write(d, "cpuset.mems", strings.TrimSpace(string(mems))); err != nil {
			return err
		}
		if err := write(d, "cpuset.cpus", cpus); err != nil {
			return err
		}
	} else if d, ok := dirs[""]; ok && s.Cpuset != "" && r.mode == workload.CgroupV2 {
		if err := write(d, "cpuset.cpus", s.Cpuset); err != nil {
			return err
		}
	}
	if s.MemoryBytes > 0 {
		if d, ok := dirs["memory"]; ok {
			if err := write(d, "memory.limit_in_bytes", strconv.FormatInt(s.MemoryBytes, 10)); err != nil {
				return err
			}
		} else if d, ok := dirs[""]; ok && r.mode == workload.CgroupV2 {
			if err := write(d, "memory.max", strconv.FormatInt(s.MemoryBytes, 10)); err != nil {
				return err
			}
		}
	}
	return nil
}

// memoryEvents returns the OOM kill count of the cgroup (v1 memory.oom_control
// oom_kill, v2 memory.events oom_kill).
func memoryEvents(cg workload.Cgroup) int {
	for _, f := range []string{filepath.Join(cg.Dir("memory"), "memory.oom_control"), filepath.Join(cg.Dir("memory"), "memory.events")} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if v, ok := kv(b)["oom_kill"]; ok {
			return int(v)
		}
	}
	return 0
}

func kv(b []byte) map[string]uint64 {
	out := map[string]uint64{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 {
			if v, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				out[f[0]] = v
			}
		}
	}
	return out
}

func (r *Runtime) removeDirs(ctx context.Context, id string, dirs map[string]string) error {
	cg := workload.Cgroup{Dirs: dirs}
	for i := 0; ; i++ {
		procs, _ := cg.Procs()
		if len(procs) == 0 {
			break
		}
		signalAll(cg, syscall.SIGKILL)
		if i > 100 {
			return fmt.Errorf("remove workload %s: processes %v survive SIGKILL", id, procs)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := removeWhenFree(ctx, uniqueDirs(dirs), os.Remove, busyTries, busyWait); err != nil {
		return fmt.Errorf("remove workload %s: %w", id, err)
	}
	os.Remove(r.statePath(id))
	return nil
}

// A killed process leaves cgroup.procs as soon as it is exiting with no live thread, but
// its cgroup stays populated until the kernel has finished the exit (cgroup_exit), and
// rmdir fails with EBUSY meanwhile. The window is short, and wide on a loaded machine (seen
// under stress-ng --cpu 4 and -race: the orphan of a crashed colo, reaped by another
// parent). runc and containerd retry the same way.
const (
	busyTries = 250                   // retries of an EBUSY directory ...
	busyWait  = 20 * time.Millisecond // ... this far apart: 5 s at the least
)

// removeWhenFree removes each directory with remove, retrying those that fail with EBUSY
// up to tries times, wait apart; an absent directory counts as removed. Any other error,
// EBUSY after the last try, or ctx's end is returned (joined), after every directory was
// tried.
func removeWhenFree(ctx context.Context, dirs []string, remove func(string) error, tries int, wait time.Duration) error {
	var failed []error
	for i := 0; len(dirs) > 0; i++ {
		var busy []string
		for _, d := range dirs {
			switch err := remove(d); {
			case err == nil || errors.Is(err, os.ErrNotExist):
			case errors.Is(err, syscall.EBUSY) && i < tries:
				busy = append(busy, d)
			default:
				failed = append(failed, err)
			}
		}
		if dirs = busy; len(dirs) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return errors.Join(append(failed, fmt.Errorf("%s still busy: %w", strings.Join(dirs, ", "), ctx.Err()))...)
		case <-time.After(wait):
		}
	}
	return errors.Join(failed...)
}

func (r *Runtime) readState(name string) (stateFile, error) {
	var st stateFile
	b, err := os.ReadFile(r.statePath(name))
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(b, &st)
	return st, err
}

// SetCpuset implements runtime.Runtime.
func (r *Runtime) SetCpuset(ctx context.Context, id string, cpus string) error {
	if _, err := machine.ParseCPUList(cpus); err != nil {
		return err
	}
	w, err := r.get(id)
	if err != nil {
		return err
	}
	d, ok := w.cg.Dirs["cpuset"]
	if !ok && r.mode == workload.CgroupV2 {
		d, ok = w.cg.Dirs[""]
	}
	if !ok {
		return fmt.Errorf("workload %s: no cpuset cgroup to re-pin", id)
	}
	if err := os.WriteFile(filepath.Join(d, "cpuset.cpus"), []byte(cpus), 0o644); err != nil {
		return fmt.Errorf("workload %s: set cpuset.cpus=%s: %w", id, cpus, err)
	}
	r.mu.Lock()
	w.spec.Cpuset = cpus
	r.mu.Unlock()
	return nil
}

// SetCPUQuota implements runtime.Runtime: CFS bandwidth on the workload's cgroup,
// cpu.cfs_period_us and cpu.cfs_quota_us on cgroup v1, cpu.max on v2; quota 0 removes
// the limit.
func (r *Runtime) SetCPUQuota(ctx context.Context, id string, quota, period time.Duration) error {
	if period < time.Millisecond || period > time.Second || (quota != 0 && quota < workload.MinCFSQuota) {
		return fmt.Errorf("CPU quota %v per %v: the period must be 1 ms to 1 s and the quota 0 (no limit) or at least %v", quota, period, workload.MinCFSQuota)
	}
	w, err := r.get(id)
	if err != nil {
		return err
	}
	write := func(dir, file, val string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(val), 0o644); err != nil {
			return fmt.Errorf("workload %s: set %s=%s: %w", id, file, val, err)
		}
		return nil
	}
	if d, ok := w.cg.Dirs["cpu"]; ok { // v1
		// No limit first, so a shorter period never meets an old quota the kernel refuses.
		if err := write(d, "cpu.cfs_quota_us", "-1"); err != nil {
			return err
		}
		if err := write(d, "cpu.cfs_period_us", fmt.Sprint(period.Microseconds())); err != nil {
			return err
		}
		if quota == 0 {
			return nil
		}
		return write(d, "cpu.cfs_quota_us", fmt.Sprint(quota.Microseconds()))
	}
	if d, ok := w.cg.Dirs[""]; ok && r.mode == workload.CgroupV2 {
		q := "max"
		if quota > 0 {
			q = fmt.Sprint(quota.Microseconds())
		}
		if err := write(d, "cpu.max", q+" "+fmt.Sprint(period.Microseconds())); err != nil {
			if r.ctrlErr != nil {
				return fmt.Errorf("%w (the cpu controller is not delegated to colo's cgroups: %v)", err, r.ctrlErr)
			}
			return err
		}
		return nil
	}
	return fmt.Errorf("workload %s: no cpu cgroup to limit", id)
}

// Stats implements runtime.Runtime from the cgroup's own accounting files.
func (r *Runtime) Stats(ctx context.Context, id string) (workload.Stats, error) {
	w, err := r.get(id)
	if err != nil {
		return workload.Stats{}, err
	}
	return CgroupStats(w.cg, w.spec.Cpuset)
}

// CgroupStats samples CPU, memory, block I/O and PIDs of any cgroup (v1 or v2).
func CgroupStats(cg workload.Cgroup, cpuset string) (workload.Stats, error) {
	s := workload.Stats{Time: time.Now(), Cpuset: cpuset}
	read := func(dir, f string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, f)) }
	if d := cg.Dirs["cpuacct"]; d != "" {
		b, err := read(d, "cpuacct.usage")
		if err != nil {
			return s, fmt.Errorf("cgroup %s: %w (has the workload been removed?)", d, err)
		}
		s.CPUTotalNs, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		s.CPUAvailable = true
		if b, err := read(d, "cpuacct.usage_percpu"); err == nil {
			for _, f := range strings.Fields(string(b)) {
				v, _ := strconv.ParseUint(f, 10, 64)
				s.PerCPUNs = append(s.PerCPUNs, v)
			}
			s.PerCPUPresent = len(s.PerCPUNs) > 0
		}
	} else if d := cg.Dirs[""]; d != "" {
		b, err := read(d, "cpu.stat")
		if err != nil {
			return s, fmt.Errorf("cgroup %s: %w (has the workload been removed?)", d, err)
		}
		if v, ok := kv(b)["usage_usec"]; ok {
			s.CPUTotalNs, s.CPUAvailable = v*1000, true
		}
	}
	// memory: usage less the inactive page cache (as docker stats counts it), and the limit
	mem := struct{ dir, usage, inactive, limit string }{cg.Dirs["memory"], "memory.usage_in_bytes", "total_inactive_file", "memory.limit_in_bytes"}
	if mem.dir == "" {
		mem = struct{ dir, usage, inactive, limit string }{cg.Dirs[""], "memory.current", "inactive_file", "memory.max"}
	}
	if d := mem.dir; d != "" {
		if b, err := read(d, mem.usage); err == nil {
			s.MemoryBytes, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			s.MemAvailable = true
			if st, err := read(d, "memory.stat"); err == nil {
				if v, ok := kv(st)[mem.inactive]; ok && v < s.MemoryBytes {
					s.MemoryBytes -= v
				}
			}
		}
		if b, err := read(d, mem.limit); err == nil {
			s.MemoryLimit, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64) // v2's "max" → 0
		}
	}
	if d := cg.Dir("pids"); d != "" {
		if b, err := read(d, "pids.current"); err == nil {
			s.PIDs, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		}
	}
	if d := cg.Dirs["blkio"]; d != "" {
		if b, err := read(d, "blkio.throttle.io_service_bytes_recursive"); err == nil {
			s.BlkAvailable = true
			for _, l := range strings.Split(string(b), "\n") {
				f := strings.Fields(l)
				if len(f) == 3 {
					v, _ := strconv.ParseUint(f[2], 10, 64)
					switch f[1] {
					case "Read":
						s.BlockRead += v
					case "Write":
						s.BlockWrite += v
					}
				}
			}
		}
	} else if d := cg.Dirs[""]; d != "" && cg.Version == 2 {
		if b, err := read(d, "io.stat"); err == nil {
			s.BlkAvailable = true
			for _, f := range strings.Fields(string(b)) {
				k, v, ok := strings.Cut(f, "=")
				if !ok {
					continue
				}
				n, _ := strconv.ParseUint(v, 10, 64)
				switch k {
				case "rbytes":
					s.BlockRead += n
				case "wbytes":
					s.BlockWrite += n
				}
			}
		}
	}
	return s, nil
}
