package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"colo/resctrl"
	"colo/resctrl/emu"

	"github.com/spf13/cobra"
)

// treeCheck is one finding of colo doctor --from-tree (the shape of colo doctor's).
type treeCheck struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Value   string `json:"value"`
	Meaning string `json:"meaning"`
}

// doctorTree describes a captured host's resctrl: what the kernel offered there and
// the shapes colo has to handle (domain ids, CLOSID budget, SNC, counters, io_alloc).
// Docker, perf and the CPU frequency are this host's and are not checked.
func doctorTree(cmd *cobra.Command, dir string, asJSON bool) error {
	root, err := emu.TreeRoot(dir)
	if err != nil {
		return badInput(err)
	}
	p, err := emu.ProfileFromTree(dir)
	if err != nil {
		return badInput(err)
	}
	st := resctrl.CheckWith(root, dir) // the capture's cpuinfo and mounts stand in for /proc
	fstype := "resctrl (copied)"
	if b, err := os.ReadFile(filepath.Join(dir, "mounts")); err == nil && strings.TrimSpace(string(b)) != "" {
		fstype = strings.TrimSpace(string(b))
	}
	var cs []treeCheck
	add := func(name, status, value, meaning string) { cs = append(cs, treeCheck{name, status, value, meaning}) }
	add("resctrl", "ok", fmt.Sprintf("captured at %s (%s; monitoring %s)", root, strings.Join(st.Resources, ", "), strings.Join(st.Monitoring, ", ")),
		"mount: "+fstype)
	ids := p.L3IDs()
	gaps := "contiguous"
	if len(ids) > 0 && ids[len(ids)-1] != len(ids)-1 {
		gaps = "with gaps: cache ids are not NUMA ids; colo addresses domains by these ids"
	}
	add("l3-domains", "ok", fmt.Sprintf("%d domains, ids %v", len(ids), ids), gaps)
	budget := fmt.Sprintf("%d CLOSIDs usable (the minimum of num_closids over %s)", st.CLOSIDs, strings.Join(st.Resources, ", "))
	add("closids", "ok", budget, "colo's group planner gives out at most this many classes, the default group included")
	if p.Mon != nil {
		v := fmt.Sprintf("%d RMIDs", p.Mon.NumRMIDs)
		m := "every group counts its own bandwidth"
		status := "ok"
		if p.Mon.Counters > 0 {
			v += fmt.Sprintf(", %d assignable MBM counters per domain (mbm_event mode)", p.Mon.Counters)
			m = "fewer counters than groups: the agent assigns counters by priority and rotates the rest (--mbm-period); an unassigned group reads Unassigned, never 0"
			status = "info"
		}
		add("monitoring", status, v, m)
	}
	if p.SNC > 1 {
		add("snc", "info", fmt.Sprintf("sub-NUMA clustering, %d nodes per L3", p.SNC),
			"mon_L3_XX is the sum of its mon_sub_L3_YY; a cache way is worth size/ways/nodes of one node's share")
	}
	if p.L3 != nil {
		add("sparse-masks", "ok", fmt.Sprintf("sparse_masks %v, min_cbm_bits %d, %d-bit masks", p.L3.Sparse, p.L3.MinCBMBits, p.L3.CBMLen),
			"read from info, never inferred from the vendor")
		if p.L3.IOAlloc {
			add("io-alloc", "info", "L3 I/O allocation (io_alloc) present", "enabling it takes the highest CLOSID")
		}
	}
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(cs)
	}
	for _, c := range cs {
		fmt.Fprintf(out, "%-5s %-18s %s\n", strings.ToUpper(c.Status), c.Name, c.Value)
		fmt.Fprintf(out, "      %-18s means: %s\n", "", c.Meaning)
	}
	return nil
}
