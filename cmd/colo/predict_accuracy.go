package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"colo/predict/simprof"

	"github.com/spf13/cobra"
)

func addAccuracy(pc *cobra.Command) {
	var (
		mach, workloads, reporter string
		reporterLLC               float64
		seed                      uint64
		appWays                   int
		asJSON                    bool
	)
	c := &cobra.Command{
		Use:   "accuracy",
		Short: "Predicted vs simulated pairwise slowdown, unpartitioned and under a partition (the docs/predict.md table)",
		Long: `On the simulated machine: profiles every workload (sensitivity curve on the thesis's
SoI, per-ways curve alone, contentiousness score on the reporter curve), co-runs every ordered
pair with the whole LLC shared and with the application in its --app-ways low ways and the
competitor in the rest, and compares the measured normalised performance with the prediction
(predict.PredictUnder). Errors are in percentage points of isolated performance (thesis
Eq. 7.1: positive = too optimistic). Deterministic by --seed.`,
		Example: `  colo predict accuracy
  colo predict accuracy --machine skx-6138 --app-ways 4 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := simprof.NewRunner(mach, seed)
			if err != nil {
				return badInput(err)
			}
			switch reporter {
			case "alternating", "random", "streaming":
				r.ReporterType = reporter
			default:
				return badInputf("--reporter %q: alternating, random or streaming", reporter)
			}
			if reporterLLC > 0 {
				r.ReporterMB = reporterLLC * float64(r.Profile.LLC.SizeBytes) / 1e6
			}
			names := simprof.AccuracyWorkloads
			if workloads != "" {
				names = strings.Split(workloads, ",")
			}
			if len(names) < 2 {
				return badInputf("--workloads: at least two")
			}
			a, err := r.Accuracy(names, simprof.AccuracyDials, appWays)
			if err != nil {
				return badInput(err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(a)
			}
			return printAccuracy(cmd.OutOrStdout(), a)
		},
	}
	f := c.Flags()
	f.StringVar(&mach, "machine", "icx-4314-2s", "simulated machine profile")
	f.Uint64Var(&seed, "seed", 1, "simulation seed")
	f.IntVar(&appWays, "app-ways", 6, "ways of the application's partition (the competitor gets the others)")
	f.StringVar(&workloads, "workloads", "", "comma-separated simulated workloads (default: "+strings.Join(simprof.AccuracyWorkloads, ",")+")")
	f.StringVar(&reporter, "reporter", "alternating", "reporter design: alternating (thesis Type 3), random (Type 2) or streaming (Type 1)")
	f.Float64Var(&reporterLLC, "reporter-llc", 0, "reporter footprint in LLCs (0: the runner's default, 2 × LLC)")
	f.BoolVar(&asJSON, "json", false, "print the table as JSON")
	pc.AddCommand(c)
}

func printAccuracy(w io.Writer, a simprof.Accuracy) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "app\tcompetitor\tscore MB\tmeasured\tpredicted\tpartitioned measured\tpredicted")
	for _, p := range a.Pairs {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.3f\t%.3f\t%.3f\t%.3f\n", p.App, p.Competitor, p.Score, p.Measured, p.Predicted, p.PartMeasured, p.PartPredict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s seed %d, %s reporter of %.1f MB, %d pairs; application in %d of %d ways under the partition\n", a.Machine, a.Seed, a.Reporter, a.ReporterMB, len(a.Pairs), a.AppWays, a.TotalWays)
	for _, s := range []struct {
		n string
		v float64
		x float64
		m float64
	}{{"unpartitioned", a.Unpartitioned.MeanAbs, a.Unpartitioned.Max, a.Unpartitioned.Min}, {"partitioned", a.Partitioned.MeanAbs, a.Partitioned.Max, a.Partitioned.Min}} {
		fmt.Fprintf(w, "%-14s mean |error| %.2f pp, worst %+.2f / %+.2f pp\n", s.n, s.v, s.x, s.m)
	}
	return nil
}
