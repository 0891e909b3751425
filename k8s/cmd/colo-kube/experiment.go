package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"colo/k8s/experiment"
	"colo/k8s/kwokrun"
	"colo/k8s/twin"
)

// armNames are the experiment's arms, in the order they run.
var armNames = []string{"default", "trimaran_tlp", "trimaran_lvrb", "colo", "colo_stock"}

func experimentCmd() *cobra.Command {
	var (
		nodes, pods               int
		seed                      uint64
		scheduler, stock, trimRan string
		arms                      string
		repeat, tput, simOnly     bool
	)
	cmd := &cobra.Command{
		Use:   "experiment",
		Short: "Place a seeded churn trace on kwok nodes backed by colo's simulated machine, with every arm",
		Long: `Plays one seeded churn trace (pods arriving and finishing) on kwok nodes, each backed by
colo's simulated machine (k8s/twin: two sockets, its own cache, bus and MBA model), once per
arm on a fresh control plane (etcd, kube-apiserver, kwok from scripts/k8s-build.sh's cache):
  default        the stock kube-scheduler (default profile)
  trimaran_tlp   Trimaran TargetLoadPacking (scheduler-plugins' own binary, --trimaran-scheduler)
  trimaran_lvrb  Trimaran LoadVariationRiskBalancing (same binary)
  colo           colo-kube-scheduler, ColoInterference as the only scorer (twin profiles)
  colo_stock     ColoInterference added to the stock profile (weight 5)
The Trimaran arms read the twin's measured CPU utilisation from a load-watcher-compatible
endpoint this command serves. Every bound pod runs on the twin; the twin measures its
slowdown, which no arm's scheduler computes. Prints one JSON object: per arm pods_placed,
twin P50/P90/P99 slowdown, priority-met share, best-effort throughput, nodes used,
pods/s, the scheduler's memory and CPU, the predictor's error; colo_sim (colo's placements
simulated without a cluster) and whether the kwok run matched it; with --repeat whether
colo placed identically twice; with --throughput the precreated-burst rate of default and
colo; --sim-only skips the cluster and prints colo_sim and spread_sim (a model of the
stock scheduler).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodes < 1 || pods < 0 {
				return usage("--nodes must be ≥ 1 and --pods ≥ 0")
			}
			if pods == 0 {
				pods = 10 * nodes
			}
			want := strings.Split(arms, ",")
			for _, a := range want {
				if !slices.Contains(armNames, a) {
					return usage("--arms: unknown arm %q (known: %s)", a, strings.Join(armNames, ","))
				}
			}
			lib, err := twin.Library()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "colo-kube experiment: "+format+"\n", a...) }
			tr := experiment.GenerateChurn(seed, nodes, pods, lib.Names())
			out := map[string]any{"nodes": nodes, "pods": pods, "seed": seed, "node_cpus": tr.NodeMilliCPU / 1000}
			sim, err := experiment.RunChurn(tr, experiment.NewColoSim(tr, lib), lib)
			if err != nil {
				return err
			}
			out["colo_sim"] = sim
			if simOnly {
				spread, err := experiment.RunChurn(tr, experiment.NewSpreadSim(tr), lib)
				if err != nil {
					return err
				}
				out["spread_sim"] = spread
				b, _ := json.Marshal(out)
				fmt.Println(string(b))
				return nil
			}
			if scheduler == "" {
				return usage("--scheduler PATH of colo-kube-scheduler is required")
			}
			abs, err := filepath.Abs(scheduler)
			if err != nil {
				return err
			}
			armOf := map[string]kwokrun.Arm{
				"default":       {Name: "default", Binary: stock, SchedulerName: "default-scheduler", Config: kwokrun.DefaultConfig},
				"trimaran_tlp":  {Name: "trimaran_tlp", Binary: trimRan, SchedulerName: "trimaran-tlp", Config: kwokrun.TrimaranConfig("trimaran-tlp", "TargetLoadPacking")},
				"trimaran_lvrb": {Name: "trimaran_lvrb", Binary: trimRan, SchedulerName: "trimaran-lvrb", Config: kwokrun.TrimaranConfig("trimaran-lvrb", "LoadVariationRiskBalancing")},
				"colo":          {Name: "colo", Binary: abs, SchedulerName: "colo-scheduler", Config: kwokrun.ColoConfig(seed, 0, twin.LibrarySource)},
				"colo_stock":    {Name: "colo_stock", Binary: abs, SchedulerName: "colo-stock", Config: kwokrun.ColoStockConfig(seed, 0, twin.LibrarySource)},
			}
			res := map[string]kwokrun.ChurnResult{}
			for _, name := range armNames {
				if !slices.Contains(want, name) {
					continue
				}
				a := armOf[name]
				if a.Binary == "" {
					out[name] = map[string]any{"skipped": "no --trimaran-scheduler binary"}
					continue
				}
				r, err := kwokrun.RunChurn(ctx, tr, lib, a, logf)
				if err != nil && strings.HasPrefix(name, "trimaran") && ctx.Err() == nil {
					// a peer built from another Kubernetes version: its failure is reported,
					// not fatal
					logf("%s arm failed: %v", name, err)
					out[name] = map[string]any{"error": err.Error()}
					continue
				}
				if err != nil {
					return fmt.Errorf("%s arm: %w", name, err)
				}
				res[name], out[name] = r, r
			}
			if colo, ok := res["colo"]; ok {
				n, ex := kwokrun.Diff(sim.Placements, colo.Placements)
				out["colo_matches_sim"] = n == 0
				if n > 0 {
					out["colo_sim_differences"] = fmt.Sprintf("%d pods, e.g. %s", n, strings.Join(ex, "; "))
				}
				beats := colo.TwinPriorityMetShare >= 0.95 && colo.PodsPlaced == len(tr.Pods)
				for name, r := range res {
					if name != "colo" && !(colo.TwinP90Slowdown < r.TwinP90Slowdown) {
						beats = false
					}
				}
				out["colo_beats_all"] = beats
				if def, ok := res["default"]; ok {
					out["colo_beats_default"] = colo.TwinP90Slowdown < def.TwinP90Slowdown && colo.TwinPriorityMetShare >= def.TwinPriorityMetShare && colo.PodsPlaced >= def.PodsPlaced
				}
				if repeat {
					again, err := kwokrun.RunChurn(ctx, tr, lib, armOf["colo"], logf)
					if err != nil {
						return fmt.Errorf("colo arm, second run: %w", err)
					}
					m, _ := kwokrun.Diff(colo.Placements, again.Placements)
					out["colo_deterministic"] = m == 0
				}
			}
			if tput {
				st := experiment.Generate(seed, nodes, pods, lib.Names())
				for _, a := range []kwokrun.Arm{
					{Name: "default", Binary: stock, SchedulerName: "default-scheduler", Config: kwokrun.DefaultConfig, Precreate: true},
					{Name: "colo", Binary: abs, SchedulerName: "colo-scheduler", Config: kwokrun.ColoConfig(seed, 0, twin.LibrarySource), Precreate: true},
				} {
					st.NodeMilliCPU = tr.NodeMilliCPU
					r, err := kwokrun.Run(ctx, st, lib, a, logf)
					if err != nil {
						return fmt.Errorf("%s throughput run: %w", a.Name, err)
					}
					out[a.Name+"_throughput"] = map[string]any{"pods_placed": r.PodsPlaced, "pods_per_second": r.PodsPerSecond, "seconds": r.Seconds}
				}
			}
			b, _ := json.Marshal(out)
			fmt.Println(string(b))
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&nodes, "nodes", 40, "kwok nodes (each a twin node of 16 pod CPUs on 2 sockets)")
	f.IntVar(&pods, "pods", 0, "pods in the churn trace (1 CPU each; 0: 10 per node)")
	f.Uint64Var(&seed, "seed", 42, "trace, twin noise and tie-breaking seed")
	f.StringVar(&scheduler, "scheduler", "", "colo-kube-scheduler binary")
	f.StringVar(&stock, "stock-scheduler", "kube-scheduler", "stock kube-scheduler (name in the binary cache or a path)")
	f.StringVar(&trimRan, "trimaran-scheduler", "", "scheduler-plugins' scheduler binary with Trimaran (name in the binary cache or a path; empty: Trimaran arms skipped)")
	f.StringVar(&arms, "arms", strings.Join(armNames, ","), "arms to run, comma-separated")
	f.BoolVar(&repeat, "repeat", false, "run colo's arm a second time and compare the placements")
	f.BoolVar(&tput, "throughput", false, "also measure pods/s with every pod of a static trace created before the scheduler starts (default and colo)")
	f.BoolVar(&simOnly, "sim-only", false, "no cluster: colo's simulated placements and the stock scheduler's model on the twin")
	return cmd
}
