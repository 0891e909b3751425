package main

import (
	"fmt"
	"text/tabwriter"

	"colo/machine"
	"colo/policy/mbps"
	"colo/sim"
	"colo/sim/mbasweep"

	"github.com/spf13/cobra"
)

func init() {
	parent := &cobra.Command{
		Use:   "mbps",
		Short: "Memory bandwidth in MB/s: the closed loop from a request to the MBA setting (policy/mbps)",
	}
	var (
		machineName string
		curve       string
		seed        uint64
		noise       float64
		periods     int
		asJSON      bool
		noQuota     bool
	)
	sweep := &cobra.Command{
		Use:   "sweep",
		Short: "Requests from 10 % to 90 % of a socket's bandwidth on the twin: achieved, convergence, overshoot, against the plain MBA setting",
		Long: `colo mbps sweep puts a bandwidth hog on every core of socket 0 of the simulated machine,
requests 10 % … 90 % of the socket's bandwidth through the MB/s loop (one controller per L3
domain, the request split by water filling on each domain's demand) and reports, per
request: the bandwidth achieved (MBM, mean of the last five 1 s periods), the first second
from which every period stays within the kernel selftest's 8 %, the largest overshoot,
the final MBA values and CPU quota — and what the plain MBA setting that nominally means
the request gives. --curve under-throttle replaces the twin's linear percentage rule by
sim.UnderThrottleMBACurve (docs/sim.md). Deterministic by --seed.`,
		Example: `  colo mbps sweep --machine icx-4314-2s --curve under-throttle
  colo mbps sweep --machine epyc-7543 --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			m, err := machine.Get(machineName)
			if err != nil {
				return badInput(err)
			}
			o := sim.Options{Seed: seed, Noise: noise}
			switch curve {
			case "linear":
			case "under-throttle":
				o.MBACurve = sim.UnderThrottleMBACurve
			default:
				return badInputf("--curve %q: want linear or under-throttle", curve)
			}
			mo := mbps.DefaultOptions()
			mo.Quota = !noQuota
			rows, err := mbasweep.Run(mbasweep.Config{Machine: m, Sim: o, Periods: periods, Mbps: &mo})
			if err != nil {
				return badInput(err)
			}
			if asJSON {
				return writeJSON(c.OutOrStdout(), rows)
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(tw, "request\tMB/s\tachieved\terror\tconverged\tovershoot\tstate\tquota\tplain MBA\tplain achieved\tplain error\t\n")
			for _, r := range rows {
				fmt.Fprintf(tw, "%.0f %%\t%.0f\t%.0f\t%+.1f %%\t%d s\t%.1f %%\t%s\t%.2f\t%d\t%.0f\t%+.1f %%\t\n",
					100*r.Fraction, r.Requested, r.Achieved, 100*r.Error, r.ConvergedS, 100*r.Overshoot, r.State, r.Quota,
					r.NominalValue, r.NominalAchieved, 100*r.NominalError)
			}
			return tw.Flush()
		},
	}
	sweep.Flags().StringVar(&machineName, "machine", "icx-4314-2s", "machine profile (colo machine list)")
	sweep.Flags().StringVar(&curve, "curve", "linear", "percentage MBA response of the twin: linear or under-throttle")
	sweep.Flags().Uint64Var(&seed, "seed", 1, "seed of the counter noise")
	sweep.Flags().Float64Var(&noise, "noise", 0.01, "relative counter noise")
	sweep.Flags().IntVar(&periods, "periods", 40, "1 s periods per request")
	sweep.Flags().BoolVar(&asJSON, "json", false, "print the rows as JSON")
	sweep.Flags().BoolVar(&noQuota, "no-quota", false, "MBA only: do not trim with a CPU quota")
	parent.AddCommand(sweep)
	rootCmd.AddCommand(parent)
}
