package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"colo/sink"
	"colo/store"
	"colo/store/export"

	"github.com/spf13/cobra"
)

func init() {
	var format, out string
	var influx sink.Config
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
			if !slices.Contains(export.Formats, format) && format != "influx" {
				return badInputf("--format %q: use one of %s, influx", format, strings.Join(export.Formats, ", "))
			}
			st, err := store.Open(args[0])
			if err != nil {
				return badInput(err)
			}
			defer st.Close()
			if format == "influx" {
				return exportInflux(cmd, st, influx, args[0])
			}
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
	cmd.Flags().StringVar(&format, "format", "csv", "csv, json (JSON Lines), parquet, or influx (send to InfluxDB)")
	env, _ := sink.ConfigFromEnv()
	influx = env
	cmd.Flags().StringVar(&influx.Host, "influx-host", env.Host, "InfluxDB URL for --format influx (default $INFLUXDB_HOST)")
	cmd.Flags().StringVar(&influx.Database, "influx-db", env.Database, "1.x database or 2.x bucket (default $INFLUXDB_BUCKET)")
	cmd.Flags().StringVar(&influx.Org, "influx-org", env.Org, "2.x organisation: selects the 2.x API (default $INFLUXDB_ORG)")
	cmd.Flags().IntVar(&influx.API, "influx-api", 0, "1 or 2 (default: 2 when an organisation is given)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "output directory (default RUN_DIR/export-FORMAT)")
	rootCmd.AddCommand(cmd)
}

// exportInflux sends a run directory to InfluxDB; undelivered points go to
// RUN_DIR/influx-undelivered.lp and are reported.
func exportInflux(cmd *cobra.Command, st *store.Store, cfg sink.Config, dir string) error {
	cfg.SpoolPath = filepath.Join(dir, sink.SpoolFile)
	cfg.Block = true // a finished run: keep pace with the database rather than spool
	s, err := sink.New(cfg)
	if err != nil {
		return badInput(err)
	}
	t0 := time.Now()
	if err := s.PushRun(st); err != nil {
		s.Close(context.Background())
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stats, err := s.Close(ctx)
	el := time.Since(t0).Seconds()
	fmt.Fprintf(cmd.OutOrStdout(), "influx: %d points delivered in %d requests (%d retries) in %.2f s (%.0f points/s)\n",
		stats.Delivered, stats.Requests, stats.Retries, el, float64(stats.Delivered)/el)
	if stats.Undelivered > 0 {
		return fmt.Errorf("%d of %d points were not delivered (kept in %s; last error: %s)",
			stats.Undelivered, stats.Queued, stats.SpoolPath, stats.LastError)
	}
	return err
}
