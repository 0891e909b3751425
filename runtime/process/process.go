// Package process runs colo workloads as plain processes, each in its own cgroup (cpuset,
// memory limit, CPU accounting, perf_event), for hosts without Docker. It implements
// runtime.Runtime; workload IDs are the workload names.
//
// The process is moved into its cgroup right after fork/exec (cgroup.procs), so the first
// microseconds of the program run in colo's own cgroup; children it forks later are
// inside. Mounts, images and the privileged flag are container notions and are refused.
package process

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"colo/machine"
	rt "colo/runtime"
)

// Options configure a Runtime.
type Options struct {
	// Parent is the cgroup (relative to each hierarchy root) under which workload cgroups
	// are created; default "colo".
	Parent string
	// StateDir keeps one JSON file per workload (labels, spec) so that a restarted colo
	// can list and remove what a crashed one left; default /run/colo/process.
	StateDir string
	// Labels are added to every workload.
	Labels map[string]string
	// Mountinfo overrides /proc/self/mountinfo (tests).
	Mountinfo []byte
}

// controllers colo uses on v1 hierarchies.
var v1Controllers = []string{"cpuset", "cpu", "cpuacct", "memory", "pids", "blkio", "perf_event"}

// Runtime implements runtime.Runtime with processes.
type Runtime struct {
	opts    Options
	mounts  []rt.MountPoint
	mode    rt.CgroupMode
	ctrlErr error // v2 controllers could not be delegated

	mu sync.Mutex
	ws map[string]*workload
}

type workload struct {
	spec    rt.Spec
	labels  map[string]string
	cg      rt.Cgroup
	cmd     *exec.Cmd
	state   rt.State
	exit    rt.Exit
	done    chan struct{}
	started time.Time
	ended   time.Time
	out     *bytes.Buffer
}

type stateFile struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
	Dirs   map[string]string `json:"dirs"`
	PID    int               `json:"pid"`
}

var (
	_ rt.Runtime     = (*Runtime)(nil)
	_ rt.QuotaSetter = (*Runtime)(nil)
)

// New prepares the parent cgroups. It fails when cgroups are not mounted or not writable.
func New(opts Options) (*Runtime, error) {
	if opts.Parent == "" {
		opts.Parent = "colo"
	}
	if opts.StateDir == "" {
		opts.StateDir = "/run/colo/process"
	}
	mi := opts.Mountinfo
	if mi == nil {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return nil, err
		}
		mi = b
	}
	r := &Runtime{opts: opts, ws: map[string]*workload{}}
	for _, m := range rt.Mounts(mi) {
		if m.Root != "/" {
			continue // a namespaced view; colo cannot create cgroups there
		}
		if m.Version == 2 || hasAny(m.Controllers, v1Controllers) {
			r.mounts = append(r.mounts, m)
		}
	}
	r.mode = rt.Mode(r.mounts)
	if len(r.mounts) == 0 {
		return nil, fmt.Errorf("%w: no cgroup hierarchy is mounted at its root; mount cgroup2 on /sys/fs/cgroup", rt.ErrUnavailable)
	}
	if err := os.MkdirAll(opts.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("process runtime state dir: %w", err)
	}
	for _, m := range r.mounts {
		if err := r.prepareParent(m); err != nil {
			return nil, fmt.Errorf("%w: cgroup %s: %v (the process runtime needs root)", rt.ErrUnavailable, filepath.Join(m.Dir, opts.Parent), err)
		}
	}
	return r, nil
}

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

func (r *Runtime) prepareParent(m rt.MountPoint) error {
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
	if m.Version == 2 && r.mode == rt.CgroupV2 {
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

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return "process" }

// Close implements runtime.Runtime. Workloads keep running (Remove them first); the
// parent cgroups are removed when empty.
func (r *Runtime) Close() error {
	for _, m := range r.mounts {
		os.Remove(filepath.Join(m.Dir, r.opts.Parent)) // fails, harmlessly, while not empty
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

// Create implements runtime.Runtime: it makes the cgroup and applies cpuset and memory
// limit; nothing runs until Start.
func (r *Runtime) Create(ctx context.Context, s rt.Spec) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	switch {
	case s.Image != "":
		return "", fmt.Errorf("workload %s: the process runtime runs Command directly; leave image empty (got %q) or use the docker runtime", s.Name, s.Image)
	case len(s.Mounts) > 0:
		return "", fmt.Errorf("workload %s: the process runtime has no mounts; use the docker runtime or host paths directly", s.Name)
	case s.Privileged:
		return "", fmt.Errorf("workload %s: the process runtime has no privileged mode; run colo as the user the workload needs", s.Name)
	case len(s.Command) == 0:
		return "", fmt.Errorf("workload %s: no command given", s.Name)
	}
	exe, err := exec.LookPath(s.Command[0])
	if err != nil {
		return "", fmt.Errorf("workload %s: %w", s.Name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.ws[s.Name]; ok {
		return "", fmt.Errorf("workload %s already exists; remove it first", s.Name)
	}
	dirs := r.dirsFor(s.Name)
	created := []string{}
	undo := func() {
		for i := len(created) - 1; i >= 0; i-- {
			os.Remove(created[i])
		}
	}
	for _, d := range uniqueDirs(dirs) {
		if err := os.Mkdir(d, 0o755); err != nil {
			undo()
			if errors.Is(err, os.ErrExist) {
				return "", fmt.Errorf("workload %s: cgroup %s exists (left by a crashed colo?); remove the workload with the process runtime first", s.Name, d)
			}
			return "", fmt.Errorf("workload %s: create cgroup: %w", s.Name, err)
		}
		created = append(created, d)
	}
	if err := r.applyLimits(s, dirs); err != nil {
		undo()
		return "", fmt.Errorf("workload %s: %w", s.Name, err)
	}
	labels := map[string]string{rt.LabelOwner: rt.OwnerValue}
	for _, src := range []map[string]string{r.opts.Labels, s.Labels} {
		for k, v := range src {
			labels[k] = v
		}
	}
	cmd := exec.Command(exe, s.Command[1:]...)
	env := os.Environ()
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+s.Env[k])
	}
	cmd.Env = env
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = &capped{b: out}, &capped{b: out}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: 0}
	w := &workload{spec: s, labels: labels, cg: rt.Cgroup{Version: versionOf(r.mode), Dirs: dirs, Path: "/" + r.opts.Parent + "/" + s.Name},
		cmd: cmd, state: rt.Created, done: make(chan struct{}), out: out}
	if err := r.saveState(w); err != nil {
		undo()
		return "", err
	}
	r.ws[s.Name] = w
	return s.Name, nil
}

func versionOf(m rt.CgroupMode) int {
	if m == rt.CgroupV2 {
		return 2
	}
	return 1
}

func (r *Runtime) applyLimits(s rt.Spec, dirs map[string]string) error {
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
	} else if d, ok := dirs[""]; ok && s.Cpuset != "" && r.mode == rt.CgroupV2 {
		if err := write(d, "cpuset.cpus", s.Cpuset); err != nil {
			return err
		}
	}
	if s.MemoryBytes > 0 {
		if d, ok := dirs["memory"]; ok {
			if err := write(d, "memory.limit_in_bytes", strconv.FormatInt(s.MemoryBytes, 10)); err != nil {
				return err
			}
		} else if d, ok := dirs[""]; ok && r.mode == rt.CgroupV2 {
			if err := write(d, "memory.max", strconv.FormatInt(s.MemoryBytes, 10)); err != nil {
				return err
			}
		}
	}
	return nil
}

// capped keeps the first 64 KiB of output (for error messages).
type capped struct{ b *bytes.Buffer }

var outMu sync.Mutex

func (c *capped) Write(p []byte) (int, error) {
	outMu.Lock()
	defer outMu.Unlock()
	if room := 64<<10 - c.b.Len(); room > 0 {
		if len(p) > room {
			c.b.Write(p[:room])
		} else {
			c.b.Write(p)
		}
	}
	return len(p), nil
}

func (r *Runtime) statePath(name string) string { return filepath.Join(r.opts.StateDir, name+".json") }

func (r *Runtime) saveState(w *workload) error {
	pid := 0
	if w.cmd.Process != nil {
		pid = w.cmd.Process.Pid
	}
	b, _ := json.Marshal(stateFile{Name: w.spec.Name, Labels: w.labels, Dirs: w.cg.Dirs, PID: pid})
	if err := os.WriteFile(r.statePath(w.spec.Name), b, 0o644); err != nil {
		return fmt.Errorf("process runtime state: %w", err)
	}
	return nil
}

func (r *Runtime) get(id string) (*workload, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.ws[id]
	if !ok {
		return nil, fmt.Errorf("workload %s: %w", id, rt.ErrNotFound)
	}
	return w, nil
}

// Start implements runtime.Runtime.
func (r *Runtime) Start(ctx context.Context, id string) error {
	w, err := r.get(id)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.state != rt.Created {
		return fmt.Errorf("workload %s is %s, not created", id, w.state)
	}
	if err := w.cmd.Start(); err != nil {
		w.state, w.exit = rt.Exited, rt.Exit{Code: 127, Error: err.Error()}
		close(w.done)
		return fmt.Errorf("start workload %s: %w", id, err)
	}
	pid := w.cmd.Process.Pid
	for _, d := range uniqueDirs(w.cg.Dirs) {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			w.cmd.Process.Kill()
			return fmt.Errorf("start workload %s: move pid %d into %s: %w", id, pid, d, err)
		}
	}
	w.state, w.started = rt.Running, time.Now()
	r.saveState(w)
	go func() {
		err := w.cmd.Wait()
		ex := rt.Exit{}
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					ex.Code = 128 + int(ws.Signal())
				} else {
					ex.Code = ee.ExitCode()
				}
			} else {
				ex.Code, ex.Error = -1, err.Error()
			}
		}
		if ev := memoryEvents(w.cg); ev > 0 && ex.Code == 137 {
			ex.OOMKilled = true
		}
		r.mu.Lock()
		w.state, w.exit, w.ended = rt.Exited, ex, time.Now()
		r.mu.Unlock()
		close(w.done)
	}()
	return nil
}

// memoryEvents returns the OOM kill count of the cgroup (v1 memory.oom_control
// oom_kill, v2 memory.events oom_kill).
func memoryEvents(cg rt.Cgroup) int {
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

// signalAll sends sig to every process in the cgroup (children included).
func signalAll(cg rt.Cgroup, sig syscall.Signal) {
	procs, _ := cg.Procs()
	for _, p := range procs {
		syscall.Kill(p, sig) // vanished PIDs are normal
	}
}

// Stop implements runtime.Runtime: SIGTERM to every process of the cgroup, SIGKILL after grace.
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) error {
	w, err := r.get(id)
	if err != nil {
		return err
	}
	r.mu.Lock()
	running := w.state == rt.Running
	r.mu.Unlock()
	if !running {
		return nil
	}
	signalAll(w.cg, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
	case <-ctx.Done():
	}
	signalAll(w.cg, syscall.SIGKILL)
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Remove implements runtime.Runtime: kills what still runs and deletes the cgroups.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	w, err := r.get(id)
	if err != nil {
		// Not ours in memory: maybe left by a crashed colo.
		if st, serr := r.readState(id); serr == nil {
			return r.removeDirs(ctx, id, st.Dirs)
		}
		return err
	}
	r.mu.Lock()
	state := w.state
	r.mu.Unlock()
	if state == rt.Running {
		if err := r.Stop(ctx, id, 0); err != nil {
			return err
		}
	}
	if err := r.removeDirs(ctx, id, w.cg.Dirs); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.ws, id)
	r.mu.Unlock()
	return nil
}

func (r *Runtime) removeDirs(ctx context.Context, id string, dirs map[string]string) error {
	cg := rt.Cgroup{Dirs: dirs}
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
	var errs []error
	for _, d := range uniqueDirs(dirs) {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("remove workload %s: %w", id, errors.Join(errs...))
	}
	os.Remove(r.statePath(id))
	return nil
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
	if !ok && r.mode == rt.CgroupV2 {
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

// SetCPUQuota implements runtime.QuotaSetter: CFS bandwidth on the workload's cgroup,
// cpu.cfs_period_us and cpu.cfs_quota_us on cgroup v1, cpu.max on v2; quota 0 removes
// the limit.
func (r *Runtime) SetCPUQuota(ctx context.Context, id string, quota, period time.Duration) error {
	if period < time.Millisecond || period > time.Second || (quota != 0 && quota < rt.MinCFSQuota) {
		return fmt.Errorf("CPU quota %v per %v: the period must be 1 ms to 1 s and the quota 0 (no limit) or at least %v", quota, period, rt.MinCFSQuota)
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
	if d, ok := w.cg.Dirs[""]; ok && r.mode == rt.CgroupV2 {
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

// Wait implements runtime.Runtime.
func (r *Runtime) Wait(ctx context.Context, id string) (rt.Exit, error) {
	w, err := r.get(id)
	if err != nil {
		return rt.Exit{}, err
	}
	select {
	case <-w.done:
		r.mu.Lock()
		defer r.mu.Unlock()
		return w.exit, nil
	case <-ctx.Done():
		return rt.Exit{}, ctx.Err()
	}
}

// Output returns what the workload wrote to stdout and stderr (first 64 KiB).
func (r *Runtime) Output(id string) (string, error) {
	w, err := r.get(id)
	if err != nil {
		return "", err
	}
	outMu.Lock()
	defer outMu.Unlock()
	return w.out.String(), nil
}

// Inspect implements runtime.Runtime.
func (r *Runtime) Inspect(ctx context.Context, id string) (rt.Info, error) {
	w, err := r.get(id)
	if err != nil {
		return rt.Info{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	info := rt.Info{ID: id, Name: id, State: w.state, Cgroup: w.cg, Cpuset: w.spec.Cpuset, Labels: w.labels,
		StartedAt: w.started, FinishedAt: w.ended}
	if w.state == rt.Running {
		info.PID = w.cmd.Process.Pid
	}
	if w.state == rt.Exited {
		info.Exit = w.exit
	}
	return info, nil
}

// List implements runtime.Runtime. It includes workloads a crashed colo left behind
// (from the state directory), reported as running when their cgroup still has processes.
func (r *Runtime) List(ctx context.Context, labels map[string]string) ([]rt.Info, error) {
	match := func(l map[string]string) bool {
		if l[rt.LabelOwner] != rt.OwnerValue {
			return false
		}
		for k, v := range labels {
			if l[k] != v {
				return false
			}
		}
		return true
	}
	var out []rt.Info
	seen := map[string]bool{}
	r.mu.Lock()
	names := make([]string, 0, len(r.ws))
	for n := range r.ws {
		names = append(names, n)
	}
	r.mu.Unlock()
	for _, n := range names {
		seen[n] = true
		info, err := r.Inspect(ctx, n)
		if err == nil && match(info.Labels) {
			out = append(out, info)
		}
	}
	files, _ := filepath.Glob(filepath.Join(r.opts.StateDir, "*.json"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if seen[name] {
			continue
		}
		st, err := r.readState(name)
		if err != nil || !match(st.Labels) {
			continue
		}
		cg := rt.Cgroup{Version: versionOf(r.mode), Dirs: st.Dirs, Path: "/" + r.opts.Parent + "/" + name}
		info := rt.Info{ID: name, Name: name, State: rt.Exited, Cgroup: cg, Labels: st.Labels}
		if procs, err := cg.Procs(); err == nil && len(procs) > 0 {
			info.State, info.PID = rt.Running, st.PID
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Stats implements runtime.Runtime from the cgroup's own accounting files.
func (r *Runtime) Stats(ctx context.Context, id string) (rt.Stats, error) {
	w, err := r.get(id)
	if err != nil {
		return rt.Stats{}, err
	}
	return CgroupStats(w.cg, w.spec.Cpuset)
}

// CgroupStats samples CPU, memory, block I/O and PIDs of any cgroup (v1 or v2).
func CgroupStats(cg rt.Cgroup, cpuset string) (rt.Stats, error) {
	s := rt.Stats{Time: time.Now(), Cpuset: cpuset}
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
	if d := cg.Dirs["memory"]; d != "" {
		if b, err := read(d, "memory.usage_in_bytes"); err == nil {
			s.MemoryBytes, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			s.MemAvailable = true
			if st, err := read(d, "memory.stat"); err == nil {
				if v, ok := kv(st)["total_inactive_file"]; ok && v < s.MemoryBytes {
					s.MemoryBytes -= v
				}
			}
		}
		if b, err := read(d, "memory.limit_in_bytes"); err == nil {
			s.MemoryLimit, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		}
	} else if d := cg.Dirs[""]; d != "" {
		if b, err := read(d, "memory.current"); err == nil {
			s.MemoryBytes, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			s.MemAvailable = true
			if st, err := read(d, "memory.stat"); err == nil {
				if v, ok := kv(st)["inactive_file"]; ok && v < s.MemoryBytes {
					s.MemoryBytes -= v
				}
			}
		}
		if b, err := read(d, "memory.max"); err == nil {
			s.MemoryLimit, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64) // "max" → 0
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
