package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"colo/bench"

	"github.com/spf13/cobra"
)

func init() {
	var (
		out      string
		compare  string
		asJSON   bool
		noStore  bool
		schedArg string
		rcRoot   string
	)
	cmd := &cobra.Command{
		Use:   "run BENCH.yaml",
		Short: "Run a benchmark trace under one or more schedulers (the thesis orchestrator)",
		Long: `colo run replays a benchmark (docs/bench.md): containers arriving from a static or
seeded generated trace, placed by a scheduler, probed for their minimal exclusive LLC
ways and memory bandwidth, sampled by collectors. The default platform is the
simulated testbed (platform: sim, machine icx-4314-2s): an hour of virtual time runs in
seconds. Every run writes a fresh directory under runs/ (or --out) holding the samples,
allocations, probe segments and decisions; the summary is printed at the end.`,
		Example: `  colo run examples/thesis/high-utilization.yaml --compare least-loaded,dynamic
  colo run examples/thesis/low-demand.yaml --compare least-loaded,dynamic --json
  colo run my-bench.yaml --scheduler dynamic --out runs/try1`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			bm, err := bench.Load(args[0])
			if err != nil {
				return badInput(err) // unreadable or invalid benchmark: file:line errors
			}
			bm.ResctrlRoot = rcRoot
			var names []string
			if schedArg != "" {
				names = []string{schedArg}
			}
			if compare != "" {
				if schedArg != "" {
					return badInputf("--scheduler and --compare exclude each other")
				}
				for _, n := range strings.Split(compare, ",") {
					if n = strings.TrimSpace(n); n != "" {
						names = append(names, n)
					}
				}
			}
			for _, n := range names {
				if err := bench.CheckScheduler(n); err != nil {
					return badInput(fmt.Errorf("--compare/--scheduler: %w", err))
				}
			}
			stderr := c.ErrOrStderr()
			opt := bench.RunOptions{
				Warn: func(w string) { fmt.Fprintln(stderr, "colo: warning:", w) },
				Wall: time.Now,
			}
			var closeStore func(bool) error
			runDir := ""
			if !noStore {
				rec, dir, closer, err := openRunStore(bm, out, names, os.Args)
				if err != nil {
					return err
				}
				opt.Recorder, runDir, closeStore = rec, dir, closer
			}
			rep, err := bench.RunAll(bm, names, opt)
			if closeStore != nil {
				if cerr := closeStore(err == nil); err == nil && cerr != nil {
					err = cerr
				}
			}
			if err != nil {
				var be *bench.Error
				if errors.As(err, &be) {
					return badInput(err)
				}
				return err
			}
			rep.RunDir = runDir
			if asJSON {
				enc := json.NewEncoder(c.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return rep.WriteTable(c.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "run directory (default: a fresh timestamped directory under runs/)")
	fl.StringVar(&compare, "compare", "", "comma-separated schedulers to run the same trace under, side by side (e.g. least-loaded,dynamic)")
	fl.StringVar(&schedArg, "scheduler", "", "run under this scheduler instead of the file's scheduler.implementation")
	fl.BoolVar(&asJSON, "json", false, "print the summary as one JSON object (keys in docs/bench.md)")
	fl.BoolVar(&noStore, "no-store", false, "do not write a run directory")
	fl.StringVar(&rcRoot, "resctrl-root", "", "resctrl mount for platform: linux (default /sys/fs/resctrl); ignored on sim")
	rootCmd.AddCommand(cmd)
}
