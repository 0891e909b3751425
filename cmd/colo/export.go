package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"colo/store"
	"colo/store/export"

	"github.com/spf13/cobra"
)

func init() {
	var format, out string
	cmd := &cobra.Command{
		Use:   "export RUN_DIR",
		Short: "Export a run directory's tables as CSV, JSON Lines or Parquet",
		Long: `Writes one file per table of the run directory (runs, jobs, samples, allocations,
events, probes, partitions, partition_apps, summaries) for pandas, DuckDB or a
spreadsheet. Column names are stable (docs/report.md). Unavailable values are empty
(CSV), null (JSON) or null (Parquet); times are nanoseconds from the run's start.`,
		Example: `  colo export runs/20260122-101500 --format parquet
  colo export runs/20260122-101500 --format csv -o /tmp/csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(export.Formats, format) {
				return badInputf("--format %q: use one of %s", format, strings.Join(export.Formats, ", "))
			}
			st, err := store.Open(args[0])
			if err != nil {
				return badInput(err)
			}
			defer st.Close()
			if out == "" {
				out = filepath.Join(args[0], "export-"+format)
			}
			files, err := export.Export(st, out, format)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TABLE\tROWS\tBYTES\tFILE")
			for _, f := range files {
				fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", f.Table, f.Rows, f.Bytes, f.Path)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if missing, err := st.Missing(); err == nil && len(missing) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "colo: warning: incomplete run directory:\n  %s\n", strings.Join(missing, "\n  "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "csv", "csv, json (JSON Lines) or parquet")
	cmd.Flags().StringVarP(&out, "output", "o", "", "output directory (default RUN_DIR/export-FORMAT)")
	rootCmd.AddCommand(cmd)
}
