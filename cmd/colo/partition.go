package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"colo/internal/progress"
	"colo/policy"
	"colo/profile"

	"github.com/spf13/cobra"
)

// thresholdFlags select the classification thresholds (LFOC+ Table 1).
type thresholdFlags struct {
	preset  string
	llcmpkc float64
}

func (t *thresholdFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.preset, "thresholds", "paper", "classification thresholds: paper (LLCMPKC >= 10, LFOC+ Table 1) or pbbcache (>= 14)")
	cmd.Flags().Float64Var(&t.llcmpkc, "streaming-llcmpkc", 0, "override the streaming LLCMPKC threshold")
}

func (t *thresholdFlags) get() (policy.Thresholds, error) {
	var th policy.Thresholds
	switch t.preset {
	case "paper":
		th = policy.PaperThresholds()
	case "pbbcache":
		th = policy.PBBCacheThresholds()
	default:
		return th, badInputf("--thresholds %q: want paper or pbbcache", t.preset)
	}
	if t.llcmpkc < 0 {
		return th, badInputf("--streaming-llcmpkc %v: must be >= 0", t.llcmpkc)
	}
	if t.llcmpkc > 0 {
		th.StreamingLLCMPKC = t.llcmpkc
	}
	return th, nil
}

// workloadsFrom resolves --workload / --workloads into named workloads with their line.
func workloadsFrom(set *profile.Set, one, file string) ([]profile.Workload, error) {
	switch {
	case one != "" && file != "":
		return nil, badInputf("give either --workload or --workloads, not both")
	case one != "":
		names, err := profile.SplitWorkload(one)
		if err != nil {
			return nil, badInput(fmt.Errorf("--workload: %w", err))
		}
		if _, err := set.Lookup(names); err != nil {
			return nil, badInput(fmt.Errorf("--workload: %w", err))
		}
		return []profile.Workload{{Line: 1, Names: names}}, nil
	case file != "":
		w, err := profile.LoadWorkloadsFile(file, set)
		if err != nil {
			return nil, badInput(err)
		}
		return w, nil
	}
	return nil, badInputf("give the applications: --workload a,b,c or --workloads FILE (one comma-separated workload per line)")
}

func init() {
	var f evalFlags
	var th thresholdFlags
	var workloads, policies string
	var jobs int
	var timeLimit time.Duration
	var progressMode, outDir string
	var apply *applyFlags
	cmd := &cobra.Command{
		Use:   "partition",
		Short: "Partition or cluster the LLC ways among co-running applications (UCP, KPart, Dunn, CPA, LFOC, LFOC+, optimal)",
		Long: `partition runs cache-partitioning policies on workloads of profiled applications and
evaluates each decision with the PBBCache performance model (see colo eval).

Policies: ` + strings.Join(policy.Names(), ", ") + `.
opt-* are the optimal strict partitionings (one partition per application), optc-* the
optimal clusterings (exact search); *-stp maximise STP, *-unf minimise unfairness with
STP as the tie-break. JSON keys are documented in docs/partition.md.`,
		Example: `  colo partition --machine skx-6138 --workload sphinx306,lbm06,libquantum06,applu00,soplex06,milc06 \
      --policy ucp,opt-stp --bw-model stalls --max-bw 35000
  colo partition --workloads workloads.csv --policy lfoc+,optc-unf --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, set, model, err := f.setup()
			if err != nil {
				return err
			}
			thr, err := th.get()
			if err != nil {
				return err
			}
			var pols []string
			for _, p := range strings.Split(policies, ",") {
				p = strings.TrimSpace(p)
				if _, err := policy.Get(p); err != nil {
					return badInput(fmt.Errorf("--policy: %w", err))
				}
				pols = append(pols, p)
			}
			wls, err := workloadsFrom(set, f.workload, workloads)
			if err != nil {
				return err
			}
			if jobs < 0 {
				return badInputf("--jobs %d: must be >= 1 (0 = all cores)", jobs)
			}
			if timeLimit < 0 {
				return badInputf("--time-limit %v: must be >= 0 (0 = no limit)", timeLimit)
			}
			if jobs == 0 {
				jobs = runtime.NumCPU()
			}
			bars, err := searchProgress(progressMode, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			doc := outputDoc{Machine: m.Name, Profiles: set.Source, BWModel: string(model.BW), MaxBW: model.MaxBW}
			for wi, wl := range wls {
				apps, err := set.Lookup(wl.Names)
				if err != nil {
					return badInput(err)
				}
				in := policy.Input{Machine: m, Apps: apps, Model: model}
				for _, pn := range pols {
					opt := policy.DefaultOptions()
					opt.Thresholds = thr
					opt.Jobs = jobs
					opt.TimeLimit = timeLimit
					label := fmt.Sprintf("W%d %s", wi+1, pn)
					bar := bars.Start(0, label, progress.Unit("steps"))
					opt.Progress = bar.Update
					opt.Status = searchStatus(bar, label)
					t0 := time.Now()
					sol, err := policy.Run(pn, in, opt)
					secs := time.Since(t0).Seconds()
					bar.Done()
					if err != nil {
						where := "--workload"
						if workloads != "" {
							where = fmt.Sprintf("%s:%d", workloads, wl.Line)
						}
						return badInput(fmt.Errorf("%s: %w", where, err))
					}
					r, err := policy.Evaluate(in, sol)
					if err != nil {
						return badInput(err)
					}
					n := len(apps)
					ro := makeResult(wi+1, pn, wl.Names, sol.AppMasks(n), sol.AppClusters(n), r)
					ro.Seconds, ro.Nodes = secs, sol.Nodes
					if timeLimit > 0 && sol.Gap > 0 {
						ro.Gap = sol.Gap
						ro.Warnings = append(ro.Warnings, fmt.Sprintf("stopped by --time-limit %v: best found, proven within %.4g %% of the optimum (gap)", timeLimit, 100*sol.Gap))
					}
					doc.Results = append(doc.Results, ro)
				}
			}
			if err := writePartitionRun(outDir, doc, os.Args, cmd.ErrOrStderr()); err != nil {
				return err
			}
			said := cmd.OutOrStdout()
			if f.format != "table" {
				said = cmd.ErrOrStderr() // stdout holds the one JSON value (or the CSV)
			}
			if err := applyPartition(said, apply, doc, m.Name, m.LLC.Ways); err != nil { // partition_apply.go
				return err
			}
			return writeResults(cmd.OutOrStdout(), f.format, doc)
		},
	}
	f.register(cmd)
	th.register(cmd)
	cmd.Flags().StringVar(&outDir, "out", "", "also write the results as a run directory (colo report DIR draws STP versus unfairness per policy)")
	cmd.Flags().StringVar(&workloads, "workloads", "", "workloads file: one comma-separated workload per line (PBBCache workloads.csv)")
	cmd.Flags().StringVar(&policies, "policy", "lfoc+", "comma-separated policies: "+strings.Join(policy.Names(), ","))
	cmd.Flags().IntVar(&jobs, "jobs", 0, "parallel workers of the exact searches (0 = all cores)")
	cmd.Flags().DurationVar(&timeLimit, "time-limit", 0, "stop each optc-* search after this long (e.g. 30s) with its best solution and the proven optimality gap (0 = run to optimality)")
	cmd.Flags().StringVar(&progressMode, "progress", "auto", "progress bar on stderr for long searches: auto (when stderr is a terminal and not --quiet), on (even on a pipe), off")
	apply = withApply(cmd, &policies, &f.workload, &workloads) // --apply (partition_apply.go)
	rootCmd.AddCommand(cmd)
}
