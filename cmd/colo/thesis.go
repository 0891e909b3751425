package main

import (
	"encoding/json"
	"path/filepath"

	"colo/bench"

	"github.com/spf13/cobra"
)

func init() {
	var (
		dir    string
		asJSON bool
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
  colo thesis --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var reps []*bench.Report
			for _, sc := range bench.ThesisScenarios {
				bm, err := bench.Load(filepath.Join(dir, sc.File))
				if err != nil {
					return badInput(err)
				}
				rep, err := bench.RunAll(bm, []string{"least-loaded", "dynamic"}, bench.RunOptions{Hooks: (&runWatch{}).hooks(0)})
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
	rootCmd.AddCommand(cmd)
}
