// Package dockerprobe runs the thesis's sensitivity probe (seed000.md §2.6) on Linux with
// Docker: the target is a container from the colo scratch image pinned to one core, the
// neighbour a container from the same image pinned to the other core(s) of the target's
// LLC, running `colo stress KIND` for each stressor segment (the idle baseline runs no
// neighbour). The segments, sampling, trimming and ς come from probe.DriveSensitivity.
//
// The metric depends on what the machine has:
//
//   - With a hardware PMU (perf ModeHardware) the sampler reads instructions, cycles and
//     cycle_activity.stalls_total of the target's cgroup: ς on IPCE as in the thesis
//     (probe.MetricIPCE), or on IPC when the stall events did not open (probe.MetricIPC).
//   - Without one (a VM without vPMU, like this project's machine) there is no IPC: the
//     target runs a colo stressor with `--interval --json`, whose cumulative work count it
//     prints, and the sampler pairs each printed count with the target's CPU time read
//     (perf task-clock of its cgroup, or the cgroup's cpu.stat when perf is not allowed)
//     the moment the line arrives. ς is then on the work per CPU second (probe.MetricCPURate),
//     the application-level analogue of IPC: like IPC it does not drop when the core is
//     time-shared (host noise), but it drops when memory stalls the target.
//
// Isolation: with a resctrl mount (a real one or the emulator's), target and neighbour
// share one CLOS with the configured ways (the lowest ones, best-effort: other groups
// are not shrunk) and MBA percent on every L3 domain; without one there is none, and the
// result says so.
package dockerprobe

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"colo/machine"
	"colo/metric"
	"colo/perf"
	"colo/probe"
	"colo/stress"
	"colo/workload"
	"colo/workload/docker"
)

// Config is one probe.
type Config struct {
	// Image is the colo image (entrypoint /colo; `colo image build`).
	Image string
	// Target is the colo command line of the target without the binary, a colo stressor:
	// e.g. ["stress", "random", "--mb", "8"]. The probe appends --interval and --json.
	Target []string
	// TargetCPU is the target's core; NeighbourCPUs the neighbour's (nil: the other
	// online cores sharing the target's LLC, SameLLC).
	TargetCPU     int
	NeighbourCPUs []int
	// Probe is the timing and partition (probe.DefaultSensitivityConfig with DefaultT =
	// 6 × the segment time).
	Probe probe.SensitivityConfig
	// Warmup runs the target alone before the baseline (the thesis's warmup_t).
	Warmup time.Duration
	// ResctrlRoot is a resctrl mount (or the emulator's); "" means no isolated partition.
	ResctrlRoot string
	// Name prefixes the containers and the CLOS ("" → "colo-probe-<pid>").
	Name string
	// Perf configures the target's counters (zero: the real system calls and the detected
	// microarchitecture's stall events).
	Perf perf.Options
}

// Result is a finished probe: its Report, and where it ran.
type Result struct {
	probe.Report
	// Counters is the full result of the state machine (IPC, IPCE, stalled %) when the
	// PMU exists (on the cpu_rate path its IPC vector would be the mean of per-sample work
	// per CPU ns, which the CPU-time read delay makes unreliable: not reported).
	Counters      *probe.SensitivityResult `json:"counters,omitempty"`
	TargetCPU     int                      `json:"target_cpu"`
	NeighbourCPUs []int                    `json:"neighbour_cpus"`
	Target        string                   `json:"target"`
}

// Run probes cfg.Target with the Docker runtime r. Every container it starts and the CLOS
// it creates are removed before it returns, also on error.
func Run(ctx context.Context, r *docker.Runtime, cfg Config) (res Result, err error) {
	if err := cfg.Probe.Validate(); err != nil {
		return res, err
	}
	if len(cfg.Target) == 0 || cfg.Target[0] != "stress" {
		return res, fmt.Errorf("target %q: give a colo stressor command line (e.g. stress random --mb 8): its work count is the progress measure without a PMU", strings.Join(cfg.Target, " "))
	}
	if cfg.Image == "" {
		return res, errors.New("no image: build one with `colo image build --tag colo:latest`")
	}
	if cfg.NeighbourCPUs == nil {
		if cfg.NeighbourCPUs, err = SameLLC(cfg.TargetCPU); err != nil {
			return res, err
		}
	}
	if len(cfg.NeighbourCPUs) == 0 {
		return res, fmt.Errorf("no core shares cpu %d's LLC for the neighbour; give the neighbour cores explicitly", cfg.TargetCPU)
	}
	for _, c := range cfg.NeighbourCPUs {
		if c == cfg.TargetCPU {
			return res, fmt.Errorf("neighbour cores %v include the target's cpu %d", cfg.NeighbourCPUs, cfg.TargetCPU)
		}
	}
	if cfg.Name == "" {
		cfg.Name = fmt.Sprintf("colo-probe-%d", os.Getpid())
	}
	res = Result{TargetCPU: cfg.TargetCPU, NeighbourCPUs: cfg.NeighbourCPUs, Target: strings.Join(cfg.Target, " "),
		Report: probe.Report{Isolation: "none: no resctrl mount given (target and neighbour share the whole LLC and memory bandwidth with the host)"}}

	// Cleanup runs on a fresh context so a cancelled probe still removes its containers.
	cleanup := func(id string) {
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if rerr := r.Remove(c, id); rerr != nil && err == nil {
			err = fmt.Errorf("remove container %s: %w", id, rerr)
		}
	}

	var part *partition
	if cfg.ResctrlRoot != "" {
		if part, err = newPartition(cfg.ResctrlRoot, cfg.Name, cfg.Probe.Ways, cfg.Probe.MBA); err != nil {
			return res, err
		}
		defer func() {
			if perr := part.remove(); perr != nil && err == nil {
				err = perr
			}
		}()
		res.Isolation = part.describe()
	}

	interval := cfg.Probe.Frequency / 2 // ≥ 1 work line per sample
	cmd := append(append([]string(nil), cfg.Target...), "--interval", interval.String(), "--json")
	tid, err := create(ctx, r, workload.Spec{Name: cfg.Name + "-target", Image: cfg.Image, Command: cmd, Cpuset: fmt.Sprint(cfg.TargetCPU)}, "target")
	if err != nil {
		return res, err
	}
	defer cleanup(tid)
	if err := r.Start(ctx, tid); err != nil {
		return res, err
	}
	info, err := r.Inspect(ctx, tid)
	if err != nil {
		return res, err
	}
	if info.State != workload.Running {
		logs, _ := r.Logs(ctx, tid, 20)
		return res, fmt.Errorf("target %q exited at once: %s\n%s", res.Target, info.Exit, logs)
	}
	if part != nil {
		if err := part.add(info.Cgroup); err != nil {
			return res, err
		}
	}

	s, err := newSampler(ctx, r, tid, info.Cgroup, cfg.TargetCPU, cfg.Perf)
	if err != nil {
		return res, err
	}
	defer s.close()
	res.Metric, res.Why = s.metric, s.why

	wait := func(ctx context.Context, d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	if err := s.waitFirst(ctx, 30*time.Second); err != nil {
		return res, err
	}
	if err := wait(ctx, cfg.Warmup); err != nil {
		return res, err
	}
	nb := &neighbour{r: r, image: cfg.Image, name: cfg.Name, cpus: cfg.NeighbourCPUs, part: part, cleanup: cleanup, s: s}
	if _, err := s.Sample(); err != nil { // start the first interval now
		return res, err
	}
	s.segment(0) // the baseline's first sample straddles the warm-up: not counted
	pr, err := probe.DriveSensitivity(ctx, cfg.Probe, nb, s, wait)
	if err != nil {
		return res, err
	}
	s.mu.Lock()
	res.Unit = s.unit
	s.mu.Unlock()
	res.CPUShare = s.cpuShare()
	res.Samples = append(res.Samples, pr.Base.Samples)
	for _, l := range pr.Stressed {
		res.Samples = append(res.Samples, l.Samples)
	}
	switch s.metric {
	case probe.MetricIPCE:
		res.Sensitivity, res.Base = pr.IPCE, pr.Base.IPCE
		for _, l := range pr.Stressed {
			res.Stressed = append(res.Stressed, l.IPCE)
		}
		res.Counters = &pr
	case probe.MetricIPC:
		res.Sensitivity, res.Base = pr.IPC, pr.Base.IPC
		for _, l := range pr.Stressed {
			res.Stressed = append(res.Stressed, l.IPC)
		}
		res.Counters = &pr
	default:
		// Levels are the segments' ratios of sums (sampler.rates); ς is thesis Eq. 3.5 on them.
		rates := s.rates()
		res.Base = rates[0]
		var sv []float64
		for i := range probe.Stressors {
			res.Stressed = append(res.Stressed, rates[i+1])
			sv = append(sv, metric.Sensitivity(rates[0], rates[i+1]))
		}
		res.Sensitivity = probe.Vector{LLC: sv[0], MemRead: sv[1], MemWrite: sv[2], SysCall: sv[3], Prefetch: sv[4]}
	}
	return res, nil
}

// SameLLC lists the other online cores sharing cpu's last-level cache (sysfs
// cache/index*/shared_cpu_list of the highest level); when sysfs has no cache topology,
// every other online core.
func SameLLC(cpu int) ([]int, error) {
	online, err := workload.OnlineCPUs()
	if err != nil {
		return nil, err
	}
	shared := online
	idx, _ := filepath.Glob(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cache/index*", cpu))
	best := -1
	for _, d := range idx {
		lb, err1 := os.ReadFile(filepath.Join(d, "level"))
		sb, err2 := os.ReadFile(filepath.Join(d, "shared_cpu_list"))
		var lvl int
		if err1 != nil || err2 != nil {
			continue
		}
		if _, err := fmt.Sscan(strings.TrimSpace(string(lb)), &lvl); err != nil || lvl <= best {
			continue
		}
		if l, err := machine.ParseCPUList(strings.TrimSpace(string(sb))); err == nil {
			best, shared = lvl, l
		}
	}
	var out []int
	for _, c := range shared {
		if c != cpu {
			out = append(out, c)
		}
	}
	return out, nil
}

// create makes a container of the Docker runtime under its own top-level cgroup parent
// colo-probe-<role> (a slice with the systemd driver). Under the default parent (/docker)
// target and neighbour are one scheduling entity against every other process on the
// host, and the CPU scheduler splits that entity's weight across the cores by load:
// starting the neighbour on the other core cuts the target's weight on its own core.
// Separate parents keep the target's weight independent of the neighbour. (The target's
// share still falls while a stressor runs on a busy 2-core host, because host processes
// the neighbour displaces from its core move onto the target's; Result.CPUShare reports
// it.) The empty parents stay behind for the next probe.
func create(ctx context.Context, r *docker.Runtime, s workload.Spec, role string) (string, error) {
	s.CgroupParent = "/colo-probe-" + role
	if r.CgroupDriver() == "systemd" {
		s.CgroupParent = "colo-probe-" + role + ".slice"
	}
	s.Labels = map[string]string{workload.LabelJob: s.Name}
	return r.Create(ctx, s)
}

// neighbour implements probe.Neighbour with one container per stressor segment.
type neighbour struct {
	r       *docker.Runtime
	image   string
	name    string
	cpus    []int
	part    *partition
	cleanup func(id string)
	s       *sampler // told when a segment begins
}

// Start runs `colo stress KIND --interval 50ms --json` in a container on the neighbour
// cores and returns once it printed its first interval line: the stressor has allocated
// its working set and runs.
func (n *neighbour) Start(ctx context.Context, kind string) (func() error, error) {
	if i := slices.Index(probe.Stressors, kind); i >= 0 && n.s != nil {
		n.s.segment(i + 1)
	}
	spec := workload.Spec{Name: n.name + "-nb-" + kind, Image: n.image, Cpuset: machine.FormatCPUList(n.cpus),
		Command: []string{"stress", kind, "--workers", fmt.Sprint(len(n.cpus)), "--interval", "50ms", "--json"}}
	id, err := create(ctx, n.r, spec, "neighbour")
	if err != nil {
		return nil, err
	}
	stop := func() error {
		n.cleanup(id)
		return nil
	}
	fail := func(err error) (func() error, error) {
		stop()
		return nil, err
	}
	if err := n.r.Start(ctx, id); err != nil {
		return fail(err)
	}
	if n.part != nil {
		info, err := n.r.Inspect(ctx, id)
		if err != nil {
			return fail(err)
		}
		if err := n.part.add(info.Cgroup); err != nil {
			return fail(err)
		}
	}
	lines, closeLogs, err := follow(ctx, n.r, id)
	if err != nil {
		return fail(err)
	}
	defer closeLogs()
	select {
	case _, ok := <-lines:
		if !ok {
			logs, _ := n.r.Logs(ctx, id, 20)
			return fail(fmt.Errorf("neighbour %s exited before its first report: %s", kind, logs))
		}
	case <-time.After(30 * time.Second):
		return fail(fmt.Errorf("neighbour %s printed nothing in 30 s", kind))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	return stop, nil
}

// follow streams a container's stdout and returns its stress.Report lines.
func follow(ctx context.Context, r *docker.Runtime, id string) (<-chan stress.Report, func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	rc, err := r.Client().ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, Follow: true})
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("logs of container %s: %w", id, err)
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, io.Discard, rc)
		pw.CloseWithError(err)
	}()
	out := make(chan stress.Report, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var rep stress.Report
			if json.Unmarshal(sc.Bytes(), &rep) != nil || rep.Final {
				continue
			}
			select {
			case out <- rep:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, func() { cancel(); rc.Close(); pr.Close() }, nil
}
