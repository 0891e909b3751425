package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"colo/bench"

	"github.com/spf13/cobra"
)

func init() {
	var (
		out      string
		compare  string
		asJSON   bool
		noStore  bool
		schedArg string
		rcRoot   string
		platform string
		dbWait   time.Duration
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run BENCH.yaml",
		Short: "Run a benchmark trace under one or more schedulers (the thesis orchestrator)",
		Long: `colo run replays a benchmark (docs/bench.md): containers arriving from a static or
seeded generated trace, placed by a scheduler, probed for their minimal exclusive LLC
ways and memory bandwidth, sampled by collectors. The default platform is the
simulated testbed (platform: sim, machine icx-4314-2s): an hour of virtual time runs in
seconds. Every run writes a fresh directory under runs/ (or --out) holding the samples,
allocations, probe segments and decisions; the summary is printed at the end.
--platform linux runs the same benchmark on this host: Docker containers, perf per
cgroup, resctrl (--resctrl-root DIR for an emulator mount); see docs/linux.md.`,
		Example: `  colo run examples/thesis/high-utilization.yaml --compare least-loaded,dynamic
  colo run examples/thesis/low-demand.yaml --compare least-loaded,dynamic --json
  colo run my-bench.yaml --scheduler dynamic --out runs/try1
  colo run examples/linux/colocation.yaml --platform linux --resctrl-root /tmp/rdt`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if interval < 0 {
				return badInputf("--interval %v: must be ≥ 0", interval)
			}
			if noStore && out != "" {
				return badInputf("--out %s and --no-store exclude each other", out)
			}
			if dbWait < 0 {
				return badInputf("--db-wait %v: must be ≥ 0", dbWait)
			}
			if platform != "" && !slices.Contains(bench.PlatformNames(), platform) {
				return badInputf("--platform %q: unknown platform (known: %s)", platform, strings.Join(bench.PlatformNames(), ", "))
			}
			bm, err := bench.Load(args[0])
			if err != nil {
				return badInput(err) // unreadable or invalid benchmark: file:line errors
			}
			if platform != "" {
				bm.Platform = platform // overrides benchmark.platform
			}
			bm.ResctrlRoot = rcRoot
			var names []string
			if schedArg != "" {
				names = []string{schedArg}
			}
			if compare != "" {
				if schedArg != "" {
					return badInputf("--scheduler and --compare exclude each other")
				}
				for _, n := range strings.Split(compare, ",") {
					if n = strings.TrimSpace(n); n == "" {
						return badInputf("--compare %q: an empty scheduler name (write names separated by single commas)", compare)
					}
					names = append(names, n)
				}
			}
			for _, n := range names {
				if err := bench.CheckScheduler(n); err != nil {
					return badInput(fmt.Errorf("--compare/--scheduler: %w", err))
				}
			}
			if err := bench.CheckOptions(bm, names); err != nil {
				return badInput(err)
			}
			stderr := c.ErrOrStderr()
			opt := bench.RunOptions{
				Warn:  func(w string) { fmt.Fprintln(stderr, "colo: warning:", w) },
				Wall:  time.Now,
				Hooks: (&runWatch{}).hooks(interval),
				// the simulated testbed runs the compared schedulers side by side
				Parallel: true,
			}
			ctx, cancel := signalContext(c)
			defer cancel()
			opt.Ctx = ctx
			var rs *runStore
			if !noStore {
				if rs, err = newRunStore(bm, out, os.Args); err != nil {
					return err
				}
				opt.Recorder = rs.recorder(bm)
				defer leaveBehind(fmt.Sprintf("run directory %s (incomplete)", rs.dir))()
			} else if bm.DB != nil {
				fmt.Fprintln(stderr, "colo: warning: --no-store: data.db is ignored (the sink streams what the run directory records)")
			}
			if bm.Platform != "sim" {
				defer leaveBehind("this run's containers, Docker network and resctrl groups, and changed default masks: remove them with `colo cleanup`")()
			}
			rep, err := bench.RunAll(bm, names, opt)
			var influx *bench.SinkStats
			if rs != nil {
				if errors.Is(err, bench.ErrInterrupted) {
					rs.markInterrupted(context.Cause(ctx), stderr)
				}
				var cerr error
				if influx, cerr = rs.close(err == nil, dbWait, stderr); err == nil && cerr != nil {
					err = cerr
				}
			}
			if err != nil {
				var be *bench.Error
				if errors.As(err, &be) {
					return badInput(err)
				}
				return err
			}
			if rs != nil {
				rep.RunDir = rs.dir
			}
			rep.Influx = influx
			if asJSON {
				enc := json.NewEncoder(c.OutOrStdout())
				enc.SetIndent("", "  ")
				err = enc.Encode(rep)
			} else {
				err = rep.WriteTable(c.OutOrStdout())
			}
			if n := rep.StartFailures(); err == nil && n > 0 {
				// a job that never ran is a failed run, whatever the summary says
				return fmt.Errorf("%d job(s) could not be started (the warnings above say why)", n)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "run directory (default: a fresh timestamped directory under runs/)")
	fl.StringVar(&compare, "compare", "", "comma-separated schedulers to run the same trace under, side by side (e.g. least-loaded,dynamic)")
	fl.StringVar(&schedArg, "scheduler", "", "run under this scheduler instead of the file's scheduler.implementation")
	fl.BoolVar(&asJSON, "json", false, "print the summary as one JSON object (keys in docs/bench.md)")
	fl.BoolVar(&noStore, "no-store", false, "do not write a run directory")
	fl.StringVar(&platform, "platform", "", "run on this platform instead of the file's benchmark.platform: sim (simulated testbed) or linux (this host: Docker, perf, resctrl)")
	fl.StringVar(&rcRoot, "resctrl-root", "", "resctrl mount for platform: linux (default /sys/fs/resctrl); ignored on sim")
	fl.DurationVar(&dbWait, "db-wait", 10*time.Second, "with data.db: how long to wait at the end for InfluxDB to take the points still buffered (the rest is kept in the run directory)")
	fl.DurationVar(&interval, "interval", 0, "print a line of metrics per scheduler every DUR of the run's time (virtual on sim), like perf stat -I (e.g. 10s)")
	withRepeat(cmd, "run") // --repeat N: intervals over seeds (repeat.go)
	rootCmd.AddCommand(cmd)
}
