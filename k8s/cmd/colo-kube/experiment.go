package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"colo/k8s/experiment"
	"colo/k8s/kwokrun"
	"colo/k8s/placement"
)

func experimentCmd() *cobra.Command {
	var (
		nodes, pods      int
		seed             uint64
		scheduler, stock string
		profiles         string
		repeat, tput     bool
	)
	cmd := &cobra.Command{
		Use:   "experiment",
		Short: "Place a seeded trace of SPEC CPU2017 tenants on kwok nodes with the stock and colo's scheduler",
		Long: `Runs the same trace twice on a fresh control plane (etcd, kube-apiserver, kwok from
scripts/k8s-build.sh's cache): once with the stock kube-scheduler (default profile), once
with colo-kube-scheduler's colo-scheduler profile. Prints one JSON object: per arm
pods_placed, mean/p90/worst predicted slowdown, priority_over_target and pods/s; for colo
also the simulator's prediction of its placements and whether the kwok run matched it
(and, with --repeat, a second colo run on a new cluster). pods_per_second counts from the
first pod's creation (one client, in trace order) to the last binding; --throughput adds
runs where every pod exists before the scheduler starts (the scheduler's own rate, from
its process start).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodes < 1 || pods < 1 {
				return usage("--nodes and --pods must be ≥ 1")
			}
			if scheduler == "" {
				return usage("--scheduler PATH of colo-kube-scheduler is required")
			}
			abs, err := filepath.Abs(scheduler)
			if err != nil {
				return err
			}
			lib, err := placement.LoadLibrary(profiles)
			if err != nil {
				return usageError{err}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "colo-kube experiment: "+format+"\n", a...) }
			tr := experiment.Generate(seed, nodes, pods, lib.Names())
			out := map[string]any{"nodes": nodes, "pods": pods, "seed": seed}
			def, err := kwokrun.Run(ctx, tr, lib, kwokrun.Arm{Name: "default", Binary: stock, SchedulerName: "default-scheduler", Config: kwokrun.DefaultConfig}, logf)
			if err != nil {
				return fmt.Errorf("default arm: %w", err)
			}
			coloArm := kwokrun.Arm{Name: "colo", Binary: abs, SchedulerName: "colo-scheduler", Config: kwokrun.ColoConfig(seed, 3600)}
			colo, err := kwokrun.Run(ctx, tr, lib, coloArm, logf)
			if err != nil {
				return fmt.Errorf("colo arm: %w", err)
			}
			sim := experiment.SimulateColo(tr, lib)
			n, ex := kwokrun.Diff(sim, colo.Placements)
			out["default"], out["colo"] = def, colo
			out["colo_sim"] = experiment.Evaluate(tr, lib, sim)
			out["colo_matches_sim"] = n == 0
			if n > 0 {
				out["colo_sim_differences"] = fmt.Sprintf("%d pods, e.g. %s", n, strings.Join(ex, "; "))
			}
			if repeat {
				again, err := kwokrun.Run(ctx, tr, lib, coloArm, logf)
				if err != nil {
					return fmt.Errorf("colo arm, second run: %w", err)
				}
				m, _ := kwokrun.Diff(colo.Placements, again.Placements)
				out["colo_deterministic"] = m == 0
			}
			if tput {
				for _, a := range []kwokrun.Arm{
					{Name: "default", Binary: stock, SchedulerName: "default-scheduler", Config: kwokrun.DefaultConfig, Precreate: true},
					{Name: "colo", Binary: abs, SchedulerName: "colo-scheduler", Config: kwokrun.ColoConfig(seed, 3600), Precreate: true},
				} {
					r, err := kwokrun.Run(ctx, tr, lib, a, logf)
					if err != nil {
						return fmt.Errorf("%s throughput run: %w", a.Name, err)
					}
					out[a.Name+"_throughput"] = map[string]any{"pods_placed": r.PodsPlaced, "pods_per_second": r.PodsPerSecond, "seconds": r.Seconds}
				}
			}
			out["colo_beats_default"] = colo.P90PredSlowdown < def.P90PredSlowdown && colo.PriorityOverTarget < def.PriorityOverTarget && colo.PodsPlaced >= def.PodsPlaced
			b, _ := json.Marshal(out)
			fmt.Println(string(b))
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&nodes, "nodes", 120, "kwok nodes (4 CPUs each)")
	f.IntVar(&pods, "pods", 300, "pods in the trace (1 CPU each)")
	f.Uint64Var(&seed, "seed", 42, "trace and tie-breaking seed")
	f.StringVar(&scheduler, "scheduler", "", "colo-kube-scheduler binary")
	f.StringVar(&stock, "stock-scheduler", "kube-scheduler", "stock kube-scheduler (name in the binary cache or a path)")
	f.StringVar(&profiles, "profiles", "", "colo predict data directory (default: embedded SPEC CPU2017)")
	f.BoolVar(&repeat, "repeat", false, "run colo's arm a second time and compare the placements")
	f.BoolVar(&tput, "throughput", false, "also measure pods/s with every pod created before the scheduler starts (both arms)")
	return cmd
}
