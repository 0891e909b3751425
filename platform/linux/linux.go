// Package linux is the `platform: linux` adapter of the orchestrator (bench.Platform):
// each job runs as a Docker container (or a plain process in its own cgroup), pinned to
// the cores the scheduler chose; its counters come from perf_event_open on the
// container's cgroup (hardware events, or software events without a PMU), its CPU time
// and Docker stats from the runtime, and its cache occupancy and memory traffic from a
// resctrl monitoring group. Allocations are resctrl control groups (CLOS); the PIDs and
// threads of every container are synced into its groups at each sample, because
// containers fork (seed000.md §1.4).
//
// Everything the platform creates carries colo's labels or resctrl prefix. One platform
// runs per host at a time (a lock file); on start it removes what a crashed colo left
// (containers, networks, resctrl groups, an altered default schemata), and Close removes
// everything it created.
package linux

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"colo/bench"
	"colo/machine"
	"colo/perf"
	"colo/resctrl"
	"colo/resctrl/journal"
	"colo/resctrl/plan"
	rt "colo/runtime"
	"colo/runtime/docker"
	"colo/runtime/process"
)

// labelPlatform marks what this platform creates; reconcile removes only those.
// labelPID names the colo process that created a container: reconcile leaves the
// containers of live colo processes alone.
// labelPIDNS names the PID namespace of that process: a dockerd may be shared by
// several PID namespaces (containers, sandboxes), where a PID says nothing; reconcile
// only judges containers from its own namespace.
const (
	labelPlatform = "colo.platform"
	labelPID      = "colo.pid"
	labelPIDNS    = "colo.pidns"
)

// pidNamespace identifies this process's PID namespace ("pid:[4026531836]").
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "unknown"
	}
	return strings.NewReplacer("[", "", "]", "", ":", "-").Replace(ns)
}

// ownLabels are the labels of everything this process creates.
func ownLabels() map[string]string {
	return map[string]string{labelPlatform: "linux", labelPID: strconv.Itoa(os.Getpid()), labelPIDNS: pidNamespace()}
}

// alive reports whether the process with the given decimal PID exists (and is not us).
func alive(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 || n == os.Getpid() {
		return false
	}
	err = syscall.Kill(n, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// networkPID extracts the creator PID from a network name colo-<unix>-<pid>.
func networkPID(name string) string {
	i := strings.LastIndex(name, "-")
	if i < 0 {
		return ""
	}
	return name[i+1:]
}

// Options configure the platform.
type Options struct {
	// ResctrlRoot is the resctrl mount (--resctrl-root): "" uses $COLO_RESCTRL_ROOT,
	// else /sys/fs/resctrl when mounted; "none" disables RDT.
	ResctrlRoot string
	// RDT overrides ResctrlRoot with a ready client (tests).
	RDT RDT
	// Image is used for jobs without an image (default colo:latest).
	Image string
	// Runtime is "docker" (default) or "process" ("" uses $COLO_RUNTIME).
	Runtime string
	// StateDir holds the lock and crash-recovery state (default /run/colo).
	StateDir string
	// Self is the colo executable the process runtime runs for colo-image jobs
	// (default os.Executable()).
	Self string
	// Logf receives notes about unavailable sources and cleanup (default log.Printf).
	Logf func(format string, args ...any)
	// StopGrace is how long a stopped container may take to exit (default 2 s).
	StopGrace time.Duration
	// PerfSys replaces perf's system calls (tests: a fake PMU); nil: the kernel.
	PerfSys perf.Sys
	// Microarch selects the raw stall events ("" detects from /proc/cpuinfo).
	Microarch string
	// StartGrace is how long Start watches a new workload for an immediate exit
	// (default 150 ms).
	StartGrace time.Duration
	// Machine, when set, replaces the machine detected from sysfs and the resctrl mount
	// (tests: an AMD machine with one L3 domain per CCX on the in-process emulator).
	Machine *machine.Profile
	// Runtime0, when set, replaces the runtime Runtime names (tests: a fake runtime).
	Runtime0 rt.Runtime
	// Prefix names this instance's resctrl groups (default colo.<run>.; tests give two
	// platforms the same one to compare their trees).
	Prefix string
	// Opened, when set, is called with the platform at the end of a successful New
	// (tests: inspect the platform `colo run` builds through the registered factory).
	Opened func(*Platform)
}

// Defaults are the options `colo run` uses for platform: linux; commands set
// ResctrlRoot from --resctrl-root.
var Defaults = Options{}

func init() {
	bench.RegisterPlatform("linux", func(bm *bench.Benchmark) (bench.Platform, error) {
		o := Defaults
		if bm != nil && bm.ResctrlRoot != "" {
			o.ResctrlRoot = bm.ResctrlRoot // colo run --resctrl-root
		}
		return New(bm, o)
	})
}

type job struct {
	spec    bench.JobSpec
	rid     string // runtime ID
	cpus    []int
	socket  int
	cg      rt.Cgroup
	counter *perf.Counter
	cputime *rt.CPUTime
	base    bench.Counters // counts of counters closed by Move
	quota   float64        // CPU quota (fraction of its cores' time; 0 or 1: none)
	done    chan struct{}

	mu           sync.Mutex
	stopping     bool
	exited       bool
	exit         rt.Exit
	exitReported bool
	stats        rt.Stats
	statsN       int
	statsErr     string
	lastCPU      time.Duration
}

// Platform implements bench.Platform on this host.
type Platform struct {
	o       Options
	m       *machine.Profile
	rtm     rt.Runtime
	dock    *docker.Runtime
	rdt     RDT
	run     string
	network string
	start   time.Time
	jr      *journal.Journal // this instance's record of what it changes on the mount
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu     sync.Mutex
	jobs   map[int]*job
	notes  []string
	closed bool
	noIPCE string // why IPCE cannot be measured here ("" it can)
	noL2   string // why L2 misses cannot be counted here ("" they can)

	prefix string                    // names this instance's resctrl groups (colo.<run>.)
	want   map[string]plan.Want      // per job (tenant j<ID>), the allocation it asked for
	placed map[string]plan.Placement // per job, where the planner put it
	planMu sync.Mutex                // one plan at a time
}

var (
	_ bench.Platform        = (*Platform)(nil)
	_ bench.CounterReporter = (*Platform)(nil)
	_ bench.QuotaSetter     = (*Platform)(nil)
)

// New prepares the host for bm: it takes the host lock, removes what a crashed colo left
// behind, connects to the runtime and resctrl, and detects the machine. bm.Machine is
// replaced by the detected host (the run loop places jobs on the real CPUs).
func New(bm *bench.Benchmark, o Options) (*Platform, error) {
	if o.Image == "" {
		o.Image = docker.DefaultImage
	}
	if o.Runtime == "" {
		o.Runtime = os.Getenv("COLO_RUNTIME")
	}
	if o.Runtime == "" {
		o.Runtime = "docker"
	}
	if o.StateDir == "" {
		o.StateDir = "/run/colo"
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 2 * time.Second
	}
	if o.StartGrace <= 0 {
		o.StartGrace = 150 * time.Millisecond
	}
	if o.ResctrlRoot == "" {
		o.ResctrlRoot = os.Getenv("COLO_RESCTRL_ROOT")
	}
	p := &Platform{o: o, jobs: map[int]*job{},
		run:  fmt.Sprintf("%d-%d", runStamp(), os.Getpid()),
		want: map[string]plan.Want{}, placed: map[string]plan.Placement{}}
	p.prefix = resctrl.DefaultPrefix + p.run + "."
	if o.Prefix != "" {
		p.prefix = o.Prefix
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			p.cancel()
			if p.jr != nil {
				p.jr.Close()
			}
		}
	}()
	// resctrl
	switch {
	case o.RDT != nil:
		p.rdt = o.RDT
	case o.ResctrlRoot == "none":
		p.notef("resctrl: disabled; no cache/bandwidth allocation or monitoring")
	default:
		root := o.ResctrlRoot
		explicit := root != ""
		if root == "" {
			root = "/sys/fs/resctrl"
		}
		if _, err := os.Stat(filepath.Join(root, "info")); err != nil {
			if explicit {
				return nil, fmt.Errorf("--resctrl-root %s: not a resctrl mount (no info directory): %v", root, err)
			}
			p.notef("resctrl: not mounted at %s; no cache/bandwidth allocation or monitoring (colo doctor explains; --resctrl-root DIR uses an emulator mount)", root)
		} else {
			r, err := resctrl.OpenAdapter(root)
			if err != nil {
				return nil, fmt.Errorf("resctrl at %s: %w", root, err)
			}
			p.rdt = r
		}
	}
	// runtime
	switch {
	case o.Runtime0 != nil:
		p.rtm = o.Runtime0
	case o.Runtime == "docker":
		l := ownLabels()
		l[rt.LabelRun] = p.run
		d, err := docker.New(p.ctx, docker.Options{Labels: l})
		if err != nil {
			return nil, err
		}
		p.dock, p.rtm = d, d
	case o.Runtime == "process":
		l := ownLabels()
		l[rt.LabelRun] = p.run
		pr, err := process.New(process.Options{StateDir: filepath.Join(o.StateDir, "process"), Labels: l})
		if err != nil {
			return nil, err
		}
		p.rtm = pr
	default:
		return nil, fmt.Errorf("runtime %q: use docker or process", o.Runtime)
	}
	// the journal first: whatever this instance creates from now on is recorded before
	jroot := ""
	if p.rdt != nil {
		jroot = p.rdt.Root()
	}
	jr, err := journal.Open(o.StateDir, jroot, journal.Record{Instance: p.run, Kind: "colo run", Prefix: p.prefix, Run: p.run})
	if err != nil {
		p.rtm.Close()
		return nil, err
	}
	p.jr = jr
	if err := p.reconcile(); err != nil {
		p.rtm.Close()
		return nil, fmt.Errorf("cleaning up after an earlier colo run: %w", err)
	}
	if p.dock != nil {
		p.network = "colo-" + p.run
		if err := p.jr.SetRun(p.run, p.network); err != nil {
			p.rtm.Close()
			return nil, err
		}
		if err := p.dock.UseNetwork(p.ctx, p.network); err != nil {
			p.rtm.Close()
			return nil, err
		}
	}
	// machine
	rroot := ""
	if p.rdt != nil {
		rroot = p.rdt.Root()
	}
	m, err := o.Machine, error(nil)
	if m == nil {
		m, err = machine.Detect("/sys", rroot)
	}
	if err != nil {
		p.teardown()
		return nil, fmt.Errorf("detect this machine: %w", err)
	}
	if percentMBA(m) {
		p.notef("resctrl at %s describes Intel MBA (percent, min %d step %d) on this %s CPU (an emulator mount): MBA is in percent", rroot, m.MBA.Min, m.MBA.Gran, m.Vendor)
	}
	p.m = m
	if bm != nil {
		bm.Machine = m
	}
	if p.noIPCE, p.noL2 = p.probeCounters(); p.noIPCE != "" {
		p.notef("IPCE unavailable: %s; IPC/IPCE are reported as unavailable and the dynamic scheduler does not probe allocations", p.noIPCE)
	}
	if p.noL2 != "" {
		p.notef("L2 misses unavailable: %s; they stay 0 and VP's memory factor uses LLC references instead", p.noL2)
	}
	p.start = time.Now()
	ok = true
	if o.Opened != nil {
		o.Opened(p)
	}
	return p, nil
}

var (
	stampMu   sync.Mutex
	lastStamp int64
)

// runStamp is the time part of a run's name: Unix milliseconds, distinct for every
// platform of this process (two platforms in one millisecond get two stamps).
func runStamp() int64 {
	stampMu.Lock()
	defer stampMu.Unlock()
	lastStamp = max(time.Now().UnixMilli(), lastStamp+1)
	return lastStamp
}

// percentMBA corrects a machine detected on an AMD CPU whose resctrl mount describes
// Intel's MBA: machine.Detect takes the MBA unit from the CPU vendor (AMD: 1/8 GB/s, 2048
// unlimited), but the kernel's AMD info/MB has a granularity of 1, while Intel's (and the
// emulator's intel profile, which a VM on an AMD host mounts) is a percentage step of
// 10 (anchors.md §4). It reports whether it changed m.
func percentMBA(m *machine.Profile) bool {
	if m.MBA == nil || m.MBA.Unit != machine.MBAEighthGBps || m.MBA.Gran <= 1 {
		return false
	}
	m.MBA.Unit, m.MBA.Max = machine.MBAPercent, 100
	return true
}

// probeCounters opens perf counters on colo's own cgroup, as Start will on each job's,
// and says why IPCE cannot be measured (it needs hardware cycles and the
// microarchitecture's stall-cycles raw event) and why L2 misses cannot be counted (the
// microarchitecture's raw L2-miss event); "" when they open.
func (p *Platform) probeCounters() (noIPCE, noL2 string) {
	cg, err := rt.CgroupOfPID(os.Getpid())
	if err != nil {
		why := "perf: colo's own cgroup: " + err.Error()
		return why, why
	}
	cpu := 0
	if cpus, err := machine.ParseCPUList(readTrim("/sys/devices/system/cpu/online")); err == nil && len(cpus) > 0 {
		cpu = cpus[0]
	}
	c, err := perf.OpenCgroup(cg.PerfEventDir(), []int{cpu}, perf.Options{Sys: p.o.PerfSys, Microarch: p.o.Microarch, Quiet: true})
	if err != nil {
		return err.Error(), err.Error()
	}
	defer c.Close()
	if c.Mode() != perf.ModeHardware {
		why := fmt.Sprintf("perf counts %s events only (%s)", c.Mode(), c.Reason())
		return why, why
	}
	noIPCE = "no " + perf.StallsTotal + " raw event for this CPU (perf/events.yaml)"
	noL2 = "no raw L2-miss event for this CPU (perf/events.yaml l2_miss)"
	for _, e := range c.Events() {
		switch e {
		case perf.StallsTotal:
			noIPCE = ""
		case perf.L2Misses:
			noL2 = ""
		}
	}
	return noIPCE, noL2
}

// L2MissesUnavailable returns "" when jobs' L2 misses are counted (a hardware PMU and
// the microarchitecture's raw L2-miss event, perf/events.yaml), else why not; then
// bench.Counters.L2Misses stay 0, which sched.Sample documents as "no such counter".
func (p *Platform) L2MissesUnavailable() string { return p.noL2 }

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// IPCEUnavailable implements bench.CounterReporter: why this host's counters cannot give
// IPCE ("" when they can).
func (p *Platform) IPCEUnavailable() string { return p.noIPCE }

func (p *Platform) notef(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	p.mu.Lock()
	p.notes = append(p.notes, s)
	p.mu.Unlock()
	p.o.Logf("linux: %s", s)
}

// Notes returns what the platform recorded about unavailable sources, unexpected
// exits and cleanup, in order.
func (p *Platform) Notes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.notes...)
}

// RunID is the label value (colo.run) of everything this platform created.
func (p *Platform) RunID() string { return p.run }

// reconcile removes what a previous colo left: containers and networks labelled by a
// colo process of this PID namespace that no longer exists, owned resctrl groups, and
// system/default masks it had changed (restored).
func (p *Platform) reconcile() error {
	var errs []error
	// runs whose journal says their process lives (this process's other platforms too)
	live := map[string]bool{}
	rs, err := journal.ListAll(p.o.StateDir)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Alive() && r.Run != "" {
			live[r.Run], live[r.Network] = true, true
		}
	}
	mine := map[string]string{labelPlatform: "linux", labelPIDNS: pidNamespace()}
	ws, err := p.rtm.List(p.ctx, mine)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if live[w.Labels[rt.LabelRun]] || alive(w.Labels[labelPID]) {
			continue // a live run's (this process's, another colo process's)
		}
		if err := p.rtm.Remove(p.ctx, w.ID); err != nil && !errors.Is(err, rt.ErrNotFound) && !strings.Contains(err.Error(), "already in progress") {
			errs = append(errs, err)
			continue
		}
		p.notef("removed %s left by an earlier colo run (%s, run %s)", w.Name, w.State, w.Labels[rt.LabelRun])
	}
	if p.dock != nil {
		nets, err := p.dock.ListNetworks(p.ctx, mine)
		if err != nil {
			errs = append(errs, err)
		}
		for _, n := range nets {
			if live[n] || alive(networkPID(n)) {
				continue
			}
			if err := p.dock.RemoveNetwork(p.ctx, n); err != nil {
				errs = append(errs, err)
				continue
			}
			p.notef("removed network %s left by an earlier colo run", n)
		}
	}
	// resctrl: only what the journals of dead instances on this mount recorded (and
	// their records; a live instance's groups, another agent's or a user's are kept)
	var fsys resctrl.FS
	root := ""
	if p.rdt != nil {
		fsys, root = p.rdt.Client().FS(), p.rdt.Root()
	}
	if len(errs) == 0 {
		done, err := journal.Reconcile(fsys, p.o.StateDir, root, true)
		if err != nil {
			errs = append(errs, err)
		}
		for _, u := range done {
			if len(u.Removed) > 0 || u.Default != "" || u.DefaultLeft != "" {
				p.notef("undid what an earlier colo run left: %s", u)
			}
		}
	}
	return errors.Join(errs...)
}

// Machine implements bench.Platform.
func (p *Platform) Machine() *machine.Profile { return p.m }

// Check implements bench.Platform: the job must name a command, and its image must be
// present locally (colo never pulls).
func (p *Platform) Check(j bench.JobSpec) error {
	args, err := SplitCommand(j.Command)
	if err != nil {
		return err
	}
	if len(args) == 0 && j.Image == "" {
		if j.Workload != "" {
			return fmt.Errorf("workload %q is a simulator model; on platform linux give image and/or command (e.g. command: stress compute --duration 60s)", j.Workload)
		}
		return errors.New("no image and no command: give image (default " + p.o.Image + ") and command")
	}
	img := p.image(j)
	if p.dock != nil {
		ok, err := p.dock.ImageExists(p.ctx, img)
		if err != nil {
			return err
		}
		if !ok {
			hint := "load or build it locally"
			if img == p.o.Image || strings.HasPrefix(img, "colo") {
				hint = "build it with `colo image build --tag " + img + "`"
			}
			return fmt.Errorf("image %q is not present locally and colo never pulls; %s", img, hint)
		}
	} else if j.Image != "" && j.Image != p.o.Image {
		return fmt.Errorf("image %q: the process runtime can only run colo's own workloads (image %s) or a command", j.Image, p.o.Image)
	}
	return nil
}

func (p *Platform) image(j bench.JobSpec) string {
	if j.Image != "" {
		return j.Image
	}
	return p.o.Image
}

// SplitCommand splits a command line into words: blanks separate, single and double
// quotes group, backslash escapes (no variable expansion: there is no shell).
func SplitCommand(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	esc := false
	for _, r := range s {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case r == '\\' && quote != '\'':
			esc, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("command %q: unterminated %c quote", s, quote)
	}
	if esc {
		return nil, fmt.Errorf("command %q: ends with a backslash", s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

func (p *Platform) get(id int) (*job, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, ok := p.jobs[id]
	if !ok {
		return nil, fmt.Errorf("job %d is not running", id)
	}
	return j, nil
}

// Start implements bench.Platform.
func (p *Platform) Start(js bench.JobSpec, cpus []int) error {
	if len(cpus) == 0 {
		return fmt.Errorf("job %s: no CPUs", js.Name)
	}
	args, err := SplitCommand(js.Command)
	if err != nil {
		return err
	}
	spec := rt.Spec{
		Name:    fmt.Sprintf("colo-%s-j%d-%s", p.run, js.ID, sanitize(js.Name)),
		Command: args, Env: js.Env, Cpuset: machine.FormatCPUList(cpus),
		Labels: map[string]string{rt.LabelRun: p.run, rt.LabelJob: js.Name},
	}
	if a := sanitize(js.Name); a != "" {
		spec.Aliases = []string{a}
	}
	if p.dock != nil {
		spec.Image = p.image(js)
	} else {
		self := p.o.Self
		if self == "" {
			self, _ = os.Executable()
		}
		if js.Image == "" || js.Image == p.o.Image {
			spec.Command = append([]string{self}, args...)
		}
	}
	rid, err := p.rtm.Create(p.ctx, spec)
	if err != nil {
		return fmt.Errorf("job %s: %w", js.Name, err)
	}
	undo := func() { p.rtm.Remove(context.Background(), rid) }
	if err := p.rtm.Start(p.ctx, rid); err != nil {
		undo()
		return fmt.Errorf("job %s: %w", js.Name, err)
	}
	// A workload that cannot start (wrong command, missing file) exits at once: wait a
	// moment for that before counting on it.
	wctx, wcancel := context.WithTimeout(p.ctx, p.o.StartGrace)
	_, werr := p.rtm.Wait(wctx, rid)
	wcancel()
	info, err := p.rtm.Inspect(p.ctx, rid)
	if err != nil {
		undo()
		return fmt.Errorf("job %s: %w", js.Name, err)
	}
	if werr == nil || info.State != rt.Running {
		msg := p.output(rid)
		undo()
		return fmt.Errorf("job %s: its container exited at once (%s)%s; check the image and command %q", js.Name, info.Exit, msg, js.Command)
	}
	j := &job{spec: js, rid: rid, cpus: append([]int(nil), cpus...), socket: p.m.SocketOfCore(cpus[0]), cg: info.Cgroup, done: make(chan struct{})}
	p.openCounters(j)
	p.mu.Lock()
	p.jobs[js.ID] = j
	p.mu.Unlock()
	p.joinRDT(j)
	p.wg.Add(1)
	go p.watch(j)
	if js.Data.Docker {
		p.wg.Add(1)
		go p.statsLoop(j)
	}
	return nil
}

func (p *Platform) output(rid string) string {
	var out string
	if p.dock != nil {
		out, _ = p.dock.Logs(context.Background(), rid, 5)
	} else if pr, ok := p.rtm.(*process.Runtime); ok {
		out, _ = pr.Output(rid)
	}
	if out == "" {
		return ""
	}
	return "; it printed: " + strings.ReplaceAll(strings.TrimSpace(out), "\n", " | ")
}

func (p *Platform) openCounters(j *job) {
	c, err := perf.OpenCgroup(j.cg.PerfEventDir(), j.cpus, perf.Options{Sys: p.o.PerfSys, Microarch: p.o.Microarch, Logf: p.o.Logf})
	if err != nil {
		p.notef("job %s: perf counters unavailable: %v; continuing with runtime CPU time", j.spec.Name, err)
	} else {
		j.counter = c
	}
	if j.counter == nil || j.counter.Mode() != perf.ModeSoftware {
		if ct, err := rt.OpenCPUTime(j.cg); err == nil {
			j.cputime = ct
		} else {
			p.notef("job %s: CPU time unavailable: %v", j.spec.Name, err)
		}
	}
}

func (p *Platform) closeCounters(j *job) {
	if j.counter != nil {
		j.counter.Close()
		j.counter = nil
	}
	if j.cputime != nil {
		j.cputime.Close()
		j.cputime = nil
	}
}

// watch records how a job's workload ended.
func (p *Platform) watch(j *job) {
	defer p.wg.Done()
	defer close(j.done)
	ex, err := p.rtm.Wait(p.ctx, j.rid)
	if err != nil {
		return // platform closing
	}
	j.mu.Lock()
	stopping := j.stopping
	j.exited, j.exit = true, ex
	j.mu.Unlock()
	if !stopping {
		p.notef("job %s: its container ended before colo stopped it: %s%s", j.spec.Name, ex, p.output(j.rid))
	}
}

// Stop implements bench.Platform: the job's counters, resctrl groups and container go.
func (p *Platform) Stop(id int) error {
	j, err := p.get(id)
	if err != nil {
		return err
	}
	p.mu.Lock()
	delete(p.jobs, id)
	p.mu.Unlock()
	return p.stopJob(j)
}

func (p *Platform) stopJob(j *job) error {
	j.mu.Lock()
	j.stopping = true
	j.mu.Unlock()
	var errs []error
	p.closeCounters(j)
	if err := p.leaveRDT(j); err != nil {
		errs = append(errs, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.o.StopGrace+10*time.Second)
	defer cancel()
	if err := p.rtm.Stop(ctx, j.rid, p.o.StopGrace); err != nil && !errors.Is(err, rt.ErrNotFound) {
		errs = append(errs, err)
	}
	if err := p.rtm.Remove(ctx, j.rid); err != nil && !errors.Is(err, rt.ErrNotFound) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Move implements bench.Platform: new cpuset, counters reopened on the new CPUs (counts
// carried over), and back to system/default.
func (p *Platform) Move(id int, cpus []int) error {
	j, err := p.get(id)
	if err != nil {
		return err
	}
	if err := p.rtm.SetCpuset(p.ctx, j.rid, machine.FormatCPUList(cpus)); err != nil {
		return fmt.Errorf("job %s: %w", j.spec.Name, err)
	}
	c, _ := p.read(j)
	j.base = c
	p.closeCounters(j)
	j.cpus, j.socket = append([]int(nil), cpus...), p.m.SocketOfCore(cpus[0])
	p.openCounters(j)
	if j.quota > 0 && j.quota < 1 { // the quota is per core: it follows the job's core count
		if err := p.SetQuota(id, j.quota); err != nil {
			return err
		}
	}
	if p.rdt != nil { // back to system/default, its monitoring group on the new socket
		p.setWant(id, func(w *plan.Want) { w.Socket, w.Mask, w.MBA = j.socket, 0, 0 })
		if err := p.replan(); err != nil {
			return fmt.Errorf("job %s: %w", j.spec.Name, err)
		}
		p.syncTasks(j)
	}
	return nil
}

// SetQuota implements bench.QuotaSetter: job id may run quota ∈ (0, 1] of its cores'
// time, a CFS bandwidth limit on its cgroup (runtime.CFSQuota over runtime.CFSPeriod;
// Docker: the container's CPUQuota/CPUPeriod, process runtime: cpu.cfs_quota_us or
// cpu.max). 1 removes the limit. A later Move keeps the fraction on the new cores.
func (p *Platform) SetQuota(id int, quota float64) error {
	j, err := p.get(id)
	if err != nil {
		return err
	}
	if !(quota > 0 && quota <= 1) {
		return fmt.Errorf("job %s: CPU quota %v: want a fraction in (0, 1] of its cores' time", j.spec.Name, quota)
	}
	qs, ok := p.rtm.(rt.QuotaSetter)
	if !ok {
		return fmt.Errorf("job %s: the %s runtime cannot limit CPU time", j.spec.Name, p.rtm.Name())
	}
	q, err := rt.CFSQuota(quota, len(j.cpus), rt.CFSPeriod)
	if err != nil {
		return fmt.Errorf("job %s: %w", j.spec.Name, err)
	}
	if err := qs.SetCPUQuota(p.ctx, j.rid, q, rt.CFSPeriod); err != nil {
		return fmt.Errorf("job %s: %w", j.spec.Name, err)
	}
	j.quota = quota
	return nil
}

// Read implements bench.Platform. It syncs the container's threads into its resctrl
// groups, then returns cumulative counters. Without hardware counters, instructions,
// cycles and stalls stay 0, so IPC and IPCE come out unavailable (NaN), never 0. A job
// whose container ended on its own gets one error saying so; later reads return its
// last counts.
func (p *Platform) Read(id int) (bench.Counters, error) {
	j, err := p.get(id)
	if err != nil {
		return bench.Counters{}, err
	}
	j.mu.Lock()
	exited, reported, ex := j.exited, j.exitReported, j.exit
	if exited {
		j.exitReported = true
	}
	j.mu.Unlock()
	if !exited {
		p.syncTasks(j)
	}
	c, err := p.read(j)
	if exited && !reported {
		return c, fmt.Errorf("its container ended before colo stopped it (%s); counters stop here", ex)
	}
	return c, err
}

func (p *Platform) read(j *job) (bench.Counters, error) {
	c := j.base
	if j.counter != nil {
		if _, err := j.counter.Sample(); err != nil {
			p.notef("job %s: perf read failed: %v; perf counters dropped for this job", j.spec.Name, err)
			j.counter.Close()
			j.counter = nil
		}
	}
	if j.counter != nil {
		t := j.counter.Totals()
		c.Instructions += t[perf.Instructions]
		c.Cycles += t[perf.Cycles]
		c.StallsTotal += t[perf.StallsTotal]
		c.StallsL3Miss += t[perf.StallsL3Miss]
		c.L2Misses += t[perf.L2Misses] // absent (0) without the raw event
		c.LLCReferences += t[perf.CacheReferences]
		c.LLCMisses += t[perf.CacheMisses]
		if v, ok := t[perf.TaskClock]; ok {
			c.CPUTime += time.Duration(v)
		}
	}
	if j.cputime != nil {
		if ns, err := j.cputime.Read(); err == nil {
			j.lastCPU = time.Duration(ns)
		}
		c.CPUTime = j.base.CPUTime + j.lastCPU
	}
	pl := p.placement(j.spec.ID)
	mon := pl.Mon
	if mon == "" {
		mon = pl.Group // monitored with its control group (no RMID left)
	}
	if p.rdt != nil && (mon != "" || pl.Mon != "") {
		occ, tot, loc, err := p.rdt.MonData(mon)
		if err == nil {
			c.LLCOccupancy, c.MBMTotalBytes, c.MBMLocalBytes = float64(occ), float64(tot), float64(loc)
		}
	}
	return c, nil
}

// Now implements bench.Platform: wall-clock time since the platform started.
func (p *Platform) Now() time.Duration { return time.Since(p.start) }

// Advance implements bench.Platform: it waits for the wall clock.
func (p *Platform) Advance(t time.Duration) error {
	d := t - p.Now()
	if d <= 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-p.ctx.Done():
		return errors.New("platform closed")
	}
}

// DockerStats returns the latest runtime statistics sample of a job and how many were
// taken (the one-shot stats endpoint for Docker, cgroup files for processes).
func (p *Platform) DockerStats(id int) (rt.Stats, int, error) {
	j, err := p.get(id)
	if err != nil {
		return rt.Stats{}, 0, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stats, j.statsN, nil
}

// statsLoop polls the runtime statistics of one job (when its data block selects docker)
// until the job stops. dockerd 20.10 answers a one-shot call at its collector's next 1 s
// tick, so each job has its own loop and the effective rate is at most 1 Hz there.
func (p *Platform) statsLoop(j *job) {
	defer p.wg.Done()
	freq := j.spec.Data.Frequency
	if freq <= 0 {
		freq = time.Second
	}
	for {
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		s, err := p.rtm.Stats(ctx, j.rid)
		cancel()
		j.mu.Lock()
		stopping := j.stopping || j.exited
		if err == nil {
			j.stats, j.statsN = s, j.statsN+1
		}
		first := err != nil && j.statsErr == ""
		if err != nil {
			j.statsErr = err.Error()
		}
		j.mu.Unlock()
		if stopping {
			return
		}
		if first && p.ctx.Err() == nil {
			p.notef("job %s: runtime stats unavailable: %v (retrying)", j.spec.Name, err)
		}
		wait := freq - time.Since(t0)
		if wait < time.Millisecond {
			wait = time.Millisecond
		}
		select {
		case <-p.ctx.Done():
			return
		case <-j.done:
			return
		case <-time.After(wait):
		}
	}
}

// Close implements bench.Platform: every job's container and resctrl groups go, the
// default schemata is restored, the network removed, the lock released.
func (p *Platform) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	js := make([]*job, 0, len(p.jobs))
	for _, j := range p.jobs {
		js = append(js, j)
	}
	p.jobs = map[int]*job{}
	p.mu.Unlock()
	var errs []error
	for _, j := range js {
		if err := p.stopJob(j); err != nil {
			errs = append(errs, err)
		}
	}
	if err := p.teardown(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (p *Platform) teardown() error {
	var errs []error
	p.cancel()
	p.wg.Wait()
	if p.rdt != nil {
		removed, err := p.rdt.RemoveGroups(p.own)
		if err != nil {
			errs = append(errs, err)
		}
		for _, g := range removed {
			if err := p.jr.DropGroup(g); err != nil {
				errs = append(errs, err)
			}
		}
		if d := p.jr.Record().Default; d != "" {
			if err := p.rdt.RestoreDefault(d); err != nil {
				errs = append(errs, fmt.Errorf("restore system/default: %w", err))
			} else if err := p.jr.ClearDefault(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if p.dock != nil && p.network != "" {
		if err := p.dock.RemoveNetwork(context.Background(), p.network); err != nil {
			errs = append(errs, err)
		}
	}
	if p.rtm != nil {
		p.rtm.Close()
	}
	if len(errs) == 0 && p.jr != nil {
		if err := p.jr.Close(); err != nil { // everything undone: the record goes
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
