package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"colo/machine"

	"github.com/spf13/cobra"
)

func init() {
	mc := &cobra.Command{Use: "machine", Short: "Built-in machine profiles and the host's detected topology"}
	var asJSON, listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the built-in machine profiles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if listJSON {
				var all []*machine.Profile
				for _, n := range machine.Names() {
					p, _ := machine.Get(n)
					all = append(all, p)
				}
				return writeJSON(cmd.OutOrStdout(), all)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tVENDOR\tSOCKETS\tCORES/SOCKET\tLLC\tWAYS\tMBA")
			for _, n := range machine.Names() {
				p, _ := machine.Get(n)
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%.1f MiB\t%d\t%s\n", p.Name, p.Vendor, p.Sockets, p.CoresPerSocket,
					float64(p.LLC.SizeBytes)/(1<<20), p.LLC.Ways, mbaString(p.MBA))
			}
			return w.Flush()
		},
	}
	show := &cobra.Command{
		Use:     "show NAME",
		Short:   "Show one machine profile",
		Example: "  colo machine show icx-4314-2s --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := machine.Get(args[0])
			if err != nil {
				return badInput(err)
			}
			return printProfile(cmd, p, asJSON)
		},
	}
	jsonFlag(show.Flags(), &asJSON)
	jsonFlag(list.Flags(), &listJSON)
	mc.AddCommand(list, show)
	rootCmd.AddCommand(mc)
}

func mbaString(m *machine.MBA) string {
	if m == nil {
		return "-"
	}
	return fmt.Sprintf("%d-%d step %d %s", m.Min, m.Max, m.Gran, m.Unit)
}

func printProfile(cmd *cobra.Command, p *machine.Profile, asJSON bool) error {
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "name\t%s\n", p.Name)
	fmt.Fprintf(w, "description\t%s\n", p.Description)
	fmt.Fprintf(w, "vendor / cpu\t%s / %s\n", p.Vendor, p.CPU)
	fmt.Fprintf(w, "cores\t%d sockets x %d cores (%d threads/core), %.2f GHz\n", p.Sockets, p.CoresPerSocket, p.ThreadsPerCore, p.ClockGHz)
	fmt.Fprintf(w, "LLC\t%.2f MiB per domain, %d ways (%.2f MiB/way), %d slices, %d domain(s)/socket\n",
		float64(p.LLC.SizeBytes)/(1<<20), p.LLC.Ways, float64(p.BytesPerWay())/(1<<20), p.LLC.Slices, p.LLC.DomainsPerSocket)
	if p.CAT.NumCLOSIDs <= 1 && p.MBA == nil {
		// one class holding every way is what a host without resctrl looks like
		fmt.Fprintf(w, "RDT\tno RDT (no CAT or MBA: resctrl is not mounted or the CPU has none)\n")
	} else {
		fmt.Fprintf(w, "CAT\t%d CLOSIDs, cbm_mask %#x, min_cbm_bits %d, sparse masks %v, CDP %v\n",
			p.CAT.NumCLOSIDs, p.FullMask(), p.CAT.MinCBMBits, p.CAT.SparseMasks, p.CAT.CDP)
		fmt.Fprintf(w, "MBA\t%s\n", mbaString(p.MBA))
	}
	fmt.Fprintf(w, "memory bandwidth\t%.0f MB/s per socket\n", p.MemBWPerSocketMBps)
	fmt.Fprintf(w, "RMIDs\t%d\n", p.NumRMIDs)
	if p.Source != "" {
		fmt.Fprintf(w, "source\t%s\n", p.Source)
	}
	return w.Flush()
}
