package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"colo/data"
	"colo/machine"
	"colo/predict"
	"colo/predict/live"
	"colo/predict/measure"
	"colo/predict/simprof"
	"colo/sim"
	"colo/stress"

	"github.com/spf13/cobra"
)

func init() {
	pc := &cobra.Command{
		Use:   "predict",
		Short: "Bubble-Up slowdown prediction: profile, train the reporter, score, predict, validate",
		Long: `Bubble-Up-style prediction (Mars et al., "Bubble-Up", MICRO 2011; docs/predict.md): an application's sensitivity curve against a
source of interference (SoI) with a working-set dial, a reporter that turns a competitor's
pressure into an equivalent dial value (its contentiousness score), and the predicted
normalised performance of A next to C read off A's curve at C's score.

Data directories have the thesis's shapes: reporter_sensitivity.csv, contentiousness.csv,
contentiousness_scores.csv, validated.csv, sensitivity/<name>_data.csv. Without --data the
embedded SPEC CPU2017 measurements (data/bubbleup-spec2017) are used.`,
	}
	rootCmd.AddCommand(pc)
	addValidate(pc)
	addAccuracy(pc)
	addPredictPairs(pc)
	addScore(pc)
	addTrainReporter(pc)
	addProfile(pc)
}

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

// measureSetup checks what every measuring subcommand needs before it starts anything: a
// writable --data directory, the --app list (when apps), and the runner of --runtime with
// its dials. Errors are bad input.
func (f *predictFlags) measureSetup(log io.Writer, apps bool) ([]predict.App, predict.Measurer, []float64, error) {
	if err := measure.Dir(f.dir).Prepare(); err != nil {
		return nil, nil, nil, measureErr(err)
	}
	var as []predict.App
	if apps {
		var err error
		if as, err = predict.ParseApps(f.apps); err != nil {
			return nil, nil, nil, badInput(err)
		}
	}
	r, dials, err := f.runner(log)
	if err != nil {
		return nil, nil, nil, badInput(err)
	}
	return as, r, dials, nil
}

func (f *predictFlags) runner(log io.Writer) (predict.Measurer, []float64, error) {
	dials, err := predict.ParseDials(f.dials)
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
		return simprof.Measurer{R: r}, dials, nil
	default:
		return nil, nil, fmt.Errorf("--runtime %q: use process (real processes here) or sim (the simulated machine)", f.runtime)
	}
	m, err := live.ParseMetric(f.metric)
	if err != nil {
		return nil, nil, err
	}
	appCPUs, err := machine.ParseCPUList(strings.TrimSpace(f.appCPUs))
	if err != nil {
		return nil, nil, fmt.Errorf("--app-cpus: %w", err)
	}
	var otherCPUs []int
	if f.otherCPUs != "" {
		if otherCPUs, err = machine.ParseCPUList(strings.TrimSpace(f.otherCPUs)); err != nil {
			return nil, nil, fmt.Errorf("--other-cpus: %w", err)
		}
	}
	r, err := live.NewRunner(live.Options{AppCPUs: appCPUs, OtherCPUs: otherCPUs, StreamThreads: f.stream, RandomThreads: f.random,
		Settle: f.settle, Repeats: f.repeats, Paired: f.paired, Metric: m, ReporterType: f.repType, ReporterMB: f.repMB,
		ReporterReps: f.repReps, Log: log, WallClock: f.wallClock})
	if err != nil {
		return nil, nil, err
	}
	return r, dials, nil
}

// measureErr reports a measurement refused because of its input as bad input (exit 2).
func measureErr(err error) error {
	var ie *measure.InputError
	if errors.As(err, &ie) {
		return badInput(err)
	}
	return err
}

// printWarnings prints a data set's or a result's warnings, one a line.
func printWarnings(w io.Writer, ws []string) {
	for _, wn := range ws {
		fmt.Fprintln(w, "warning:", wn)
	}
}

func noteSuffix(n string) string {
	if n == "" {
		return ""
	}
	return "; " + n
}
