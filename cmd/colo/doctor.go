package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"colo/perf"
	"colo/resctrl"
	"colo/workload"
	"colo/workload/docker"
	"colo/workload/host"
)

func init() {
	var asJSON bool
	var resctrlRoot, fromTree string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this host for colo: Docker, cgroups, perf counters, resctrl, CPU frequency, SMT, huge pages",
		Long: `doctor inspects the host and says, line by line, what each finding means for colo
and how to fix it: Docker reachable and its version, cgroup mode, perf availability
(hardware counters or software events only), resctrl mount and features, CPU frequency
governor and turbo (turbo on raised the median slowdown-prediction error from 0.98 % to
12.05 % in the Bubble-Up validation), SMT and huge pages.`,
		Example: "  colo doctor\n  colo doctor --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if fromTree != "" {
				return doctorTree(cmd, fromTree, asJSON)
			}
			checks := runDoctor(cmd.Context(), resctrlRoot)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(checks)
			}
			for _, c := range checks {
				fmt.Fprintf(out, "%-5s %-18s %s\n", strings.ToUpper(string(c.Status)), c.Name, c.Value)
				fmt.Fprintf(out, "      %-18s means: %s\n", "", c.Meaning)
				if c.Fix != "" && c.Status != host.OK {
					fmt.Fprintf(out, "      %-18s fix:   %s\n", "", c.Fix)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	cmd.Flags().StringVar(&fromTree, "from-tree", "", "check a captured host (colo resctrl capture DIR) instead of this one: its resctrl shape only")
	cmd.Flags().StringVar(&resctrlRoot, "resctrl-root", "", "resctrl mount to check (default $COLO_RESCTRL_ROOT or /sys/fs/resctrl)")
	rootCmd.AddCommand(cmd)
}

func runDoctor(ctx context.Context, resctrlRoot string) []host.Check {
	if ctx == nil {
		ctx = context.Background()
	}
	facts := host.Read("/")
	var dp host.DockerProbe
	if si, err := docker.Probe(ctx); err != nil {
		dp.Err = err.Error()
	} else {
		dp = host.DockerProbe{Reachable: true, Version: si.Version, APIVersion: si.APIVersion, CgroupDriver: si.CgroupDriver, CgroupVersion: si.CgroupVersion}
	}
	pp := host.PerfProbe{Mode: string(perf.ModeNone), Paranoid: perf.Paranoid()}
	if cg, err := workload.CgroupOfPID(os.Getpid()); err != nil {
		pp.Reason = err.Error()
	} else {
		mode, reason, ma, err := perf.Probe(cg.PerfEventDir(), 0, nil)
		if err != nil {
			reason = err.Error()
		}
		pp.Mode, pp.Reason, pp.Microarch = string(mode), reason, ma
	}
	st := resctrl.Check(resctrlRoot)
	rp := host.ResctrlProbe{Root: st.Root, Mounted: st.Mounted, Emulated: st.Emulated, CPUFlags: st.CPUFlags,
		Resources: st.Resources, Monitoring: st.Monitoring, CLOSIDs: st.CLOSIDs, RMIDs: st.RMIDs, Reason: st.Reason}
	return host.Diagnose(facts, dp, pp, rp)
}
