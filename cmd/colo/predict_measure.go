package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"colo/internal/progress"
	"colo/predict"
	"colo/predict/measure"

	"github.com/spf13/cobra"
)

func addScore(pc *cobra.Command) {
	f := &predictFlags{}
	var write bool
	c := &cobra.Command{
		Use:   "score",
		Short: "Contentiousness scores of the competitors (optionally measuring the reporter next to --app)",
		Long: `Converts each competitor's reporter latency (contentiousness.csv) into its score on the
reporter curve. With --runtime process --app NAME=CMD, first measures the reporter while
each application runs in the background and adds it to contentiousness.csv, and writes
contentiousness_scores.csv (without --runtime only with --write). A non-monotone reporter curve is reported with
how each affected score was chosen.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := f.methodValue()
			if err != nil {
				return badInput(err)
			}
			if f.runtime != "" {
				apps, r, _, err := f.measureSetup(cmd.ErrOrStderr(), true)
				if err != nil {
					return err
				}
				if _, err := f.load(); err != nil { // the reporter curve must exist first
					return badInput(err)
				}
				ctx, cancel := signalContext(cmd)
				defer cancel()
				if err := measureErr(measure.Contention(ctx, r, measure.Dir(f.dir), apps)); err != nil {
					return err
				}
			}
			d, err := f.load()
			if err != nil {
				return badInput(err)
			}
			if len(d.Contention) == 0 {
				return badInputf("%s: no %s to score; measure it with --runtime process --app NAME=CMD", d.Source, predict.ContentionFile)
			}
			ss := predict.ScoreAll(d, m)
			if write || f.runtime != "" {
				if f.dir == "" {
					return badInputf("--write needs --data DIR (the embedded data set is read-only)")
				}
				if err := writeScores(f, ss); err != nil {
					return err
				}
			}
			w := cmd.OutOrStdout()
			if f.asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"method": m, "scores": ss, "warnings": append([]string{}, d.Warnings...)})
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "COMPETITOR\tREPORTER LATENCY\tSCORE MB\tNOTE")
			for _, s := range ss {
				fmt.Fprintf(tw, "%s\t%.6g\t%.4g\t%s\n", s.Competitor, s.Latency, s.MB, s.Note)
			}
			tw.Flush()
			printWarnings(w, d.Warnings)
			return nil
		},
	}
	f.data(c)
	f.live(c)
	c.Flags().BoolVar(&write, "write", false, "write contentiousness_scores.csv into --data DIR (always done after measuring)")
	pc.AddCommand(c)
}

func addTrainReporter(pc *cobra.Command) {
	f := &predictFlags{}
	c := &cobra.Command{
		Use:     "train-reporter",
		Short:   "Measure the reporter curve: the reporter's score with the SoI at each dial",
		Example: `  colo predict train-reporter --data prof --runtime process --dials 0:112:16`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.runtime == "" {
				return badInputf("train-reporter measures: give --runtime process or --runtime sim")
			}
			_, r, dials, err := f.measureSetup(cmd.ErrOrStderr(), false)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext(cmd)
			defer cancel()
			return trainReporter(ctx, f, r, dials, cmd.OutOrStdout())
		},
	}
	f.data(c)
	f.live(c)
	c.Flags().Lookup("method").Hidden = true
	pc.AddCommand(c)
}

func addProfile(pc *cobra.Command) {
	f := &predictFlags{}
	var noScore bool
	var repeat int
	c := &cobra.Command{
		Use:   "profile",
		Short: "Profile applications for real: sensitivity curve against the SoI, and contentiousness",
		Long: `For each --app NAME=CMD: runs the SoI (in process, on --other-cpus) at every dial and
measures the application (on --app-cpus), writing sensitivity/NAME_data.csv; then measures
the reporter while the application runs in the background (contentiousness.csv) and scores
it (contentiousness_scores.csv). Trains the reporter first if --data has no reporter curve.

Performance without a hardware PMU (--metric): auto takes the application's own JSON line
{"cpu_rate": …} (work per CPU second, as colo stress --json prints), else {"rate": …}, else
the CPU time of one run; wall is the wall-clock time of one run. Stored values are
latency-like (ns per unit of work, or seconds per run): lower is better.`,
		Example: `  colo predict profile --data prof --runtime process \
      --app compute='colo stress compute --duration 2s --json' \
      --app random='colo stress random --mb 64 --duration 2s --json'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.runtime == "" {
				return badInputf("profile measures: give --runtime process or --runtime sim")
			}
			if repeat < 1 || repeat > maxRepeat {
				return badInputf("--repeat %d: want 1 to %d", repeat, maxRepeat)
			}
			apps, r, dials, err := f.measureSetup(cmd.ErrOrStderr(), true)
			if err != nil {
				return err
			}
			m, err := f.methodValue()
			if err != nil {
				return badInput(err)
			}
			ctx, cancel := signalContext(cmd)
			defer cancel()
			w := cmd.OutOrStdout()
			if f.asJSON {
				w = cmd.ErrOrStderr() // stdout holds the one JSON value
			}
			w = progress.Wrap(w) // the per-application lines come while the bar runs
			res := profileResult{Dir: f.dir, Curves: []profileCurve{}, Scores: []predict.Score{}, Warnings: []string{}}
			bar := profileBar(!measure.Dir(f.dir).HasReporterCurve(), len(apps), !noScore)
			defer bar.Done()
			if !measure.Dir(f.dir).HasReporterCurve() {
				bar.Describe("predict profile: train the reporter")
				if err := trainReporter(ctx, f, r, dials, w); err != nil {
					return err
				}
				bar.Add(1)
			}
			for _, a := range apps {
				bar.Describe("predict profile: " + a.Name)
				t0 := time.Now()
				if repeat > 1 { // predict_repeat.go
					if err := profileRepeated(ctx, f, r, a, dials, repeat, w); err != nil {
						return err
					}
					bar.Add(1)
					continue
				}
				curve, err := measure.Sensitivity(ctx, r, measure.Dir(f.dir), a, dials)
				if err := measureErr(err); err != nil {
					return err
				}
				fmt.Fprintf(w, "%s: sensitivity curve (%d dials) in %.3f s; normalised performance:", a.Name, len(dials), time.Since(t0).Seconds())
				pc := profileCurve{App: a.Name, DialsMB: curve.Dials}
				for i, d := range curve.Dials {
					np := predict.NormalisedPerf(curve.Perf[0], curve.Perf[i])
					pc.NormalisedPerf = append(pc.NormalisedPerf, np)
					fmt.Fprintf(w, " %v:%.3f", d, np)
				}
				res.Curves = append(res.Curves, pc)
				fmt.Fprintln(w)
				bar.Add(1)
			}
			if noScore {
				return res.write(f.asJSON, cmd.OutOrStdout())
			}
			bar.Describe("predict profile: contentiousness")
			if err := measureErr(measure.Contention(ctx, r, measure.Dir(f.dir), apps)); err != nil {
				return err
			}
			d, err := f.load()
			if err != nil {
				return badInput(err)
			}
			ss := predict.ScoreAll(d, m)
			if err := writeScores(f, ss); err != nil {
				return err
			}
			bar.Done()
			for _, s := range ss {
				fmt.Fprintf(w, "%s: reporter %.6g → contentiousness %.4g MB (%s)%s\n", s.Competitor, s.Latency, s.MB, m, noteSuffix(s.Note))
			}
			printWarnings(w, d.Warnings)
			res.Scores, res.Warnings = append(res.Scores, ss...), append(res.Warnings, d.Warnings...)
			return res.write(f.asJSON, cmd.OutOrStdout())
		},
	}
	f.data(c)
	f.live(c)
	c.Flags().BoolVar(&noScore, "no-score", false, "only the sensitivity curves")
	c.Flags().IntVar(&repeat, "repeat", 1, "measure each sensitivity curve N times (sim: noise seed + 0..N−1) and keep the mean with sd and 95 % CI per dial")
	pc.AddCommand(c)
}

// trainReporter measures the reporter curve and says how long it took.
func trainReporter(ctx context.Context, f *predictFlags, r predict.Measurer, dials []float64, w io.Writer) error {
	t0 := time.Now()
	d := measure.Dir(f.dir)
	if err := measureErr(measure.TrainReporter(ctx, r, d, dials)); err != nil {
		return err
	}
	fmt.Fprintf(w, "reporter curve: %d dials in %.3f s → %s\n", len(dials), time.Since(t0).Seconds(), d.Path(predict.ReporterFile))
	return nil
}

// writeScores writes contentiousness_scores.csv into --data.
func writeScores(f *predictFlags, ss []predict.Score) error {
	return measureErr(measure.Dir(f.dir).Write(predict.ScoresFile, func(w io.Writer) error { return predict.WriteScores(w, ss) }))
}

// profileResult is `colo predict profile --json`: the curves measured and the scores
// written into Dir (the per-application lines go to stderr).
type profileResult struct {
	Dir      string          `json:"data_dir"`
	Curves   []profileCurve  `json:"sensitivity"`
	Scores   []predict.Score `json:"scores"`
	Warnings []string        `json:"warnings"`
}

// profileCurve is one application's sensitivity curve: its performance at each reporter
// dial (MB of cache the reporter takes), normalised to the first dial.
type profileCurve struct {
	App            string    `json:"app"`
	DialsMB        []float64 `json:"dials_mb"`
	NormalisedPerf []float64 `json:"normalised_perf"`
}

func (r profileResult) write(asJSON bool, w io.Writer) error {
	if !asJSON {
		return nil
	}
	return writeJSON(w, r)
}
