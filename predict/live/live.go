// Package live measures Bubble-Up profiles for real on this machine: it runs the source of
// interference (stress.KindSoI, in process, pinned to the "other" CPUs) at each dial and
// times an application (a shell command pinned to the "app" CPUs), trains the reporter
// the same way, measures each competitor's contentiousness with the reporter, and measures
// co-runs for validation (seed002.md §1.2–1.5, data PROVENANCE.md "Runs").
//
// Without a hardware PMU, an application's performance is measured in one of two ways
// (Metric): "rate" reads the rate from the last JSON line the application prints
// ({"rate": …}, as colo stress does) and records ns per unit of work, 1e9/rate; "wall"
// records the wall-clock seconds of one run of a fixed amount of work (the thesis's
// execution time). Both are latency-like: lower is better, and P = t_iso / t.
package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"colo/metric"
	"colo/predict"
	"colo/stress"
)

// Metric is how an application's performance is measured.
type Metric string

const (
	// MetricAuto takes cpu-rate when the app prints one, else rate, else cpu.
	MetricAuto Metric = "auto"
	// MetricCPURate is 1e9 / the "cpu_rate" of the app's last JSON line (work per CPU
	// second, as colo stress prints): ns of CPU per unit of work.
	MetricCPURate Metric = "cpu-rate"
	// MetricRate is 1e9 / the "rate" of the app's last JSON line: wall ns per unit of work.
	MetricRate Metric = "rate"
	// MetricCPU is the user+system CPU seconds of one run (a fixed amount of work).
	MetricCPU Metric = "cpu"
	// MetricWall is the wall-clock seconds of one run (a fixed amount of work; the thesis's
	// execution time).
	MetricWall Metric = "wall"
)

// ParseMetric validates a metric name ("" is auto).
func ParseMetric(s string) (Metric, error) {
	switch Metric(s) {
	case "", MetricAuto:
		return MetricAuto, nil
	case MetricCPURate, MetricRate, MetricCPU, MetricWall:
		return Metric(s), nil
	}
	return "", fmt.Errorf("unknown metric %q: use auto, cpu-rate or rate (the app's own JSON line with \"cpu_rate\" or \"rate\"), cpu or wall (CPU or wall-clock time of one run)", s)
}

// Runner holds the placement and timing of real measurements.
type Runner struct {
	AppCPUs   []int // the application and the reporter (thesis: cores 0-2 / core 0)
	OtherCPUs []int // the SoI and the background competitor (thesis: 3-7 / 3-5)
	// StreamThreads and RandomThreads size the SoI (thesis 3 and 2; on 2 cores 1 and 1).
	StreamThreads, RandomThreads int
	// Settle is the wait after starting the SoI or a competitor before measuring (thesis:
	// 5 s for the reporter, 20 s for a SPEC competitor).
	Settle time.Duration
	// Repeats is the number of measurements per point; the point is their median.
	Repeats int
	// Paired pairs every measurement under the SoI with an isolated one taken right before
	// it (see SensitivityCurve).
	Paired   bool
	Metric   Metric
	Reporter stress.ReporterConfig
	Log      io.Writer // progress lines (nil: none)
	// WallClock times the reporter's iterations by the wall clock instead of its thread's
	// CPU time (the default, robust to other processes time-sharing the CPU).
	WallClock bool

	rep *stress.Reporter // allocated once, warmed up by one discarded measurement
}

func (r *Runner) logf(format string, a ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, format+"\n", a...)
	}
}

func (r *Runner) clock() func() time.Time {
	if r.WallClock {
		return time.Now
	}
	return stress.ThreadCPUClock()
}

func (r *Runner) repeats() int { return max(1, r.Repeats) }

// wait blocks for d or until ctx is done.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func onCPUs(cpus []int, f func() error) error { return stress.OnThread(cpus, f) }

// start starts `sh -c cmd` in its own process group, pinned to cpus.
func start(cmd string, cpus []int, stdout io.Writer, stderr io.Writer) (*exec.Cmd, error) {
	c := exec.Command("sh", "-c", cmd)
	c.Stdout, c.Stderr = stdout, stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err := onCPUs(cpus, c.Start)
	return c, err
}

func killGroup(c *exec.Cmd) {
	if c.Process != nil {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
}

// MeasureOnce runs app once on the app CPUs and returns its performance value.
func (r *Runner) MeasureOnce(ctx context.Context, app predict.App) (float64, error) {
	var out, errb bytes.Buffer
	t0 := time.Now()
	c, err := start(app.Cmd, r.AppCPUs, &out, &errb)
	if err != nil {
		return 0, fmt.Errorf("%s: start %q: %w", app.Name, app.Cmd, err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-ctx.Done():
		killGroup(c)
		<-done
		return 0, ctx.Err()
	case err = <-done:
	}
	wall := time.Since(t0).Seconds()
	if err != nil {
		return 0, fmt.Errorf("%s: %q failed: %v; stderr: %s", app.Name, app.Cmd, err, tail(errb.String()))
	}
	cpu := c.ProcessState.UserTime().Seconds() + c.ProcessState.SystemTime().Seconds()
	m := r.Metric
	if m == MetricAuto || m == "" {
		m = MetricCPU
		if _, ok := lastRate(out.Bytes(), "cpu_rate"); ok {
			m = MetricCPURate
		} else if _, ok := lastRate(out.Bytes(), "rate"); ok {
			m = MetricRate
		}
	}
	switch m {
	case MetricWall:
		return wall, nil
	case MetricCPU:
		return cpu, nil
	case MetricRate, MetricCPURate:
		key := map[Metric]string{MetricRate: "rate", MetricCPURate: "cpu_rate"}[m]
		v, ok := lastRate(out.Bytes(), key)
		if !ok {
			return 0, fmt.Errorf("%s: %q printed no JSON line with a positive %q; make it print one (colo stress KIND --json does) or use --metric cpu or wall", app.Name, app.Cmd, key)
		}
		return 1e9 / v, nil
	}
	return 0, fmt.Errorf("unknown metric %q", r.Metric)
}

// lastRate returns field key of the last JSON object line where it is a positive number.
func lastRate(b []byte, key string) (float64, bool) {
	var rate float64
	ok := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) == nil {
			if x, isNum := v[key].(float64); isNum && x > 0 {
				rate, ok = x, true
			}
		}
	}
	return rate, ok
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 400 {
		s = "…" + s[len(s)-400:]
	}
	return s
}

// Measure runs app Repeats times and returns the median value.
func (r *Runner) Measure(ctx context.Context, app predict.App) (float64, error) {
	vs := make([]float64, 0, r.repeats())
	for i := 0; i < r.repeats(); i++ {
		v, err := r.MeasureOnce(ctx, app)
		if err != nil {
			return 0, err
		}
		vs = append(vs, v)
	}
	return metric.Percentile(vs, 50), nil
}

// startSoI starts the SoI at mb on the other CPUs; stop ends it and waits.
func (r *Runner) startSoI(ctx context.Context, mb float64) (stop func(), err error) {
	l, err := stress.New(stress.Config{Kind: stress.KindSoI, MB: mb, StreamThreads: r.StreamThreads,
		RandomThreads: r.RandomThreads, CPUs: r.OtherCPUs})
	if err != nil {
		return nil, err
	}
	// The SoI's locked worker threads and the reporter's must all hold a P at once, or Go
	// time-slices them and the reporter sees a fraction of the SoI (measured: a flat reporter
	// curve with GOMAXPROCS = 2 and three busy threads).
	if need := l.Workers() + 2; runtime.GOMAXPROCS(0) < need {
		runtime.GOMAXPROCS(need)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { stress.Run(cctx, l, 0, time.Now, nil); close(done) }()
	return func() { cancel(); <-done }, nil
}

// startBackground runs app over and over on the other CPUs (like the thesis's endless
// `runcpu --iterations=10000`) until stop is called.
func (r *Runner) startBackground(ctx context.Context, app predict.App) (stop func() error, err error) {
	cctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var cur *exec.Cmd
	var firstErr error
	done := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		defer close(done)
		first := true
		for cctx.Err() == nil {
			var errb bytes.Buffer
			c, err := start(app.Cmd, r.OtherCPUs, io.Discard, &errb)
			if first {
				started <- err
				first = false
			}
			if err != nil {
				return
			}
			mu.Lock()
			cur = c
			mu.Unlock()
			if err := c.Wait(); err != nil && cctx.Err() == nil {
				mu.Lock()
				firstErr = fmt.Errorf("background %s: %q failed: %v; stderr: %s", app.Name, app.Cmd, err, tail(errb.String()))
				mu.Unlock()
				return
			}
		}
	}()
	if err := <-started; err != nil {
		cancel()
		<-done
		return nil, fmt.Errorf("background %s: %w", app.Name, err)
	}
	return func() error {
		cancel()
		mu.Lock()
		if cur != nil {
			killGroup(cur)
		}
		mu.Unlock()
		<-done
		// A competitor that failed was not running for (part of) the measurement.
		return firstErr
	}, nil
}

// MeasureReporter runs the reporter on the app CPUs. The reporter is allocated once per
// Runner and its first measurement is discarded: on this VM a fresh reporter runs up to
// twice as slow for its first few hundred milliseconds, and a new allocation per
// measurement added ±30 % of noise between measurements (measured, see docs/predict.md).
func (r *Runner) MeasureReporter(ctx context.Context) (stress.ReporterResult, error) {
	var res stress.ReporterResult
	err := onCPUs(r.AppCPUs, func() error {
		var err error
		if r.rep == nil {
			if r.rep, err = stress.NewReporter(r.Reporter); err != nil {
				return err
			}
			if _, err = r.rep.Measure(ctx, r.clock()); err != nil {
				return err
			}
		}
		res, err = r.rep.Measure(ctx, r.clock())
		return err
	})
	return res, err
}

// measureAt measures app once (or Repeats times, median) with the SoI at dial d.
func (r *Runner) measureAt(ctx context.Context, app predict.App, d float64, repeats int) (float64, error) {
	stop, err := r.startSoI(ctx, d)
	if err != nil {
		return 0, err
	}
	if d > 0 {
		err = wait(ctx, r.Settle)
	}
	vs := make([]float64, 0, repeats)
	for i := 0; err == nil && i < repeats; i++ {
		var v float64
		if v, err = r.MeasureOnce(ctx, app); err == nil {
			vs = append(vs, v)
		}
	}
	stop()
	if err != nil {
		return 0, err
	}
	return metric.Percentile(vs, 50), nil
}

// SensitivityCurve measures app with the SoI at each dial (0 = alone). With Paired, every
// dial's measurement is paired with an isolated one taken right before it, Repeats times,
// and the point is t(0) · median(t_d / t_iso) with t(0) the median of all isolated runs:
// slow drifts of the machine (other tenants) cancel in the ratios.
func (r *Runner) SensitivityCurve(ctx context.Context, app predict.App, dials []float64) (predict.Curve, error) {
	c := predict.Curve{Name: app.Name}
	if !r.Paired {
		for _, d := range dials {
			v, err := r.measureAt(ctx, app, d, r.repeats())
			if err != nil {
				return c, err
			}
			r.logf("%s: SoI %v MB → %.6g", app.Name, d, v)
			c.Dials = append(c.Dials, d)
			c.Perf = append(c.Perf, v)
		}
		return c, nil
	}
	var isos []float64
	ratios := make([][]float64, len(dials))
	for k := 0; k < r.repeats(); k++ {
		for i, d := range dials {
			if d == 0 {
				continue
			}
			iso, err := r.measureAt(ctx, app, 0, 1)
			if err != nil {
				return c, err
			}
			v, err := r.measureAt(ctx, app, d, 1)
			if err != nil {
				return c, err
			}
			isos = append(isos, iso)
			ratios[i] = append(ratios[i], v/iso)
		}
	}
	if len(isos) == 0 { // only the 0 dial
		v, err := r.measureAt(ctx, app, 0, r.repeats())
		if err != nil {
			return c, err
		}
		isos = []float64{v}
	}
	t0 := metric.Percentile(isos, 50)
	for i, d := range dials {
		v := t0
		if d != 0 {
			v = t0 * metric.Percentile(ratios[i], 50)
		}
		r.logf("%s: SoI %v MB → %.6g (paired)", app.Name, d, v)
		c.Dials = append(c.Dials, d)
		c.Perf = append(c.Perf, v)
	}
	return c, nil
}

// ReporterCurve trains the reporter: its score with the SoI at each dial.
func (r *Runner) ReporterCurve(ctx context.Context, dials []float64) ([]predict.ReporterRow, error) {
	if r.Paired {
		return r.pairedReporter(ctx, dials, nil)
	}
	var rows []predict.ReporterRow
	for _, d := range dials {
		res, err := r.reporterAt(ctx, d)
		if err != nil {
			return nil, err
		}
		r.logf("reporter: SoI %v MB → %.6g ns", d, res.Score)
		rows = append(rows, predict.ReporterRow{Key: fmt.Sprint(d), Avg: res.Score, Functions: res.Medians})
	}
	return rows, nil
}

// reporterAt measures the reporter with the SoI at dial d.
func (r *Runner) reporterAt(ctx context.Context, d float64) (stress.ReporterResult, error) {
	stop, err := r.startSoI(ctx, d)
	if err != nil {
		return stress.ReporterResult{}, err
	}
	if d > 0 {
		err = wait(ctx, r.Settle)
	}
	var res stress.ReporterResult
	if err == nil {
		res, err = r.MeasureReporter(ctx)
	}
	stop()
	return res, err
}

// reporterNext measures the reporter with app in the background.
func (r *Runner) reporterNext(ctx context.Context, app predict.App) (stress.ReporterResult, error) {
	stop, err := r.startBackground(ctx, app)
	if err != nil {
		return stress.ReporterResult{}, err
	}
	err = wait(ctx, r.Settle)
	var res stress.ReporterResult
	if err == nil {
		res, err = r.MeasureReporter(ctx)
	}
	if serr := stop(); err == nil {
		err = serr
	}
	return res, err
}

// pairedReporter measures, Repeats times, the reporter alone right before each condition
// (a dial of the SoI, or a competitor app when dials is nil) and scales the median of
// alone measurements by the median ratio: slow drifts of a shared machine cancel.
func (r *Runner) pairedReporter(ctx context.Context, dials []float64, app *predict.App) ([]predict.ReporterRow, error) {
	type cond struct {
		key string
		run func() (stress.ReporterResult, error)
	}
	var conds []cond
	if app != nil {
		conds = []cond{{app.Name, func() (stress.ReporterResult, error) { return r.reporterNext(ctx, *app) }}}
	}
	for _, d := range dials {
		d := d
		conds = append(conds, cond{fmt.Sprint(d), func() (stress.ReporterResult, error) { return r.reporterAt(ctx, d) }})
	}
	var alone []stress.ReporterResult
	ratios := make([]map[string][]float64, len(conds))
	for k := 0; k < r.repeats(); k++ {
		for i, c := range conds {
			if c.key == "0" {
				continue
			}
			a, err := r.reporterAt(ctx, 0)
			if err != nil {
				return nil, err
			}
			v, err := c.run()
			if err != nil {
				return nil, err
			}
			alone = append(alone, a)
			if ratios[i] == nil {
				ratios[i] = map[string][]float64{}
			}
			ratios[i]["avg"] = append(ratios[i]["avg"], v.Score/a.Score)
			for f, m := range v.Medians {
				ratios[i][f] = append(ratios[i][f], m/a.Medians[f])
			}
		}
	}
	if len(alone) == 0 {
		a, err := r.reporterAt(ctx, 0)
		if err != nil {
			return nil, err
		}
		alone = append(alone, a)
	}
	base := map[string]float64{}
	var xs []float64
	for _, a := range alone {
		xs = append(xs, a.Score)
	}
	base["avg"] = metric.Percentile(xs, 50)
	for f := range alone[0].Medians {
		xs = xs[:0]
		for _, a := range alone {
			xs = append(xs, a.Medians[f])
		}
		base[f] = metric.Percentile(xs, 50)
	}
	var rows []predict.ReporterRow
	for i, c := range conds {
		row := predict.ReporterRow{Key: c.key, Avg: base["avg"], Functions: map[string]float64{}}
		for f, b := range base {
			v := b
			if c.key != "0" {
				v = b * metric.Percentile(ratios[i][f], 50)
			}
			if f == "avg" {
				row.Avg = v
			} else {
				row.Functions[f] = v
			}
		}
		r.logf("reporter: %s → %.6g ns (paired)", c.key, row.Avg)
		rows = append(rows, row)
	}
	return rows, nil
}

// Contentiousness measures the reporter while app runs in the background.
func (r *Runner) Contentiousness(ctx context.Context, app predict.App) (predict.ReporterRow, error) {
	if r.Paired {
		rows, err := r.pairedReporter(ctx, nil, &app)
		if err != nil {
			return predict.ReporterRow{}, err
		}
		return rows[0], nil
	}
	res, err := r.reporterNext(ctx, app)
	if err != nil {
		return predict.ReporterRow{}, err
	}
	r.logf("reporter next to %s → %.6g ns", app.Name, res.Score)
	return predict.ReporterRow{Key: app.Name, Avg: res.Score, Functions: res.Medians}, nil
}

// CoRun measures app alone and then with competitor running in the background, and returns
// the measured normalised performance t_iso / t_co (the isolated time is re-measured right
// before the co-run, as the thesis does).
func (r *Runner) CoRun(ctx context.Context, app, competitor predict.App) (float64, error) {
	iso, err := r.Measure(ctx, app)
	if err != nil {
		return 0, err
	}
	stop, err := r.startBackground(ctx, competitor)
	if err != nil {
		return 0, err
	}
	err = wait(ctx, r.Settle)
	var co float64
	if err == nil {
		co, err = r.Measure(ctx, app)
	}
	if serr := stop(); err == nil {
		err = serr
	}
	if err != nil {
		return 0, err
	}
	p := predict.NormalisedPerf(iso, co)
	r.logf("%s next to %s: %.6g alone, %.6g co-run → %.4f", app.Name, competitor.Name, iso, co, p)
	return p, nil
}

var _ predict.Measurer = (*Runner)(nil)
