package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"colo/predict"
	"colo/predict/measure"

	"github.com/spf13/cobra"
)

type predictOutput struct {
	predict.Predictions
	Notes    map[string]string `json:"score_notes,omitempty"`
	Warnings []string          `json:"warnings"`
}

func addPredictPairs(pc *cobra.Command) {
	f := &predictFlags{}
	var recorded, write bool
	c := &cobra.Command{
		Use:   "predict [APP COMPETITOR [COMPETITOR...]]",
		Short: "Predict every pair (or one pair, both directions; or one app next to several) from curves and scores",
		Long: `Predicts the normalised performance P̂(A | C) = t_A(0)/t_A(I_C) of every application A
with a sensitivity curve next to every competitor C with a reporter latency (or, with
--recorded, a score in contentiousness_scores.csv). With two names, prints that pair in both
directions. With --write, saves predictions.json into --data DIR. With more competitors, predicts APP next to all of them at once with Govindan et
al.'s reduction (the dial is the sum of their scores, saturating at the last dial).`,
		Example: `  colo predict predict 605.mcf_s 619.lbm_s
  colo predict predict --method linear --json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return badInputf("give APP and at least one COMPETITOR, or no names")
			}
			m, err := f.methodValue()
			if err != nil {
				return badInput(err)
			}
			d, err := f.load()
			if err != nil {
				return badInput(err)
			}
			var ss []predict.Score
			src := predict.ContentionFile
			if recorded {
				if !d.HasRecorded {
					return badInputf("%s: no %s for --recorded", d.Source, predict.ScoresFile)
				}
				src = predict.ScoresFile
				for n, v := range d.Recorded {
					ss = append(ss, predict.Score{Competitor: n, MB: v})
				}
				sort.Slice(ss, func(i, j int) bool { return ss[i].Competitor < ss[j].Competitor })
			} else {
				ss = predict.ScoreAll(d, m)
			}
			scores := predict.ScoreMap(ss)
			out := cmd.OutOrStdout()
			if len(args) == 2 {
				return printPair(cmd, d, scores, src, m, args[0], args[1], f.asJSON)
			}
			if len(args) > 2 {
				return printMulti(cmd, d, scores, src, m, args[0], args[1:], f.asJSON)
			}
			apps := d.Names()
			mat, err := predict.Matrix(d.Curves, apps, ss, m)
			if err != nil {
				return badInput(err)
			}
			res := predictOutput{Predictions: predict.Predictions{Method: m, Scores: scores, Predictions: map[string]map[string]float64{}}, Warnings: append([]string{}, d.Warnings...)}
			for i, a := range apps {
				res.Predictions.Predictions[a] = map[string]float64{}
				for j, s := range ss {
					res.Predictions.Predictions[a][s.Competitor] = mat[i][j]
				}
			}
			for _, s := range ss {
				if s.Note != "" {
					if res.Notes == nil {
						res.Notes = map[string]string{}
					}
					res.Notes[s.Competitor] = s.Note
				}
			}
			if write {
				if f.dir == "" {
					return badInputf("--write needs --data DIR (the embedded data set is read-only)")
				}
				if err := measureErr(measure.Dir(f.dir).Write(predict.PredictionsFile, func(w io.Writer) error {
					return predict.WritePredictions(w, res.Predictions)
				})); err != nil {
					return err
				}
			}
			if f.asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 1, ' ', tabwriter.AlignRight)
			fmt.Fprint(tw, "app \\ competitor (score MB)\t")
			for _, s := range ss {
				fmt.Fprintf(tw, "%s (%.4g)\t", s.Competitor, s.MB)
			}
			fmt.Fprintln(tw)
			for i, a := range apps {
				fmt.Fprintf(tw, "%s\t", a)
				for j := range ss {
					fmt.Fprintf(tw, "%.3f\t", mat[i][j])
				}
				fmt.Fprintln(tw)
			}
			tw.Flush()
			printWarnings(out, res.Warnings)
			return nil
		},
	}
	f.data(c)
	c.Flags().BoolVar(&recorded, "recorded", false, "use the scores in contentiousness_scores.csv instead of scoring the raw latencies")
	c.Flags().BoolVar(&write, "write", false, "write predictions.json into --data DIR")
	pc.AddCommand(c)
}

func printPair(cmd *cobra.Command, d *predict.Dataset, scores map[string]float64, src string, m predict.Method, a, c string, asJSON bool) error {
	type dir struct {
		App        string  `json:"app"`
		Competitor string  `json:"competitor"`
		ScoreMB    float64 `json:"score_mb"`
		Predicted  float64 `json:"predicted"`
		Slowdown   float64 `json:"slowdown"`
	}
	var out []dir
	for _, p := range [][2]string{{a, c}, {c, a}} {
		curve, ok := d.Curves[p[0]]
		if !ok {
			return badInputf("%s: %s has no sensitivity curve (%s/%s)", d.Source, p[0], predict.SensitivityDir, predict.CurveFileName(p[0]))
		}
		s, ok := scores[p[1]]
		if !ok {
			return badInputf("%s: competitor %s has no contentiousness score (not in %s)", d.Source, p[1], src)
		}
		v, err := predict.Predict(curve, s, m)
		if err != nil {
			return badInput(err)
		}
		out = append(out, dir{p[0], p[1], s, v, 1 / v})
	}
	w := cmd.OutOrStdout()
	if asJSON {
		return json.NewEncoder(w).Encode(out)
	}
	for _, o := range out {
		fmt.Fprintf(w, "%s next to %s (score %.4g MB): predicted performance %.4f of isolated (slowdown %.3f×)\n", o.App, o.Competitor, o.ScoreMB, o.Predicted, o.Slowdown)
	}
	return nil
}

func printMulti(cmd *cobra.Command, d *predict.Dataset, scores map[string]float64, src string, m predict.Method, app string, comps []string, asJSON bool) error {
	curve, ok := d.Curves[app]
	if !ok {
		return badInputf("%s: %s has no sensitivity curve (%s/%s)", d.Source, app, predict.SensitivityDir, predict.CurveFileName(app))
	}
	var ss []float64
	for _, c := range comps {
		s, ok := scores[c]
		if !ok {
			return badInputf("%s: competitor %s has no contentiousness score (not in %s)", d.Source, c, src)
		}
		ss = append(ss, s)
	}
	p, mb, note, err := predict.PredictMany(curve, ss, m)
	if err != nil {
		return badInput(err)
	}
	w := cmd.OutOrStdout()
	if asJSON {
		return json.NewEncoder(w).Encode(map[string]any{"app": app, "competitors": comps, "scores_mb": ss, "combined_mb": mb, "predicted": p, "slowdown": 1 / p, "note": note})
	}
	fmt.Fprintf(w, "%s next to %s (scores %v MB, combined %.4g MB): predicted performance %.4f of isolated (slowdown %.3f×)%s\n",
		app, strings.Join(comps, " + "), ss, mb, p, 1/p, noteSuffix(note))
	return nil
}
