package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
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

var appName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (f *predictFlags) parseApps() ([]predict.App, error) {
	if len(f.apps) == 0 {
		return nil, live.ErrNoApps
	}
	var out []predict.App
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
		out = append(out, predict.App{Name: name, Cmd: cmd})
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

func (f *predictFlags) runner(log io.Writer) (predict.Measurer, []float64, error) {
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
	if f.otherCPUs == "" {
		for c := 0; c < runtime.NumCPU(); c++ {
			if !slices.Contains(appCPUs, c) {
				otherCPUs = append(otherCPUs, c)
			}
		}
	} else if otherCPUs, err = machine.ParseCPUList(strings.TrimSpace(f.otherCPUs)); err != nil {
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
