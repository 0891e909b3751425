package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"colo/data"
	"colo/predict"
	"colo/predict/live"
	"colo/predict/simprof"
	"colo/sim"
	"colo/stress"

	"github.com/spf13/cobra"
)

// predictFlags are shared by the predict subcommands.
type predictFlags struct {
	dir       string
	method    string
	asJSON    bool
	runtime   string
	apps      []string
	dials     string
	metric    string
	appCPUs   string
	otherCPUs string
	stream    int
	random    int
	settle    time.Duration
	repeats   int
	repType   string
	repMB     float64
	repReps   int
	wallClock bool
	machine   string
	seed      uint64
	paired    bool
}

func (f *predictFlags) data(c *cobra.Command) {
	c.Flags().StringVar(&f.dir, "data", "", "Bubble-Up data directory (default: the embedded bubbleup-spec2017 set, read-only)")
	c.Flags().StringVar(&f.method, "method", string(predict.MethodNearest), "scoring and lookup: nearest (the thesis's), linear or monotone (isotonic fit, interpolated)")
	c.Flags().BoolVar(&f.asJSON, "json", false, "print JSON")
}

func (f *predictFlags) live(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.runtime, "runtime", "", "measure: process (apps are shell commands on this machine) or sim (apps are simulated workloads, e.g. neighbor:6M:1g)")
	fl.StringArrayVar(&f.apps, "app", nil, "application NAME=CMD (repeatable; a bare CMD is named app1, app2, …); with --runtime sim CMD is a workload name")
	fl.StringVar(&f.dials, "dials", "0:112:16", "SoI dials in MB: FROM:TO:STEP or a list 0,16,32 (must include 0)")
	fl.StringVar(&f.metric, "metric", "auto", "app performance: auto, cpu-rate, rate (its JSON line), cpu or wall (time of one run)")
	fl.StringVar(&f.appCPUs, "app-cpus", "0", "CPUs of the application and the reporter")
	fl.StringVar(&f.otherCPUs, "other-cpus", "", "CPUs of the SoI and the background competitor (default: every other CPU)")
	fl.IntVar(&f.stream, "stream-threads", 0, "SoI streaming threads (default 1 on ≤ 4 CPUs, else 3 as the thesis)")
	fl.IntVar(&f.random, "random-threads", 0, "SoI random-access threads (default 1 on ≤ 4 CPUs, else 2)")
	fl.DurationVar(&f.settle, "settle", time.Second, "wait after starting the SoI or a competitor (thesis: 5 s / 20 s)")
	fl.IntVar(&f.repeats, "repeats", 1, "measurements per point (median)")
	fl.BoolVar(&f.paired, "paired", false, "process: pair every measurement under the SoI with an isolated one right before it (ratios cancel drifts of a shared machine; twice the time)")
	fl.StringVar(&f.repType, "reporter", stress.ReporterAlternating, "reporter type: streaming, random, alternating, hybrid")
	fl.Float64Var(&f.repMB, "reporter-mb", 0, "reporter footprint in MB actually touched (0: half the detected LLC, so that LLC pressure shows; 16 if undetected)")
	fl.IntVar(&f.repReps, "reporter-reps", 30, "reporter timed iterations per function")
	fl.BoolVar(&f.wallClock, "wall-clock", false, "time reporter iterations by the wall clock instead of thread CPU time")
	fl.StringVar(&f.machine, "machine", "icx-4314-2s", "sim: machine profile (colo machine list)")
	fl.Uint64Var(&f.seed, "seed", 1, "sim: noise seed")
}

// load opens the data directory (or the embedded set).
func (f *predictFlags) load() (*predict.Dataset, error) {
	if f.dir == "" {
		return predict.LoadDir(data.FS, data.BubbleUp, "embedded:"+data.BubbleUp)
	}
	st, err := os.Stat(f.dir)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("--data %s: not a directory", f.dir)
	}
	return predict.LoadDir(os.DirFS(f.dir), ".", f.dir)
}

func (f *predictFlags) methodValue() (predict.Method, error) { return predict.ParseMethod(f.method) }

func (f *predictFlags) writable() error {
	if f.dir == "" {
		return errors.New("the embedded data set is read-only: give --data DIR to write measurements")
	}
	for _, d := range []string{f.dir, filepath.Join(f.dir, predict.SensitivityDir)} {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o222 == 0 {
			return fmt.Errorf("%s is read-only (a published data set?): measure into another directory", d)
		}
	}
	return os.MkdirAll(filepath.Join(f.dir, predict.SensitivityDir), 0o755)
}

var appName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (f *predictFlags) parseApps() ([]live.App, error) {
	if len(f.apps) == 0 {
		return nil, live.ErrNoApps
	}
	var out []live.App
	seen := map[string]bool{}
	for i, a := range f.apps {
		name, cmd, ok := strings.Cut(a, "=")
		if !ok || !appName.MatchString(name) || strings.ContainsAny(name, " \t") {
			name, cmd = fmt.Sprintf("app%d", i+1), a
		}
		if strings.TrimSpace(cmd) == "" {
			return nil, fmt.Errorf("--app %q: empty command", a)
		}
		if seen[name] {
			return nil, fmt.Errorf("--app %q: name %s given twice", a, name)
		}
		seen[name] = true
		out = append(out, live.App{Name: name, Cmd: cmd})
	}
	return out, nil
}

func parseCPUs(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU or range (e.g. 0,2-3)", s, part)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// parseDials parses FROM:TO:STEP or a comma list; 0 must be included.
func parseDials(s string) ([]float64, error) {
	var out []float64
	if parts := strings.Split(s, ":"); len(parts) == 3 {
		var v [3]float64
		for i, p := range parts {
			x, err := strconv.ParseFloat(p, 64)
			if err != nil {
				return nil, fmt.Errorf("--dials %q: %q is not a number", s, p)
			}
			v[i] = x
		}
		if v[2] <= 0 || v[1] < v[0] {
			return nil, fmt.Errorf("--dials %q: want FROM:TO:STEP with STEP > 0 and TO ≥ FROM", s)
		}
		for i := 0; ; i++ {
			d := v[0] + float64(i)*v[2]
			if d > v[1]+1e-9 {
				break
			}
			out = append(out, d)
		}
	} else {
		for _, p := range strings.Split(s, ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || x < 0 {
				return nil, fmt.Errorf("--dials %q: %q is not a dial in MB ≥ 0", s, p)
			}
			out = append(out, x)
		}
	}
	sort.Float64s(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, fmt.Errorf("--dials %q: %v given twice", s, out[i])
		}
	}
	if len(out) == 0 || out[0] != 0 {
		return nil, fmt.Errorf("--dials %q: must include 0 (the isolated run)", s)
	}
	return out, nil
}

// measurer is what the predict commands need from a runtime: live processes or sim.
type measurer interface {
	ReporterCurve(ctx context.Context, dials []float64) ([]predict.ReporterRow, error)
	SensitivityCurve(ctx context.Context, app live.App, dials []float64) (predict.Curve, error)
	Contentiousness(ctx context.Context, app live.App) (predict.ReporterRow, error)
	CoRun(ctx context.Context, app, comp live.App) (float64, error)
}

// simMeasurer adapts simprof.Runner: an app's command is a simulated workload name
// (sim.WorkloadNames, e.g. neighbor:6M:1g).
type simMeasurer struct{ r *simprof.Runner }

func (s simMeasurer) workload(a live.App) (sim.Workload, error) {
	w, err := sim.ParseWorkload(a.Cmd, 1, nil)
	if err != nil {
		return w, fmt.Errorf("--app %s=%s: %w", a.Name, a.Cmd, err)
	}
	return w, nil
}

func (s simMeasurer) ReporterCurve(_ context.Context, dials []float64) ([]predict.ReporterRow, error) {
	return s.r.ReporterCurve(dials)
}

func (s simMeasurer) SensitivityCurve(_ context.Context, a live.App, dials []float64) (predict.Curve, error) {
	w, err := s.workload(a)
	if err != nil {
		return predict.Curve{}, err
	}
	return s.r.SensitivityCurve(a.Name, w, dials)
}

func (s simMeasurer) Contentiousness(_ context.Context, a live.App) (predict.ReporterRow, error) {
	w, err := s.workload(a)
	if err != nil {
		return predict.ReporterRow{}, err
	}
	return s.r.Contentiousness(a.Name, w)
}

func (s simMeasurer) CoRun(_ context.Context, a, c live.App) (float64, error) {
	wa, err := s.workload(a)
	if err != nil {
		return 0, err
	}
	wc, err := s.workload(c)
	if err != nil {
		return 0, err
	}
	return s.r.CoRun(wa, wc)
}

// measureSetup checks what every measuring subcommand needs before it starts anything: a
// writable --data directory, the --app list (when apps), and the runner of --runtime with
// its dials. Errors are bad input.
func (f *predictFlags) measureSetup(log io.Writer, apps bool) ([]live.App, measurer, []float64, error) {
	if err := f.writable(); err != nil {
		return nil, nil, nil, badInput(err)
	}
	var as []live.App
	if apps {
		var err error
		if as, err = f.parseApps(); err != nil {
			return nil, nil, nil, badInput(err)
		}
	}
	r, dials, err := f.runner(log)
	if err != nil {
		return nil, nil, nil, badInput(err)
	}
	return as, r, dials, nil
}

func (f *predictFlags) runner(log io.Writer) (measurer, []float64, error) {
	dials, err := parseDials(f.dials)
	if err != nil {
		return nil, nil, err
	}
	switch f.runtime {
	case "process":
	case "sim":
		r, err := simprof.NewRunner(f.machine, f.seed)
		if err != nil {
			return nil, nil, err
		}
		for _, a := range f.apps {
			_, spec, _ := strings.Cut(a, "=")
			if _, err := sim.ParseWorkload(spec, 1, nil); err != nil && strings.Contains(a, "=") {
				return nil, nil, fmt.Errorf("--app %s: %w", a, err)
			}
		}
		return simMeasurer{r}, dials, nil
	default:
		return nil, nil, fmt.Errorf("--runtime %q: use process (real processes here) or sim (the simulated machine)", f.runtime)
	}
	m, err := live.ParseMetric(f.metric)
	if err != nil {
		return nil, nil, err
	}
	appCPUs, err := parseCPUs(f.appCPUs)
	if err != nil {
		return nil, nil, fmt.Errorf("--app-cpus: %w", err)
	}
	other := f.otherCPUs
	if other == "" {
		var rest []string
		for c := 0; c < runtime.NumCPU(); c++ {
			if !containsInt(appCPUs, c) {
				rest = append(rest, strconv.Itoa(c))
			}
		}
		other = strings.Join(rest, ",")
	}
	otherCPUs, err := parseCPUs(other)
	if err != nil {
		return nil, nil, fmt.Errorf("--other-cpus: %w", err)
	}
	if len(otherCPUs) == 0 {
		return nil, nil, errors.New("no CPU left for the SoI and the competitor: give --other-cpus")
	}
	for _, c := range append(append([]int(nil), appCPUs...), otherCPUs...) {
		if c >= runtime.NumCPU() {
			return nil, nil, fmt.Errorf("CPU %d does not exist (this machine has %d)", c, runtime.NumCPU())
		}
	}
	st, rt := f.stream, f.random
	if st == 0 && rt == 0 {
		st, rt = 1, 1
		if runtime.NumCPU() > 4 {
			st, rt = 3, 2
		}
	}
	if f.repeats < 1 || f.settle < 0 {
		return nil, nil, fmt.Errorf("--repeats %d must be ≥ 1 and --settle %v ≥ 0", f.repeats, f.settle)
	}
	repMB := f.repMB
	if repMB == 0 {
		repMB = 16
		if llc := stress.DetectLLCBytes(); llc > 0 {
			repMB = float64(llc) / 2 / stress.MB
		}
	}
	rcfg := stress.ReporterConfig{Type: f.repType, MB: repMB, Reps: f.repReps}
	if _, err := stress.NewReporter(stress.ReporterConfig{Type: f.repType, MB: 0.1, Reps: 1}); err != nil {
		return nil, nil, err
	}
	if f.repMB < 0 || f.repReps < 1 {
		return nil, nil, fmt.Errorf("--reporter-mb %g must be > 0 and --reporter-reps %d ≥ 1", f.repMB, f.repReps)
	}
	return &live.Runner{AppCPUs: appCPUs, OtherCPUs: otherCPUs, StreamThreads: st, RandomThreads: rt,
		Settle: f.settle, Repeats: f.repeats, Paired: f.paired, Metric: m, Reporter: rcfg, Log: log, WallClock: f.wallClock}, dials, nil
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// writeFile writes b to path atomically (temp file + rename): nothing half-written. A
// target without any write permission bit (a published data set) is refused even for root,
// whom the kernel would let through.
func writeFile(path string, b []byte) error {
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o222 == 0 {
		return badInputf("%s is read-only (a published data set?): not overwriting it; copy the directory to write into it", path)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readReporterRows reads an existing reporter table (contentiousness.csv) back as rows so
// that new measurements replace or extend it.
func readReporterRows(path string) ([]predict.ReporterRow, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return predict.ParseReporterTable(bytes.NewReader(b), path)
}

func upsertRow(rows []predict.ReporterRow, r predict.ReporterRow) []predict.ReporterRow {
	for i := range rows {
		if rows[i].Key == r.Key {
			rows[i] = r
			return rows
		}
	}
	return append(rows, r)
}

func encodeReporterRows(rows []predict.ReporterRow) ([]byte, error) {
	var buf bytes.Buffer
	err := predict.WriteReporterTable(&buf, rows)
	return buf.Bytes(), err
}

func init() {
	pc := &cobra.Command{
		Use:   "predict",
		Short: "Bubble-Up slowdown prediction: profile, train the reporter, score, predict, validate",
		Long: `Bubble-Up-style prediction (seed002.md): an application's sensitivity curve against a
source of interference (SoI) with a working-set dial, a reporter that turns a competitor's
pressure into an equivalent dial value (its contentiousness score), and the predicted
normalised performance of A next to C read off A's curve at C's score.

Data directories have the thesis's shapes: reporter_sensitivity.csv, contentiousness.csv,
contentiousness_scores.csv, validated.csv, sensitivity/<name>_data.csv. Without --data the
embedded SPEC CPU2017 measurements (data/bubbleup-spec2017) are used.`,
	}
	rootCmd.AddCommand(pc)
	addValidate(pc)
	addPredictPairs(pc)
	addScore(pc)
	addTrainReporter(pc)
	addProfile(pc)
}

// validateOutput is the stable JSON of colo predict validate.
type validateOutput struct {
	Source     string `json:"source"`
	Method     string `json:"method"`
	Convention string `json:"convention"`
	predict.Stats
	Scores            map[string]float64       `json:"scores"`
	ScoreNotes        map[string]string        `json:"score_notes,omitempty"`
	WithDiagonalZeros predict.Stats            `json:"with_diagonal_zeros"`
	RecordedScores    *sourcedStats            `json:"recorded_scores,omitempty"`
	ThesisExpected    *expectedStats           `json:"thesis_expected,omitempty"`
	Methods           map[string]predict.Stats `json:"methods"`
	Warnings          []string                 `json:"warnings"`
}

type sourcedStats struct {
	Source string `json:"source"`
	predict.Stats
}

type expectedStats struct {
	Convention string `json:"convention"`
	predict.Stats
	WithDiagonalZeros predict.Stats      `json:"with_diagonal_zeros"`
	InferredScores    map[string]float64 `json:"inferred_scores"`
}

const conventionText = "ε = 100·(predicted − measured) normalised performance, in percentage points of isolated performance; " +
	"statistics over the off-diagonal ordered pairs A≠C only (n = 2 × rows of validated.csv); percentiles of |ε| with linear " +
	"interpolation between order statistics (numpy default, Hyndman–Fan type 7); mean, min, max of the signed ε. " +
	"with_diagonal_zeros adds one zero error per application for the empty self-pair cells, the thesis's convention for its median and P90"

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
			out, err := validateAll(d, m)
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

func validateAll(d *predict.Dataset, m predict.Method) (*validateOutput, error) {
	if len(d.Contention) == 0 {
		return nil, fmt.Errorf("%s: no %s (reporter latencies next to each competitor) to score from", d.Source, predict.ContentionFile)
	}
	out := &validateOutput{Source: d.Source, Method: string(m), Convention: conventionText,
		Scores: map[string]float64{}, Methods: map[string]predict.Stats{}, Warnings: append([]string{}, d.Warnings...)}
	ss := predict.ScoreAll(d, m)
	for _, s := range ss {
		out.Scores[s.Competitor] = s.MB
		if s.Note != "" {
			if out.ScoreNotes == nil {
				out.ScoreNotes = map[string]string{}
			}
			out.ScoreNotes[s.Competitor] = s.Note
		}
	}
	pairs, err := predict.ValidatePairs(d, out.Scores, m, predict.ContentionFile)
	if err != nil {
		return nil, err
	}
	eps := predict.Errors(pairs)
	out.Stats = predict.ErrorStats(eps, 0)
	out.WithDiagonalZeros = predict.ErrorStats(eps, predict.DiagonalCells(pairs))
	for _, mm := range predict.Methods {
		ps, err := predict.ValidatePairs(d, predict.ScoreMap(predict.ScoreAll(d, mm)), mm, predict.ContentionFile)
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("method %s: %v", mm, err))
			continue
		}
		out.Methods[string(mm)] = predict.ErrorStats(predict.Errors(ps), 0)
	}
	if d.HasRecorded {
		if ps, err := predict.ValidatePairs(d, d.Recorded, predict.MethodNearest, predict.ScoresFile); err == nil {
			out.RecordedScores = &sourcedStats{Source: predict.ScoresFile + " as given, nearest lookup", Stats: predict.ErrorStats(predict.Errors(ps), 0)}
		} else {
			out.Warnings = append(out.Warnings, err.Error())
		}
	}
	exp := predict.ExpectedPairs(d)
	ee := predict.Errors(exp)
	out.ThesisExpected = &expectedStats{
		Convention:        "the expected1/expected2 columns of validated.csv (the predictions that were validated) against actual1/actual2; same statistics",
		Stats:             predict.ErrorStats(ee, 0),
		WithDiagonalZeros: predict.ErrorStats(ee, predict.DiagonalCells(exp)),
		InferredScores:    predict.InferExpectedScores(d),
	}
	return out, nil
}

func fmtStats(s predict.Stats) string {
	return fmt.Sprintf("n=%d\tmedian %.2f\tP90 %.2f\tP95 %.2f\tP99 %.2f\tmean|ε| %.2f\tmean %+.2f\tmin %+.2f\tmax %+.2f",
		s.N, s.Median, s.P90, s.P95, s.P99, s.MeanAbs, s.Mean, s.Min, s.Max)
}

func printValidate(w io.Writer, o *validateOutput) error {
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
	names := make([]string, 0, len(o.Scores))
	for n := range o.Scores {
		names = append(names, n)
	}
	sort.Strings(names)
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
	for _, wn := range o.Warnings {
		fmt.Fprintln(w, "warning:", wn)
	}
	return nil
}

func measureCoRuns(cmd *cobra.Command, f *predictFlags, m predict.Method) error {
	apps, r, _, err := f.measureSetup(cmd.ErrOrStderr(), true)
	if err != nil {
		return err
	}
	if len(apps) < 2 {
		return badInputf("--app: co-run validation needs at least two applications")
	}
	d, err := f.load()
	if err != nil {
		return badInput(err)
	}
	scores := predict.ScoreMap(predict.ScoreAll(d, m))
	ctx, cancel := signalContext(cmd)
	defer cancel()
	var rows []predict.Validated
	for i := 0; i < len(apps); i++ {
		for j := i + 1; j < len(apps); j++ {
			a, b := apps[i], apps[j]
			v := predict.Validated{Name1: a.Name, Name2: b.Name}
			for _, dir := range []struct {
				app, comp live.App
				exp, act  *float64
			}{{a, b, &v.Expected1, &v.Actual1}, {b, a, &v.Expected2, &v.Actual2}} {
				c, ok := d.Curves[dir.app.Name]
				if !ok {
					return badInputf("%s: %s has no sensitivity curve; run colo predict profile --app %s=… first", f.dir, dir.app.Name, dir.app.Name)
				}
				s, ok := scores[dir.comp.Name]
				if !ok {
					return badInputf("%s: %s has no contentiousness measurement in %s; run colo predict profile or score first", f.dir, dir.comp.Name, predict.ContentionFile)
				}
				p, err := predict.Predict(c, s, m)
				if err != nil {
					return badInput(err)
				}
				*dir.exp = p
				if *dir.act, err = r.CoRun(ctx, dir.app, dir.comp); err != nil {
					return err
				}
			}
			rows = append(rows, v)
		}
	}
	var buf bytes.Buffer
	if err := predict.WriteValidated(&buf, rows); err != nil {
		return err
	}
	return writeFile(filepath.Join(f.dir, predict.ValidatedFile), buf.Bytes())
}

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
				var buf bytes.Buffer
				if err := predict.WritePredictions(&buf, res.Predictions); err != nil {
					return err
				}
				if err := writeFile(filepath.Join(f.dir, predict.PredictionsFile), buf.Bytes()); err != nil {
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
			for _, w := range res.Warnings {
				fmt.Fprintln(out, "warning:", w)
			}
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
	mb, note := predict.CombineScores(ss, curve.Dials[len(curve.Dials)-1])
	mm := m
	if mm == predict.MethodNearest && curve.MissingDials([]float64{mb}) != nil {
		mm = predict.MethodLinear
		note = strings.TrimPrefix(note+"; the summed dial is off the grid: linear interpolation", "; ")
	}
	p, err := predict.Predict(curve, mb, mm)
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
				if err := measureContention(ctx, f, r, apps); err != nil {
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
				var buf bytes.Buffer
				if err := predict.WriteScores(&buf, ss); err != nil {
					return err
				}
				if err := writeFile(filepath.Join(f.dir, predict.ScoresFile), buf.Bytes()); err != nil {
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
			for _, wn := range d.Warnings {
				fmt.Fprintln(w, "warning:", wn)
			}
			return nil
		},
	}
	f.data(c)
	f.live(c)
	c.Flags().BoolVar(&write, "write", false, "write contentiousness_scores.csv into --data DIR (always done after measuring)")
	pc.AddCommand(c)
}

// measureContention measures the reporter next to each app and upserts contentiousness.csv.
func measureContention(ctx context.Context, f *predictFlags, r measurer, apps []live.App) error {
	path := filepath.Join(f.dir, predict.ContentionFile)
	rows, err := readReporterRows(path)
	if err != nil {
		return badInput(err)
	}
	for _, a := range apps {
		row, err := r.Contentiousness(ctx, a)
		if err != nil {
			return err
		}
		rows = upsertRow(rows, row)
	}
	b, err := encodeReporterRows(rows)
	if err != nil {
		return err
	}
	return writeFile(path, b)
}

func trainReporter(ctx context.Context, f *predictFlags, r measurer, dials []float64, w io.Writer) error {
	t0 := time.Now()
	rows, err := r.ReporterCurve(ctx, dials)
	if err != nil {
		return err
	}
	b, err := encodeReporterRows(rows)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "reporter curve: %d dials in %.3f s → %s\n", len(dials), time.Since(t0).Seconds(), filepath.Join(f.dir, predict.ReporterFile))
	return writeFile(filepath.Join(f.dir, predict.ReporterFile), b)
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
			if _, err := os.Stat(filepath.Join(f.dir, predict.ReporterFile)); errors.Is(err, fs.ErrNotExist) {
				if err := trainReporter(ctx, f, r, dials, w); err != nil {
					return err
				}
			}
			for _, a := range apps {
				t0 := time.Now()
				curve, err := r.SensitivityCurve(ctx, a, dials)
				if err != nil {
					return err
				}
				var buf bytes.Buffer
				if err := predict.WriteCurve(&buf, curve); err != nil {
					return err
				}
				if err := writeFile(filepath.Join(f.dir, predict.SensitivityDir, predict.CurveFileName(a.Name)), buf.Bytes()); err != nil {
					return err
				}
				fmt.Fprintf(w, "%s: sensitivity curve (%d dials) in %.3f s; normalised performance:", a.Name, len(dials), time.Since(t0).Seconds())
				for i, d := range curve.Dials {
					fmt.Fprintf(w, " %v:%.3f", d, predict.NormalisedPerf(curve.Perf[0], curve.Perf[i]))
				}
				fmt.Fprintln(w)
			}
			if noScore {
				return nil
			}
			if err := measureContention(ctx, f, r, apps); err != nil {
				return err
			}
			d, err := f.load()
			if err != nil {
				return badInput(err)
			}
			ss := predict.ScoreAll(d, m)
			var buf bytes.Buffer
			if err := predict.WriteScores(&buf, ss); err != nil {
				return err
			}
			if err := writeFile(filepath.Join(f.dir, predict.ScoresFile), buf.Bytes()); err != nil {
				return err
			}
			for _, s := range ss {
				fmt.Fprintf(w, "%s: reporter %.6g → contentiousness %.4g MB (%s)%s\n", s.Competitor, s.Latency, s.MB, m, noteSuffix(s.Note))
			}
			for _, wn := range d.Warnings {
				fmt.Fprintln(w, "warning:", wn)
			}
			return nil
		},
	}
	f.data(c)
	f.live(c)
	c.Flags().BoolVar(&noScore, "no-score", false, "only the sensitivity curves")
	pc.AddCommand(c)
}

func noteSuffix(n string) string {
	if n == "" {
		return ""
	}
	return "; " + n
}
