package main

import (
	"colo/agent/discovery"
	"colo/agent/discovery/nri"
	"colo/agent/discovery/process"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// processFlags are colo agent's flags for --runtime process.
type processFlags struct {
	cgroupParent string
	labelsDir    string
	stateDir     string
}

func addProcessFlags(fl *pflag.FlagSet, f *processFlags) {
	fl.StringVar(&f.cgroupParent, "cgroup-parent", "colo", "--runtime process: the cgroup (relative to each hierarchy root, v1 or v2) whose child cgroups are the tenants; default the parent of colo's process runtime")
	fl.StringVar(&f.labelsDir, "labels-dir", "", "--runtime process: directory of <cgroup name>.labels files (KEY=VALUE lines: colo.io/class=priority …)")
	fl.StringVar(&f.stateDir, "process-state-dir", "/run/colo/process", "--runtime process: the state directory of colo run's process runtime (its workloads are left to colo run)")
}

// newDiscovery builds the non-Docker discoveries of colo agent.
func newDiscovery(f agentFlags, log *slog.Logger) (discovery.Source, error) {
	switch f.runtime {
	case "nri":
		return &nri.Source{Socket: f.nriSocket, Log: log}, nil
	case "process":
		p := f.process
		if slices.Contains(strings.Split(p.cgroupParent, "/"), "..") {
			return nil, badInputf("--cgroup-parent %q: a cgroup path relative to the hierarchy roots, without ..", p.cgroupParent)
		}
		if p.labelsDir != "" {
			if st, err := os.Stat(p.labelsDir); err != nil || !st.IsDir() {
				return nil, badInputf("--labels-dir %s: not a directory", p.labelsDir)
			}
		}
		return &process.Source{Parent: p.cgroupParent, LabelsDir: p.labelsDir, StateDir: p.stateDir, Interval: f.interval, Log: log}, nil
	}
	return nil, fmt.Errorf("--runtime %s: not a runtime colo agent follows; use docker, nri or process", f.runtime)
}
