package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"colo/bench"

	// The online controllers register their schedulers (dcat, static-cat, lfoc+, vp).
	_ "colo/policy/dcat"
	_ "colo/policy/lfocplus"
	_ "colo/policy/vp"

	"github.com/spf13/cobra"
)

type compareFlags struct {
	schedulers string
	format     string
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
that one file configures every controller; plain keys go to every scheduler but shared.`,
		Example: `  colo compare examples/dcat/fig15-mlr-mload.yaml
  colo compare examples/vp/victim-aggressor-hog.yaml --schedulers shared,vp --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd.OutOrStdout(), args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.schedulers, "schedulers", "shared,static-cat,dcat,lfoc+,vp", "comma-separated schedulers to compare (shared = least-loaded without RDT)")
	cmd.Flags().StringVar(&f.format, "format", "table", "output format: table or json")
	withRepeat(cmd, "compare") // --repeat N: intervals over seeds (repeat.go)
	rootCmd.AddCommand(cmd)
}

func runCompare(w io.Writer, file string, f compareFlags) error {
	if f.format != "table" && f.format != "json" {
		return badInputf("--format %q: use table or json", f.format)
	}
	bm, err := bench.Load(file)
	if err != nil {
		return badInput(err)
	}
	var names []string
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
	rows, err := bench.Compare(bm, names)
	if err != nil {
		var be *bench.Error
		if errors.As(err, &be) {
			return badInput(err)
		}
		return err
	}
	if f.format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"benchmark": bm.Name, "schedulers": rows})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scheduler\tSTP\tANTT\tunfairness\tworst slowdown\treconfig\treconfig/min\tmoved ways\t\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%.1f\t%d\t\n", r.Name, r.STP, r.ANTT, r.Unfairness, r.WorstSlowdown,
			r.Reconfigurations, r.ReconfigPerMin, r.MovedWays)
	}
	return tw.Flush()
}
