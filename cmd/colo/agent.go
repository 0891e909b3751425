package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"colo/agent"
	"colo/agent/api"
	"colo/agent/core"
	"colo/agent/discovery"
	"colo/agent/discovery/docker"
	"colo/agent/discovery/nri"
	"colo/agent/host"
	"colo/bench"
	"colo/machine"
	"colo/resctrl"
	"colo/resctrl/journal"
	"colo/sched"
	"colo/workload"
)

type agentFlags struct {
	resctrlRoot string
	listen      string
	policy      string
	options     string
	interval    time.Duration
	monInterval time.Duration
	mbmPeriod   time.Duration
	profiles    string
	stateDir    string
	runtime     string
	logFormat   string
	logLevel    string
	noPerf      bool
	defaultWays string
	nriSocket   string
	selectTerms []string
	process     processFlags
	prof        profileFlags
}

func init() {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Node daemon: monitor and partition the containers of this host (Docker, containerd NRI, plain cgroups)",
		Long: `colo agent follows the containers that Docker (or containerd through NRI) runs on
this host, gives each one a resctrl monitoring group, lets an online policy (the same
schedulers as colo run: static-cat, dynamic, dcat, lfoc+, vp) decide their cache and
memory-bandwidth allocations, and serves Prometheus /metrics, /healthz and a JSON API
under /api/v1/. Containers say what they need with labels (colo.io/class =
priority | batch | best-effort, colo.io/target-ipce, colo.io/llc-ways, colo.io/mba).
With --runtime process it follows plain processes instead: every child cgroup of
--cgroup-parent that holds a process is a tenant, labelled from --labels-dir.

SIGTERM/SIGINT return every container to system/default, remove the agent's groups and
restore system/default's schemata exactly; after a kill -9 the next start undoes what
the journal under --state-dir records. See docs/agent.md.`,
		Example: `  colo agent --policy static-cat
  colo agent --resctrl-root /tmp/emu --state-dir /tmp/colo-agent --interval 100ms
  colo agent status --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAgent(cmd.Context(), f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.resctrlRoot, "resctrl-root", "", "resctrl mount (default $COLO_RESCTRL_ROOT or /sys/fs/resctrl; an emulator mount works)")
	fl.StringVar(&f.listen, "listen", "127.0.0.1:9464", "HTTP address for /metrics, /healthz and /api/v1/")
	fl.StringVar(&f.policy, "policy", "", "online policy (default static-cat, or the --policy-options file's implementation): "+strings.Join(sched.Names(), ", "))
	fl.StringVar(&f.options, "policy-options", "", "YAML file with a scheduler block (the keys of a benchmark's benchmark.scheduler)")
	fl.DurationVar(&f.interval, "interval", time.Second, "sampling and decision period (at least 20ms)")
	fl.DurationVar(&f.mbmPeriod, "mbm-period", 5*time.Second, "on a mount with fewer assignable MBM counters than containers: how long a container holds one before the rotation moves it on (priority containers always hold one)")
	fl.DurationVar(&f.monInterval, "mon-interval", time.Second, "how often each container's resctrl monitoring counters (occupancy, MBM) are read; 0: every --interval")
	fl.StringVar(&f.profiles, "profiles", "", "a colo predict data directory (Bubble-Up profiles): containers whose image has one get colo_predicted_slowdown")
	fl.StringVar(&f.stateDir, "state-dir", journal.DefaultStateDir(), "where the journal of the agent's resctrl changes lives (shared with colo run: one administrator's default per mount)")
	fl.StringVar(&f.runtime, "runtime", "docker", "what to follow: docker, nri (containerd) or process (child cgroups of --cgroup-parent)")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format on stderr: text or json")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.StringVar(&f.nriSocket, "nri-socket", nri.DefaultSocket, "containerd's NRI socket (--runtime nri)")
	fl.StringArrayVar(&f.selectTerms, "select", nil, "manage only containers with this label, KEY or KEY=VALUE (repeat: all must match; default every container)")
	addProcessFlags(fl, &f.process)
	fl.StringVar(&f.defaultWays, "default-ways", core.DefaultFloor, "ways system/default always keeps for everything not in a managed container: N or a share (20%: a fifth, at least 2), the top of the administrator's default")
	fl.BoolVar(&f.noPerf, "no-perf", false, "do not open perf events per container (CPU time only)")
	addProfileFlags(fl, &f.prof)
	cmd.AddCommand(agentStatusCmd())
	cmd.AddCommand(agentProfilesCmd())
	cmd.Annotations = signalIsStop // a daemon: SIGTERM is its normal stop, exit 0
	rootCmd.AddCommand(cmd)
}

// checkPrivileges refuses a non-root agent unless root is a writable emulator mount.
func checkPrivileges(root string) error {
	if os.Geteuid() == 0 {
		return nil
	}
	if root != resctrl.DefaultRoot && unix.Access(root, unix.W_OK) == nil {
		return nil
	}
	return fmt.Errorf("colo agent must run as root to change %s (run it with sudo or as a systemd service); a non-root agent needs --resctrl-root pointing at a writable emulator mount (colo resctrl emulate)", root)
}

func runAgent(ctx context.Context, f agentFlags) error {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(f.logLevel)); err != nil {
		return badInputf("--log-level %q: use debug, info, warn or error", f.logLevel)
	}
	var h slog.Handler
	switch f.logFormat {
	case "text":
		h = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv})
	case "json":
		h = slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lv})
	default:
		return badInputf("--log-format %q: use text or json", f.logFormat)
	}
	log := slog.New(h)
	if f.interval < 20*time.Millisecond {
		return badInputf("--interval %v: at least 20ms", f.interval)
	}
	if f.monInterval < 0 {
		return badInputf("--mon-interval %v: 0 (every --interval) or a duration", f.monInterval)
	}
	sel, err := core.ParseSelector(f.selectTerms)
	if err != nil {
		return badInput(err)
	}
	pred, err := agentPredictor(f.profiles)
	if err != nil {
		return err
	}
	var disc discovery.Source
	switch f.runtime {
	case "docker":
		disc = &docker.Source{Log: log}
	case "nri", "process":
		nd, err := newDiscovery(f, log)
		if err != nil {
			return err
		}
		disc = nd
	default:
		return badInputf("--runtime %q: use docker, nri or process", f.runtime)
	}
	root := resctrl.ResolveRoot(f.resctrlRoot)
	if _, err := os.Stat(filepath.Join(root, "info")); err != nil {
		return fmt.Errorf("resctrl is not mounted at %s (%v); mount it (mount -t resctrl resctrl /sys/fs/resctrl) or give --resctrl-root of an emulator mount (colo resctrl emulate)", root, err)
	}
	if err := checkPrivileges(root); err != nil {
		return err
	}
	m, err := machine.Detect("/sys", root)
	if err != nil {
		return fmt.Errorf("detect this machine: %w", err)
	}
	if host.PercentMBA(m) {
		log.Info("resctrl describes percentage MBA on this CPU (an emulator mount): MBA is in percent", "root", root)
	}
	if f.policy == "" && f.options == "" {
		f.policy = "static-cat"
	}
	cfg, err := bench.LoadScheduler(f.options, m, f.policy)
	if err != nil {
		var es bench.Errors
		if errors.As(err, &es) {
			return badInput(err)
		}
		return err
	}
	// the host's floor: the top ways of the administrator's default stay with
	// system/default; the policy is told by a reserve_ways that keeps them
	floor, err := core.ParseFloor(f.defaultWays, m.LLC.Ways)
	if err != nil {
		return badInput(err)
	}
	admin := agent.AdminMask(m, adminDefault(f.stateDir, root))
	hostWays, reserve := core.HostReserve(m, admin, floor)
	if reserve >= m.LLC.Ways {
		return badInputf("--default-ways %s: the administrator's system/default %#x leaves the policy no way outside the floor %#x", f.defaultWays, admin, hostWays)
	}
	cfg.ReserveWays = max(cfg.ReserveWays, reserve)
	cpus, _ := workload.OnlineCPUs()
	env := sched.Env{Machine: m, Config: cfg, CPUQuotaUnavailable: "colo agent does not throttle containers it did not start"}
	counters := "cgroup CPU time (--no-perf)"
	if f.noPerf {
		env.IPCEUnavailable = "--no-perf"
	} else {
		var hw bool
		hw, env.IPCEUnavailable = host.ProbePerf(cpus)
		if hw {
			counters = "hardware perf events per cgroup + CPU time"
		} else {
			// software events say no more than the cgroup's CPU time: not opened
			f.noPerf = true
			counters = "cgroup CPU time (no hardware PMU)"
		}
	}
	s, err := sched.New(cfg.Implementation, env)
	if err != nil {
		return badInput(err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("--listen %s: the address is already in use (another colo agent? `colo agent status` asks it); choose another with --listen", f.listen)
		}
		return fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	defer ln.Close()
	lock, err := agent.TakeLock(f.stateDir, root)
	if err != nil {
		return err
	}
	defer lock.Release()
	instance := agent.NewInstance()
	g, err := agent.OpenResctrl(root, instance)
	if err != nil {
		return fmt.Errorf("resctrl at %s: %w", root, err)
	}
	g.Domains = m.LLCDomains()
	jr, err := agent.OpenJournal(f.stateDir, root, instance)
	if err != nil {
		return err
	}
	// an exit at once (a signal after the stop began) leaves these: say so
	defer leaveBehind(fmt.Sprintf("the agent's resctrl groups (prefix %s) and system/default as it set them, recorded in %s: `colo cleanup --state-dir %s` undoes them", agent.GroupPrefix(instance), jr.Record().File(), f.stateDir))()
	prof, err := agentProfiler(f, m, log)
	if err != nil {
		return err
	}
	ao := agent.Options{Machine: m, Scheduler: s, Groups: g, Journal: jr, Discovery: disc,
		Host:     &host.Linux{CPUs: cpus, NoPerf: f.noPerf, Logf: func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }},
		Interval: f.interval, MonInterval: f.monInterval, MBMPeriod: f.mbmPeriod, Select: sel, Predictor: pred, StateDir: f.stateDir, Log: log,
		HostAdmin: admin, HostReserveWays: cfg.ReserveWays}
	if prof != nil {
		ao.Profiler = prof
	}
	a, err := agent.New(ao)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: agentHandler(a.Status, 10*f.interval+5*time.Second, prof), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	if ctx == nil {
		ctx = context.Background()
	}
	// SIGTERM/SIGINT cancel ctx (main's watch, or this one when run outside main)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("colo agent started", "policy", s.Name(), "interval", f.interval, "runtime", disc.Name(), "select", sel.String(), "resctrl", root,
		"listen", ln.Addr().String(), "instance", instance, "default_ways", fmt.Sprintf("%d (%#x of the administrator's %#x)", floor, hostWays, admin), "journal", jr.Record().File(), "machine", m.Name, "ipce", ipceWord(env.IPCEUnavailable), "counters", counters)
	if prof != nil {
		pctx, pstop := context.WithCancel(ctx)
		defer pstop()
		go prof.Run(pctx)
	}
	err = a.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	srv.Shutdown(sctx)
	cancel()
	if err != nil {
		return err
	}
	log.Info("colo agent stopped cleanly")
	intr.stopped() // SIGTERM is how a daemon is stopped: exit 0 after the clean shutdown
	return nil
}

func ipceWord(why string) string {
	if why == "" {
		return "measured"
	}
	return "unavailable: " + why
}

func agentStatusCmd() *cobra.Command {
	var addr string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Ask a running colo agent for its state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, raw, err := fetchStatus(addr)
			if err != nil {
				return err
			}
			if asJSON {
				_, err := cmd.OutOrStdout().Write(raw)
				return err
			}
			return writeTop(cmd.OutOrStdout(), st)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:9464", "the agent's --listen address")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print /api/v1/status as JSON")
	return cmd
}

// fetchStatus reads /api/v1/status of the agent at addr.
func fetchStatus(addr string) (api.Status, []byte, error) {
	var st api.Status
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + api.Version + "/status")
	if err != nil {
		return st, nil, fmt.Errorf("no colo agent answers at %s (%v); start one with `colo agent` or give --addr", addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return st, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return st, nil, fmt.Errorf("agent at %s: %s: %s", addr, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, nil, fmt.Errorf("agent at %s: bad status: %w", addr, err)
	}
	return st, b, nil
}

// adminDefault is the administrator's system/default schemata on the mount root: the one
// an instance sharing stateDir recorded (what the mount shows may be its squeezed value),
// else the mount's ("" when unreadable).
func adminDefault(stateDir, root string) string {
	if rs, err := journal.List(stateDir, root); err == nil {
		for _, r := range rs {
			if r.Default != "" {
				return r.Default
			}
		}
	}
	b, _ := os.ReadFile(filepath.Join(root, "schemata"))
	return string(b)
}
