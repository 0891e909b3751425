package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"colo/stress"

	"github.com/spf13/cobra"
)

func init() {
	var (
		cfg       stress.Config
		rcfg      stress.ReporterConfig
		duration  time.Duration
		interval  time.Duration
		asJSON    bool
		useSNG    bool
		wallClock bool
		metrics   string
	)
	var kindLines []string
	for _, k := range stress.Kinds() {
		kindLines = append(kindLines, fmt.Sprintf("  %-10s %s", k, stress.Describe(k)))
	}
	kindLines = append(kindLines, fmt.Sprintf("  %-10s %s", "reporter", "measure a Bubble-Up reporter once (--type streaming|random|alternating|hybrid) and print its score"))
	c := &cobra.Command{
		Use:   "stress KIND",
		Short: "Run a built-in stressor, the Bubble-Up SoI, a reporter, or a reference app",
		Long: `Run one built-in load until --duration elapses or colo is signalled (SIGINT/SIGTERM),
then print its throughput (one JSON object per line with --json; with --interval also
one line per interval, "final": false). Working sets (--mb) are MB of 10^6 bytes actually
touched, summed over all threads. Pin with taskset (the CPU affinity is inherited).

Kinds:
` + strings.Join(kindLines, "\n") + `

The thesis's five probe stressors are llc, mem-read, mem-write, syscall, prefetch; with
--stress-ng they run stress-ng with the thesis's exact commands instead (stress-ng must be
installed; the throughput is stress-ng's bogo-ops rate).`,
		Example: `  colo stress soi --mb 48 --stream-threads 1 --random-threads 1 --duration 10s
  colo stress compute --duration 5s --interval 1s --json
  colo stress random --mb 64 --duration 5s --json
  colo stress llc --stress-ng --workers 1 --duration 10s
  colo stress reporter --type alternating --mb 128 --reps 100 --json
  colo stress random --mb 64 --metrics :9100     # colo_stress_work_total on :9100/metrics
  colo stress serve --mb 64 --listen :8080       # key-value service (colo stress serve --help)
  colo stress load --url http://127.0.0.1:8080/kv/{key} --rate 500 --duration 10s`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := args[0]
			if duration < 0 || interval < 0 {
				return badInputf("--duration %v and --interval %v must be ≥ 0", duration, interval)
			}
			ctx, cancel := signalContext(cmd)
			defer cancel()
			out := cmd.OutOrStdout()
			if kind == "reporter" {
				clock := stress.ThreadCPUClock()
				if wallClock {
					clock = time.Now
				}
				var res stress.ReporterResult
				err := stress.OnThread(cfg.CPUs, func() error {
					var err error
					res, err = stress.MeasureReporter(ctx, rcfg, clock)
					return err
				})
				if err != nil {
					if ctx.Err() != nil {
						return fmt.Errorf("reporter interrupted: %w", err)
					}
					return badInput(err)
				}
				return printReporter(out, res, asJSON)
			}
			withDeadline := func() context.CancelFunc {
				if duration <= 0 {
					return func() {}
				}
				var c2 context.CancelFunc
				ctx, c2 = context.WithTimeout(ctx, duration)
				return c2
			}
			if useSNG {
				defer withDeadline()()
				r, err := stress.RunStressNG(ctx, kind, cfg.Workers, duration, os.Stderr, os.Stderr)
				if err != nil {
					return badInput(err)
				}
				return printStress(out, r, asJSON)
			}
			cfg.Kind = kind
			if kind == stress.KindLLC && cfg.MB == 0 {
				cfg.LLCBytes = stress.DetectLLCBytes()
			}
			l, err := stress.New(cfg)
			if err != nil {
				return badInput(err)
			}
			if metrics != "" {
				if err := serveStressMetrics(ctx, metrics, l); err != nil {
					return err
				}
			}
			defer withDeadline()() // the clock starts once the working set is allocated
			emit := func(r stress.Report) { _ = printStress(out, r, asJSON) }
			return printStress(out, stress.Run(ctx, l, interval, time.Now, emit), asJSON)
		},
	}
	f := c.Flags()
	f.Float64Var(&cfg.MB, "mb", 0, "working set in MB (10^6 bytes) actually touched, all threads together (0: the kind's default; soi: 0 = no interference)")
	f.IntVar(&cfg.Workers, "workers", 0, "worker threads (default 1; with --stress-ng 0 keeps the thesis's one per CPU)")
	f.IntVar(&cfg.StreamThreads, "stream-threads", 0, "soi: streaming-copy threads (default 3 with 2 random threads, as the thesis)")
	f.IntVar(&cfg.RandomThreads, "random-threads", 0, "soi: random-access threads")
	f.Uint32Var(&cfg.Seed, "seed", 0, "perturbs the LFSR seeds (0 keeps 0xACE1) and, for reporter, the interleaving order")
	f.DurationVar(&duration, "duration", 0, "stop after this long (0: run until SIGINT/SIGTERM)")
	f.DurationVar(&interval, "interval", 0, "also print the rate every interval (0: only the final line)")
	f.BoolVar(&asJSON, "json", false, "print JSON objects, one per line")
	f.StringVar(&metrics, "metrics", "", "also serve colo_stress_work_total on this address's /metrics (e.g. :9100)")
	f.BoolVar(&useSNG, "stress-ng", false, "run the thesis's stress-ng command for llc, mem-read, mem-write, syscall, prefetch")
	f.StringVar(&rcfg.Type, "type", stress.ReporterAlternating, "reporter: streaming, random, alternating (thesis Type 3) or hybrid")
	f.IntVar(&rcfg.Reps, "reps", 100, "reporter: timed iterations per function")
	f.IntVar(&rcfg.Warmup, "warmup", 2, "reporter: untimed iterations per function first")
	f.BoolVar(&wallClock, "wall-clock", false, "reporter: time iterations by the wall clock instead of the thread's CPU time")
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 && args[0] == "reporter" {
			rcfg.MB = cfg.MB
			rcfg.Seed = uint64(cfg.Seed)
		}
		return nil
	}
	addServeLoad(c)
	rootCmd.AddCommand(c)
}

func printStress(w io.Writer, r stress.Report, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	tag := "interval"
	if r.Final {
		tag = "final"
	}
	_, err := fmt.Fprintf(w, "%s %s: %d workers, %.1f MB, %.2f s, %.4g %s/s\n", r.Kind, tag, r.Workers, r.MB, r.Elapsed, r.Rate, r.Unit)
	return err
}

func printReporter(w io.Writer, r stress.ReporterResult, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	fmt.Fprintf(w, "reporter %s, %.1f MB, %d reps\n", r.Type, r.MB, r.Reps)
	for _, n := range r.FunctionNames() {
		fmt.Fprintf(w, "  %-8s median %.0f ns\n", n, r.Medians[n])
	}
	_, err := fmt.Fprintf(w, "  score    %.0f ns\n", r.Score)
	return err
}
