package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"colo/bench"
	"colo/internal/progress"

	// The online controllers register their schedulers (dcat, static-cat, lfoc+, vp).
	_ "colo/policy/dcat"
	_ "colo/policy/guard"
	_ "colo/policy/lfocplus"
	_ "colo/policy/vp"

	"github.com/spf13/cobra"
)

type compareFlags struct {
	schedulers string
	format     string
	json       bool
	out        string
	noStore    bool
	interval   time.Duration
	ctx        context.Context // cancels the runs (SIGINT/SIGTERM); nil: never
	// schedulersSet: --schedulers was given (else a benchmark with SLOs gets
	// bench.GuardSchedulers)
	schedulersSet bool
}

func init() {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare BENCH.yaml",
		Short: "Run one scenario under several schedulers and compare STP, unfairness, worst slowdown and reconfigurations",
		Long: `compare runs the benchmark's trace once per scheduler on its platform (sim by default),
then every job alone, and prints per scheduler:

  STP          Σ 1/S_i over the jobs that ran (S_i = IPC alone / IPC in the run)
  unfairness   max S_i / min S_i
  worst        max S_i
  reconfig     ticks at which the scheduler changed allocations or moved jobs (per minute too)
  moved ways   ways whose cached lines repacking moved (dcat's contiguous layout)

"shared" is least-loaded placement with every job in system/default (no partitioning).
Scheduler options in the file may be prefixed (dcat.baseline, vp.window, lfoc+.…) so
that one file configures every controller; plain keys go to every scheduler but shared.
A benchmark with latency SLOs (slo_ms) or antagonists runs shared, static-cat-mba, dcat,
lfoc+, vp and guard by default and adds SLO violation seconds, best-effort throughput,
utilisation and antagonist precision (docs/controllers.md, the guard).
Like colo run, compare writes a run directory (runs/<time>-<name>, or --out DIR) with
every scheduler's samples, allocations and slowdowns: colo report and colo export read it.`,
		Example: `  colo compare examples/dcat/fig15-mlr-mload.yaml
  colo compare examples/vp/victim-aggressor-hog.yaml --schedulers shared,vp --json
  colo compare examples/dcat/fig15-mlr-mload.yaml --out runs/fig15 && colo report runs/fig15`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.ctx = cmd.Context()
			f.schedulersSet = cmd.Flags().Changed("schedulers")
			return runCompare(cmd.OutOrStdout(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.schedulers, "schedulers", "shared,static-cat,dcat,lfoc+,vp", "comma-separated schedulers to compare (shared = least-loaded without RDT)")
	fl.StringVar(&f.format, "format", "table", "output format: table, json (= --json) or csv")
	jsonFlag(fl, &f.json)
	fl.StringVar(&f.out, "out", "", "run directory (default: a fresh timestamped directory under runs/)")
	fl.BoolVar(&f.noStore, "no-store", false, "do not write a run directory")
	fl.DurationVar(&f.interval, "interval", 0, "print a line of metrics per scheduler every DUR of the run's time, like perf stat -I")
	withRepeat(cmd, "compare") // --repeat N: intervals over seeds (repeat.go)
	rootCmd.AddCommand(cmd)
}

// compareDoc is `colo compare --json`.
type compareDoc struct {
	Benchmark  string                   `json:"benchmark"`
	RunDir     string                   `json:"run_dir,omitempty"`
	Schedulers []bench.SchedulerOutcome `json:"schedulers"`
}

func runCompare(w io.Writer, file string, f compareFlags) error {
	format, err := outputFormat(f.json, f.format, "table", "json", "csv")
	if err != nil {
		return err
	}
	if f.interval < 0 {
		return badInputf("--interval %v: must be ≥ 0", f.interval)
	}
	bm, err := bench.Load(file)
	if err != nil {
		return badInput(err)
	}
	var names []string
	if !f.schedulersSet && bench.HasGuardMeasures(bm) {
		f.schedulers = bench.GuardSchedulers
	}
	for _, n := range strings.Split(f.schedulers, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if n != bench.Shared {
			if err := bench.CheckScheduler(n); err != nil {
				return badInputf("--schedulers: %v; or shared (least-loaded without RDT)", err)
			}
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return badInputf("--schedulers: name at least one scheduler")
	}
	cmp := bench.NewComparer()
	cmp.Hooks = (&runWatch{}).hooks(f.interval)
	cmp.Ctx = f.ctx
	var rs *runStore
	if !f.noStore {
		if rs, err = newRunStore(bm, f.out, os.Args); err != nil {
			return err
		}
		cmp.Record = rs.compareRecorder(bm)
	}
	doc := compareDoc{Benchmark: bm.Name}
	bar := progress.Start(int64(len(names)), "compare", progress.Unit("schedulers"))
	for _, n := range names {
		bar.Describe("compare: " + n)
		var row bench.SchedulerOutcome
		if row, err = cmp.Scheduler(bm, n); err != nil {
			break
		}
		doc.Schedulers = append(doc.Schedulers, row)
		bar.Add(1)
	}
	bar.Done()
	if rs != nil {
		if errors.Is(err, bench.ErrInterrupted) && f.ctx != nil {
			rs.markInterrupted(context.Cause(f.ctx), os.Stderr)
		}
		if _, cerr := rs.close(err == nil, 0, io.Discard); err == nil && cerr != nil {
			err = cerr
		}
		doc.RunDir = rs.dir
	}
	if err != nil {
		var be *bench.Error
		if errors.As(err, &be) {
			return badInput(err)
		}
		return err
	}
	switch format {
	case "json":
		return writeJSON(w, doc)
	case "csv":
		fmt.Fprintln(w, "scheduler,stp,antt,unfairness,worst_slowdown,reconfigurations,reconfigurations_per_minute,moved_ways,virtual_seconds")
		for _, r := range doc.Schedulers {
			fmt.Fprintf(w, "%s,%.6f,%.6f,%.6f,%.6f,%d,%.6f,%d,%.3f\n", r.Name, r.STP, r.ANTT, r.Unfairness, r.WorstSlowdown,
				r.Reconfigurations, r.ReconfigPerMin, r.MovedWays, r.VirtualSeconds)
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scheduler\tSTP\tANTT\tunfairness\tworst slowdown\treconfig\treconfig/min\tmoved ways\t\n")
	for _, r := range doc.Schedulers {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%.1f\t%d\t\n", r.Name, r.STP, r.ANTT, r.Unfairness, r.WorstSlowdown,
			r.Reconfigurations, r.ReconfigPerMin, r.MovedWays)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeGuardTable(w, doc.Schedulers); err != nil {
		return err
	}
	if doc.RunDir != "" {
		fmt.Fprintf(w, "results: %s (colo report %s)\n", doc.RunDir, doc.RunDir)
	}
	return nil
}

// writeGuardTable prints the SLO and best-effort measures (bench.GuardOutcome) of a
// benchmark with latency SLOs or antagonists; nothing otherwise.
func writeGuardTable(w io.Writer, rows []bench.SchedulerOutcome) error {
	if len(rows) == 0 || rows[0].GuardOutcome == nil {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scheduler\tSLO violation s\tafter 1st window\tBE throughput\tutilization\tantagonist precision\tthrottles\t\n")
	for _, r := range rows {
		g := r.GuardOutcome
		if g == nil {
			continue
		}
		prec := "-"
		if g.AntagonistPrecision != nil {
			prec = fmt.Sprintf("%.2f", *g.AntagonistPrecision)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f\t%.1f %%\t%s\t%d\t\n", r.Name, g.SLOViolationSeconds, g.SLOViolationSecondsAfterWindow,
			g.BEThroughput, 100*g.Utilization, prec, g.Throttles)
	}
	return tw.Flush()
}
