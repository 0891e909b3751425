package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"colo/report"

	"github.com/spf13/cobra"
)

func init() {
	var compare []string
	var out, title string
	var force bool
	cmd := &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "Render a run directory (and others to compare) as one self-contained HTML file",
		Long: `Writes one HTML file that opens from disk without any network access: a summary
table per scheduler, per-container time series (IPC, IPCE, stalled %, LLC occupancy,
memory bandwidth) with priority jobs highlighted, the L3 bitmask panel per socket,
probe segments and scheduler decisions, the CDF of time over target and, for
partition runs, STP versus unfairness. A killed run directory is rendered with a
note saying what is missing.`,
		Example: `  colo report runs/20260122-101500
  colo report runs/a --compare runs/b --compare runs/c -o compare.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dirs := append([]string{args[0]}, compare...)
			for _, d := range dirs {
				if st, err := os.Stat(d); err != nil || !st.IsDir() {
					return badInputf("%s is not a run directory: give a directory written by colo run (runs/<timestamp>/)", d)
				}
			}
			if out == "" {
				out = filepath.Join(args[0], "report.html") // colo's own file: rewritten
			} else if _, err := os.Stat(out); err == nil && !force {
				return badInputf("-o %s exists: not overwriting it (give --force to replace it)", out)
			}
			t0 := time.Now()
			var buf bytes.Buffer
			stats, err := report.Write(&buf, report.Options{Dirs: dirs, Title: title})
			if err != nil {
				return badInput(err)
			}
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d bytes, %d scheduler runs, %d jobs, %d samples, %d charts in %.2f s\n",
				out, buf.Len(), stats.Runs, stats.Jobs, stats.Samples, stats.Charts, time.Since(t0).Seconds())
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&compare, "compare", nil, "another run directory to compare (repeatable)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "HTML file to write (default RUN_DIR/report.html)")
	cmd.Flags().BoolVar(&force, "force", false, "replace the -o file if it exists")
	cmd.Flags().StringVar(&title, "title", "", "page title (default: the run's name)")
	rootCmd.AddCommand(cmd)
}
