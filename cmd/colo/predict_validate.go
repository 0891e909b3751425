package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"colo/predict"
	"colo/predict/measure"

	"github.com/spf13/cobra"
)

func addValidate(pc *cobra.Command) {
	f := &predictFlags{}
	c := &cobra.Command{
		Use:   "validate",
		Short: "Prediction errors against measured co-runs (validated.csv), end to end from the raw measurements",
		Long: `Scores every competitor from contentiousness.csv, predicts both directions of every
pair in validated.csv from the sensitivity curves, and compares with the measured co-runs
(actual1/actual2). Also reports the statistics of the predictions recorded in validated.csv
(expected1/expected2: for the embedded set, the predictions the thesis validated), of the
scores in contentiousness_scores.csv, and of every method.

With --runtime process --app NAME=CMD … it first measures the co-runs of every pair of the
given applications for real (isolated run, then with the other in the background) and writes
validated.csv, whose expected columns are the current predictions.`,
		Example: `  colo predict validate --json
  colo predict validate --data ../shared/data/bubbleup-spec2017 --method linear
  colo predict validate --data prof --runtime process --app compute='colo stress compute --duration 2s --json' --app random='colo stress random --mb 64 --duration 2s --json'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := f.methodValue()
			if err != nil {
				return badInput(err)
			}
			if f.runtime != "" {
				if err := measureCoRuns(cmd, f, m); err != nil {
					return err
				}
			}
			d, err := f.load()
			if err != nil {
				return badInput(err)
			}
			out, err := predict.Validate(d, m)
			if err != nil {
				return badInput(err)
			}
			if f.asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			return printValidate(cmd.OutOrStdout(), out)
		},
	}
	f.data(c)
	f.live(c)
	pc.AddCommand(c)
}

func fmtStats(s predict.Stats) string {
	return fmt.Sprintf("n=%d\tmedian %.2f\tP90 %.2f\tP95 %.2f\tP99 %.2f\tmean|ε| %.2f\tmean %+.2f\tmin %+.2f\tmax %+.2f",
		s.N, s.Median, s.P90, s.P95, s.P99, s.MeanAbs, s.Mean, s.Min, s.Max)
}

func printValidate(w io.Writer, o *predict.Validation) error {
	fmt.Fprintf(w, "data: %s\nmethod: %s\nconvention: %s\n\n", o.Source, o.Method, o.Convention)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "end to end (%s)\t%s\n", o.Method, fmtStats(o.Stats))
	fmt.Fprintf(tw, "  with diagonal zeros\t%s\n", fmtStats(o.WithDiagonalZeros))
	for _, m := range predict.Methods {
		if s, ok := o.Methods[string(m)]; ok && string(m) != o.Method {
			fmt.Fprintf(tw, "method %s\t%s\n", m, fmtStats(s))
		}
	}
	if o.RecordedScores != nil {
		fmt.Fprintf(tw, "recorded scores\t%s\n", fmtStats(o.RecordedScores.Stats))
	}
	if o.ThesisExpected != nil {
		fmt.Fprintf(tw, "validated predictions (expected*)\t%s\n", fmtStats(o.ThesisExpected.Stats))
		fmt.Fprintf(tw, "  with diagonal zeros\t%s\n", fmtStats(o.ThesisExpected.WithDiagonalZeros))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nscores (MB):")
	names := slices.Sorted(maps.Keys(o.Scores))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, n := range names {
		extra := ""
		if o.ThesisExpected != nil {
			if v, ok := o.ThesisExpected.InferredScores[n]; ok && v != o.Scores[n] {
				extra = fmt.Sprintf("\t(behind expected*: %v)", v)
			}
		}
		fmt.Fprintf(tw, "  %s\t%.4g%s\n", n, o.Scores[n], extra)
	}
	tw.Flush()
	for _, n := range names {
		if note := o.ScoreNotes[n]; note != "" {
			fmt.Fprintf(w, "note: %s: %s\n", n, note)
		}
	}
	files := slices.Sorted(maps.Keys(o.MeasurementColumns))
	for _, f := range files {
		fmt.Fprintf(w, "measurement: %s: %s\n", f, o.MeasurementColumns[f])
	}
	printWarnings(w, o.Warnings)
	return nil
}

// measureCoRuns measures the co-runs of every pair of --app and writes validated.csv.
func measureCoRuns(cmd *cobra.Command, f *predictFlags, m predict.Method) error {
	apps, r, _, err := f.measureSetup(cmd.ErrOrStderr(), true)
	if err != nil {
		return err
	}
	d, err := f.load()
	if err != nil {
		return badInput(err)
	}
	ctx, cancel := signalContext(cmd)
	defer cancel()
	return measureErr(measure.CoRuns(ctx, r, measure.Dir(f.dir), d, apps, m))
}
