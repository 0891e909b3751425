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
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"colo/workload"
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
	mounts  []workload.MountPoint
	mode    workload.CgroupMode
	ctrlErr error // v2 controllers could not be delegated

	mu sync.Mutex
	ws map[string]*proc
}

type proc struct {
	spec    workload.Spec
	labels  map[string]string
	cg      workload.Cgroup
	cmd     *exec.Cmd
	state   workload.State
	exit    workload.Exit
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

var _ workload.Runtime = (*Runtime)(nil)

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
	r := &Runtime{opts: opts, ws: map[string]*proc{}}
	for _, m := range workload.Mounts(mi) {
		if m.Root != "/" {
			continue // a namespaced view; colo cannot create cgroups there
		}
		if m.Version == 2 || hasAny(m.Controllers, v1Controllers) {
			r.mounts = append(r.mounts, m)
		}
	}
	r.mode = workload.Mode(r.mounts)
	if len(r.mounts) == 0 {
		return nil, fmt.Errorf("%w: no cgroup hierarchy is mounted at its root; mount cgroup2 on /sys/fs/cgroup", workload.ErrUnavailable)
	}
	if err := os.MkdirAll(opts.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("process runtime state dir: %w", err)
	}
	for _, m := range r.mounts {
		if err := r.prepareParent(m); err != nil {
			return nil, fmt.Errorf("%w: cgroup %s: %v (the process runtime needs root)", workload.ErrUnavailable, filepath.Join(m.Dir, opts.Parent), err)
		}
	}
	return r, nil
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

// Create implements runtime.Runtime: it makes the cgroup and applies cpuset and memory
// limit; nothing runs until Start.
func (r *Runtime) Create(ctx context.Context, s workload.Spec) (string, error) {
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
	case s.CgroupParent != "":
		return "", fmt.Errorf("workload %s: the process runtime keeps its workloads under its own parent cgroup; leave the cgroup parent empty (got %q)", s.Name, s.CgroupParent)
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
	labels := map[string]string{workload.LabelOwner: workload.OwnerValue}
	for _, src := range []map[string]string{r.opts.Labels, s.Labels} {
		for k, v := range src {
			labels[k] = v
		}
	}
	cmd := exec.Command(exe, s.Command[1:]...)
	env := os.Environ()
	keys := slices.Sorted(maps.Keys(s.Env))
	for _, k := range keys {
		env = append(env, k+"="+s.Env[k])
	}
	cmd.Env = env
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = &capped{b: out}, &capped{b: out}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: 0}
	w := &proc{spec: s, labels: labels, cg: workload.Cgroup{Version: versionOf(r.mode), Dirs: dirs, Path: "/" + r.opts.Parent + "/" + s.Name},
		cmd: cmd, state: workload.Created, done: make(chan struct{}), out: out}
	if err := r.saveState(w); err != nil {
		undo()
		return "", err
	}
	r.ws[s.Name] = w
	return s.Name, nil
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

func (r *Runtime) saveState(w *proc) error {
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

func (r *Runtime) get(id string) (*proc, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.ws[id]
	if !ok {
		return nil, fmt.Errorf("workload %s: %w", id, workload.ErrNotFound)
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
	if w.state != workload.Created {
		return fmt.Errorf("workload %s is %s, not created", id, w.state)
	}
	if err := w.cmd.Start(); err != nil {
		w.state, w.exit = workload.Exited, workload.Exit{Code: 127, Error: err.Error()}
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
	w.state, w.started = workload.Running, time.Now()
	r.saveState(w)
	go func() {
		err := w.cmd.Wait()
		ex := workload.Exit{}
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
		w.state, w.exit, w.ended = workload.Exited, ex, time.Now()
		r.mu.Unlock()
		close(w.done)
	}()
	return nil
}

// signalAll sends sig to every process in the cgroup (children included).
func signalAll(cg workload.Cgroup, sig syscall.Signal) {
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
	running := w.state == workload.Running
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
	if state == workload.Running {
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

// Wait implements runtime.Runtime.
func (r *Runtime) Wait(ctx context.Context, id string) (workload.Exit, error) {
	w, err := r.get(id)
	if err != nil {
		return workload.Exit{}, err
	}
	select {
	case <-w.done:
		r.mu.Lock()
		defer r.mu.Unlock()
		return w.exit, nil
	case <-ctx.Done():
		return workload.Exit{}, ctx.Err()
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
func (r *Runtime) Inspect(ctx context.Context, id string) (workload.Info, error) {
	w, err := r.get(id)
	if err != nil {
		return workload.Info{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	info := workload.Info{ID: id, Name: id, State: w.state, Cgroup: w.cg, Cpuset: w.spec.Cpuset, Labels: w.labels,
		StartedAt: w.started, FinishedAt: w.ended}
	if w.state == workload.Running {
		info.PID = w.cmd.Process.Pid
	}
	if w.state == workload.Exited {
		info.Exit = w.exit
	}
	return info, nil
}

// List implements runtime.Runtime. It includes workloads a crashed colo left behind
// (from the state directory), reported as running when their cgroup still has processes.
func (r *Runtime) List(ctx context.Context, labels map[string]string) ([]workload.Info, error) {
	match := func(l map[string]string) bool {
		if l[workload.LabelOwner] != workload.OwnerValue {
			return false
		}
		for k, v := range labels {
			if l[k] != v {
				return false
			}
		}
		return true
	}
	var out []workload.Info
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
		cg := workload.Cgroup{Version: versionOf(r.mode), Dirs: st.Dirs, Path: "/" + r.opts.Parent + "/" + name}
		info := workload.Info{ID: name, Name: name, State: workload.Exited, Cgroup: cg, Labels: st.Labels}
		if procs, err := cg.Procs(); err == nil && len(procs) > 0 {
			info.State, info.PID = workload.Running, st.PID
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
