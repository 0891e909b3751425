package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"colo/machine"
	plat "colo/platform"
	simplatform "colo/platform/sim"
	"colo/probe"
	"colo/probe/dockerprobe"
	"colo/probe/simprobe"
	"colo/sim"
	"colo/workload/docker"
)

// probeOutput is what `colo probe sensitivity` prints: ς per stressor on Report.Metric.
type probeOutput struct {
	Platform string `json:"platform"`
	Target   string `json:"target"`
	Segment  string `json:"segment"`
	probe.Report
	// Detail is the full result (sim: IPC, IPCE and stalled-cycle vectors; linux: the
	// Docker probe's result).
	Detail any `json:"detail"`
}

func init() {
	var (
		platform, image, target, resctrlRoot, nbCPUs, machineName string
		segment, warmup                                           time.Duration
		asJSON, isolated                                          bool
		targetCPU, ways, mba                                      int
		seed                                                      uint64
	)
	pc := &cobra.Command{Use: "probe", Short: "Probe how a workload reacts to noisy neighbours"}
	c := &cobra.Command{
		Use:   "sensitivity",
		Short: "The thesis's sensitivity probe: ς per stressor (LLC, mem-read, mem-write, syscall, prefetch)",
		Long: `sensitivity runs the thesis's probe (docs/predict.md): an idle-neighbour baseline
segment, then one segment per stressor (llc, mem-read, mem-write, syscall, prefetch) with
a neighbour on the target's LLC, 50 ms samples, outlier trimming, and
ς = clamp((base − stressed)/base, 0, 1) per stressor.

--platform sim probes a simulated workload (--target a sim workload name, e.g.
neighbor:6M:1g or cpu-loop) on the simulated machine; ς is on IPCE.

--platform linux runs the target and the neighbour as containers of the colo image
(colo image build) pinned to two cores sharing the LLC; the target is a colo stressor
command line (e.g. 'stress random --mb 8'). With a hardware PMU ς is on IPCE; without
one (a VM) it is on the target's work per CPU second, and the output says which.
--resctrl-root puts target and neighbour in one CLOS of --ways ways and --mba percent;
without it there is no isolation.`,
		Example: `  colo probe sensitivity --platform sim --target neighbor:6M:1g
  colo probe sensitivity --platform linux --target 'stress random --mb 8' --segment 1s --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if segment <= 0 || warmup < 0 {
				return badInputf("--segment %v must be > 0 and --warmup %v ≥ 0", segment, warmup)
			}
			cfg := probe.DefaultSensitivityConfig()
			cfg.DefaultT = segment * time.Duration(1+len(probe.Stressors))
			cfg.Ways, cfg.MBA = ways, mba
			var out probeOutput
			switch platform {
			case "sim":
				if target == "" {
					target = "neighbor:6M:1g"
				}
				cfg.Isolated = isolated
				if err := cfg.Validate(); err != nil {
					return badInput(err)
				}
				prof, err := machine.Get(machineName)
				if err != nil {
					return badInput(fmt.Errorf("--machine: %w", err))
				}
				if _, err := simplatform.Workload(plat.Job{Workload: target}); err != nil {
					return badInput(fmt.Errorf("--target %q: %w", target, err))
				}
				r, err := simprobe.Probe(simprobe.Options{Machine: prof, Sim: sim.Options{Seed: seed, Noise: 0.01}, Workload: target,
					TargetCore: 0, NeighbourCores: []int{1}, Warmup: warmup}, cfg)
				if err != nil {
					return err
				}
				out = probeOutput{Report: simprobe.Report(r, cfg), Detail: r}
			case "linux":
				if target == "" {
					target = "stress random --mb 8"
				}
				if isolated && resctrlRoot == "" {
					return badInputf("--isolated on linux needs --resctrl-root DIR (a resctrl mount or the emulator's)")
				}
				cfg.Isolated = resctrlRoot != ""
				if err := cfg.Validate(); err != nil {
					return badInput(err)
				}
				args := strings.Fields(target)
				if len(args) == 0 || args[0] != "stress" {
					return badInputf("--target %q: give a colo stressor command line such as 'stress random --mb 8' (its work count is the progress measure without a PMU)", target)
				}
				dc := dockerprobe.Config{Image: image, Target: args, TargetCPU: targetCPU, Probe: cfg, Warmup: warmup, ResctrlRoot: resctrlRoot}
				if nbCPUs != "" {
					l, err := machine.ParseCPUList(nbCPUs)
					if err != nil {
						return badInput(fmt.Errorf("--neighbour-cpus %q: %w", nbCPUs, err))
					}
					dc.NeighbourCPUs = l
				}
				ctx, cancel := signalContext(cmd) // Ctrl-C still removes the containers
				defer cancel()
				d, err := docker.New(ctx, docker.Options{})
				if err != nil {
					return err
				}
				defer d.Close()
				if ok, err := d.ImageExists(ctx, image); err != nil {
					return err
				} else if !ok {
					return badInputf("--image %s: not present locally; build it with `colo image build --tag %s`", image, image)
				}
				stop := plannedBar("probe sensitivity "+target, warmup+6*segment)
				r, err := dockerprobe.Run(ctx, d, dc)
				stop()
				if err != nil {
					return err
				}
				out = probeOutput{Report: r.Report, Detail: r}
			default:
				return badInputf("--platform %q: use sim or linux", platform)
			}
			out.Platform, out.Target, out.Segment = platform, target, segment.String()
			return printProbe(cmd.OutOrStdout(), out, asJSON)
		},
	}
	f := c.Flags()
	f.StringVar(&platform, "platform", "sim", "sim or linux")
	f.StringVar(&target, "target", "", "sim: a simulated workload (default neighbor:6M:1g); linux: a colo stressor command line (default 'stress random --mb 8')")
	f.StringVar(&image, "image", "colo:latest", "linux: the colo image (colo image build)")
	f.StringVar(&resctrlRoot, "resctrl-root", "", "linux: resctrl mount (or emulator mount) for the isolated partition; empty: no isolation")
	f.DurationVar(&segment, "segment", 2*time.Second, "length of each of the 6 segments (the thesis: default_t/6 = 2 s)")
	f.DurationVar(&warmup, "warmup", time.Second, "target runs alone this long before the baseline")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&isolated, "isolated", false, "sim: put target and neighbour in one CLOS of --ways ways and --mba %")
	f.IntVar(&ways, "ways", 6, "isolated partition: LLC ways (thesis §6.2: 6)")
	f.IntVar(&mba, "mba", 50, "isolated partition: MBA percent (thesis §6.2: 50)")
	f.IntVar(&targetCPU, "target-cpu", 0, "linux: the target's core")
	f.StringVar(&nbCPUs, "neighbour-cpus", "", "linux: the neighbour's cores (default: the other cores sharing the target's LLC)")
	f.StringVar(&machineName, "machine", "icx-4314-2s", "sim: machine profile")
	f.Uint64Var(&seed, "seed", 1, "sim: noise seed")
	pc.AddCommand(c)
	rootCmd.AddCommand(pc)
}

func printProbe(w io.Writer, o probeOutput, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(o)
	}
	fmt.Fprintf(w, "sensitivity probe on %s of %q, %s segments\n", o.Platform, o.Target, o.Segment)
	fmt.Fprintf(w, "metric: %s (%s)\nisolation: %s\n", o.Metric, o.Why, o.Isolation)
	unit := o.Metric
	if o.Unit != "" && o.Metric == probe.MetricCPURate {
		unit = o.Unit + " per CPU s"
	}
	share := func(i int) string {
		if i < len(o.CPUShare) {
			return fmt.Sprintf("%9.2f", o.CPUShare[i])
		}
		return ""
	}
	hdr := ""
	if len(o.CPUShare) > 0 {
		hdr = " cpu share"
	}
	fmt.Fprintf(w, "%-10s %8s %14s %8s%s\n", "segment", "ς", unit, "samples", hdr)
	fmt.Fprintf(w, "%-10s %8s %14.4g %8d%s\n", "baseline", "-", o.Base, o.Samples[0], share(0))
	for i, k := range probe.Stressors {
		fmt.Fprintf(w, "%-10s %8.3f %14.4g %8d%s\n", k, o.Sensitivity.Slice()[i], o.Stressed[i], o.Samples[i+1], share(i+1))
	}
	if len(o.CPUShare) > 0 {
		fmt.Fprintln(w, "cpu share: fraction of wall time the target ran on its core (below ~0.9 other processes time-shared it)")
	}
	return nil
}
