package main

import (
	"encoding/json"
	"fmt"
	"math"
	"text/tabwriter"

	"colo/policy"
	"colo/profile"

	"github.com/spf13/cobra"
)

type classOut struct {
	Name           string  `json:"name"`
	Class          string  `json:"class"`
	SlowdownAt1    float64 `json:"slowdown_1way"`
	MaxSlowdownGE2 float64 `json:"max_slowdown_2plus"`
	MaxLLCMPKC     float64 `json:"max_llcmpkc"`
}

func init() {
	var th thresholdFlags
	var profiles, workload, format string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "classify",
		Short: "Classify applications as streaming, sensitive or light-sharing (LFOC+ Table 1)",
		Long: `classify applies LFOC+'s Table 1 to per-ways profiles:
  streaming  S(w) <= 1.03 and LLCMPKC(w) >= T at some w, and S(w) < 1.06 at every w
  sensitive  not streaming and S(w) >= 1.05 at some w >= 2
  light      otherwise
with T = 10 (paper, --thresholds paper) or 14 (PBBCache, --thresholds pbbcache).`,
		Example: `  colo classify --thresholds pbbcache
  colo classify --workload lbm06,xalancbmk06,povray06 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := th.get()
			if err != nil {
				return err
			}
			var set *profile.Set
			if profiles == "" {
				set, err = profile.Default()
			} else {
				set, err = profile.LoadFile(profiles)
			}
			if err != nil {
				return badInput(err)
			}
			names := set.Names()
			if workload != "" {
				if names, err = profile.SplitWorkload(workload); err != nil {
					return badInput(fmt.Errorf("--workload: %w", err))
				}
			}
			apps, err := set.Lookup(names)
			if err != nil {
				return badInput(fmt.Errorf("--workload: %w", err))
			}
			var out []classOut
			for i, a := range apps {
				o := classOut{Name: names[i], Class: policy.Classify(a, t).String(), SlowdownAt1: a.Value(profile.Slowdown, 1)}
				for w := 1; w <= a.Ways(); w++ {
					if w >= 2 {
						o.MaxSlowdownGE2 = math.Max(o.MaxSlowdownGE2, a.Value(profile.Slowdown, w))
					}
					o.MaxLLCMPKC = math.Max(o.MaxLLCMPKC, a.Value(profile.LLCMPKC, w))
				}
				out = append(out, o)
			}
			format, err := outputFormat(asJSON, format, "table", "json", "csv")
			if err != nil {
				return err
			}
			switch format {
			case "csv":
				fmt.Fprintln(cmd.OutOrStdout(), "name,class,slowdown_1_way,max_slowdown_ge2_ways,max_llcmpkc")
				for _, o := range out {
					fmt.Fprintf(cmd.OutOrStdout(), "%s,%s,%.6f,%.6f,%.6f\n", o.Name, o.Class, o.SlowdownAt1, o.MaxSlowdownGE2, o.MaxLLCMPKC)
				}
				return nil
			case "json":
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"thresholds": t, "apps": out})
			case "table":
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "NAME\tCLASS\tS(1)\tMAX S(w>=2)\tMAX LLCMPKC")
				for _, o := range out {
					fmt.Fprintf(w, "%s\t%s\t%.3f\t%.3f\t%.2f\n", o.Name, o.Class, o.SlowdownAt1, o.MaxSlowdownGE2, o.MaxLLCMPKC)
				}
				return w.Flush()
			}
			return badInputf("--format %q: want table or json", format)
		},
	}
	th.register(cmd)
	cmd.Flags().StringVar(&profiles, "profiles", "", "per-ways profiles in metrics.csv format (default: the embedded PBBCache data)")
	cmd.Flags().StringVar(&workload, "workload", "", "comma-separated benchmarks (default: every benchmark of the profiles)")
	cmd.Flags().StringVar(&format, "format", "table", "table, json (= --json) or csv")
	jsonFlag(cmd.Flags(), &asJSON)
	rootCmd.AddCommand(cmd)
}
