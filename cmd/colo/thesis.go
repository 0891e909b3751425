package main

import (
	"encoding/json"
	"path/filepath"

	"colo/bench"
	"colo/internal/progress"

	"github.com/spf13/cobra"
)

func init() {
	var (
		dir    string
		asJSON bool
		repeat int
	)
	cmd := &cobra.Command{
		Use:   "thesis",
		Short: "The thesis's three scenarios on the twin, side by side with the thesis's figures",
		Long: `colo thesis runs examples/thesis/{low-demand,high-utilization,exceeding-demand}.yaml
under least-loaded and dynamic (no run directory) and prints the comparison table of
docs/thesis.md: the thesis's figure, colo's, the difference and its known cause. Gains are
in percentage points of IPCE (docs/thesis.md says why). The output is deterministic: the
same files give the same bytes.`,
		Example: `  colo thesis > table.md
  colo thesis --json
  colo thesis --repeat 5`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if repeat < 1 || repeat > maxRepeat {
				return badInputf("--repeat %d: want 1 to %d", repeat, maxRepeat)
			}
			if repeat > 1 {
				return thesisRepeat(c, dir, repeat, asJSON)
			}
			var reps []*bench.Report
			for _, sc := range bench.ThesisScenarios {
				bm, err := bench.Load(filepath.Join(dir, sc.File))
				if err != nil {
					return badInput(err)
				}
				rep, err := bench.RunAll(bm, []string{"least-loaded", "dynamic"}, bench.RunOptions{Hooks: (&runWatch{}).hooks(0), Parallel: true})
				if err != nil {
					return err
				}
				reps = append(reps, rep)
			}
			rows, err := bench.ThesisCompare(reps)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(c.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			return bench.WriteThesisMarkdown(c.OutOrStdout(), rows)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "examples/thesis", "directory holding the three scenario files")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the rows as JSON")
	cmd.Flags().IntVar(&repeat, "repeat", 1, "run each scenario under N seeds (trace seed + 0..N−1, in parallel) and print colo's gains as paired means with 95 % intervals next to the thesis's")
	rootCmd.AddCommand(cmd)
}

// thesisRepeat is colo thesis --repeat N: the gains over N seeds per scenario.
func thesisRepeat(c *cobra.Command, dir string, n int, asJSON bool) error {
	names := []string{"least-loaded", "dynamic"}
	bar := progress.Start(int64(n*len(bench.ThesisScenarios)), "thesis --repeat", progress.Unit("runs"))
	defer bar.Done()
	var reps []*bench.RepeatReport
	for _, sc := range bench.ThesisScenarios {
		bm, err := bench.Load(filepath.Join(dir, sc.File))
		if err != nil {
			return badInput(err)
		}
		r, err := bench.Repeat(bm, n, 0, -1, bench.RunMetrics,
			func(_ int, b *bench.Benchmark) (bench.Replica, error) { return bench.RunReplica(b, names) }, func() { bar.Add(1) })
		if err != nil {
			return err
		}
		reps = append(reps, r)
	}
	bar.Done()
	rows, err := bench.ThesisRepeat(reps)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.OutOrStdout(), rows)
	}
	return bench.WriteThesisRepeatMarkdown(c.OutOrStdout(), rows)
}
