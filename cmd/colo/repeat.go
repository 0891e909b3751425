package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"colo/bench"
	"colo/internal/progress"
	"colo/report"

	"github.com/spf13/cobra"
)

// repeatFlags are the --repeat flags shared by colo run and colo compare.
type repeatFlags struct {
	n        int
	parallel int
	noise    float64
	html     string
}

// withRepeat adds --repeat N (and --noise, --parallel, --html) to a command whose single
// argument is a benchmark file: with N ≥ 2 the command runs the benchmark under N seeds
// and prints intervals and paired tests instead of one run (kind "run" or "compare").
func withRepeat(cmd *cobra.Command, kind string) {
	var f repeatFlags
	fl := cmd.Flags()
	fl.IntVar(&f.n, "repeat", 1, "run under N seeds (trace seed and sim noise seed + 0..N−1, in parallel) and print mean, sd and 95 % CI per metric and a paired t-test against the first scheduler")
	fl.IntVar(&f.parallel, "parallel", 0, "with --repeat: seeds run at once (0: the available cores)")
	fl.Float64Var(&f.noise, "noise", -1, fmt.Sprintf("with --repeat: sim measurement noise, relative sd (default: the benchmark's; %g for a static trace, whose seeds would otherwise be equal)", bench.DefaultRepeatNoise))
	fl.StringVar(&f.html, "html", "", "with --repeat: also write an HTML page drawing the intervals to this file")
	single := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if f.n < 1 || f.n > maxRepeat {
			return badInputf("--repeat %d: want 1 to %d", f.n, maxRepeat)
		}
		if f.parallel < 0 {
			return badInputf("--parallel %d: want ≥ 0 (0: the available cores)", f.parallel)
		}
		if f.n == 1 {
			if f.html != "" || c.Flags().Changed("noise") || c.Flags().Changed("parallel") {
				return badInputf("--html, --noise and --parallel go with --repeat N (N ≥ 2)")
			}
			return single(c, args)
		}
		if f.noise > 0.5 {
			return badInputf("--noise %v: want a relative standard deviation in [0, 0.5]", f.noise)
		}
		return runRepeat(c, args[0], kind, f)
	}
}

// maxRepeat bounds --repeat: every seed is a whole run, so a count beyond it cannot
// finish (and would hold a result per seed in memory).
const maxRepeat = 1000

func runRepeat(c *cobra.Command, file, kind string, f repeatFlags) error {
	bm, err := bench.Load(file)
	if err != nil {
		return badInput(err)
	}
	fl := c.Flags()
	if p, _ := fl.GetString("platform"); p != "" {
		bm.Platform = p
	}
	if bm.Platform != "sim" && bm.Platform != "" {
		return badInputf("--repeat runs on platform sim only (this benchmark: %s)", bm.Platform)
	}
	var names []string
	one := bench.RunReplica
	metrics := bench.RunMetrics
	asJSON := false
	switch kind {
	case "run", "compare":
		for _, fn := range []string{"out", "interval"} {
			if fl.Changed(fn) {
				return badInputf("--%s: --repeat writes no run directory and prints no live metrics", fn)
			}
		}
	}
	switch kind {
	case "run":
		s, _ := fl.GetString("scheduler")
		cmp, _ := fl.GetString("compare")
		if s != "" && cmp != "" {
			return badInputf("--scheduler and --compare exclude each other")
		}
		names = splitNames(s + "," + cmp)
		if len(names) == 0 {
			names = []string{bm.Sched.Implementation}
		}
		for _, n := range names {
			if err := bench.CheckScheduler(n); err != nil {
				return badInput(fmt.Errorf("--compare/--scheduler: %w", err))
			}
		}
		asJSON, _ = fl.GetBool("json")
	case "compare":
		s, _ := fl.GetString("schedulers")
		if !fl.Changed("schedulers") && bench.HasGuardMeasures(bm) {
			s = bench.GuardSchedulers
		}
		names = splitNames(s)
		for _, n := range names {
			if n != bench.Shared {
				if err := bench.CheckScheduler(n); err != nil {
					return badInputf("--schedulers: %v; or shared (least-loaded without RDT)", err)
				}
			}
		}
		if len(names) == 0 {
			return badInputf("--schedulers: name at least one scheduler")
		}
		one, metrics = bench.CompareReplica, bench.CompareMetricsFor(bm)
		format, _ := fl.GetString("format")
		j, _ := fl.GetBool("json")
		if format, err = outputFormat(j, format, "table", "json"); err != nil {
			return badInput(err)
		}
		asJSON = format == "json"
	}
	bar := progress.Start(int64(f.n), kind+" --repeat", progress.Unit("seeds"))
	defer bar.Done()
	rep, err := bench.Repeat(bm, f.n, f.parallel, f.noise, metrics,
		func(_ int, b *bench.Benchmark) (bench.Replica, error) { return one(b, names) }, func() { bar.Add(1) })
	bar.Done()
	if err != nil {
		var be *bench.Error
		if errors.As(err, &be) {
			return badInput(err)
		}
		return err
	}
	if f.html != "" {
		if err := writeIntervalsHTML(f.html, rep); err != nil {
			return err
		}
	}
	return printRepeat(c.OutOrStdout(), rep, asJSON)
}

func writeIntervalsHTML(path string, rep *bench.RepeatReport) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteIntervals(fh, rep); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

func printRepeat(w io.Writer, rep *bench.RepeatReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteTable(w)
}

func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
