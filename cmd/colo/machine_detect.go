package main

import (
	"os"
	"path/filepath"

	"colo/machine"
	"colo/resctrl/emu"

	"github.com/spf13/cobra"
)

// init adds "colo machine detect" to the machine command registered by machine.go (files
// initialise in name order, so machine.go's init has run).
func init() {
	mc, _, err := rootCmd.Find([]string{"machine"})
	if err != nil || mc == rootCmd {
		panic("machine_detect.go: the machine command is not registered")
	}
	var sysfs, resctrlDir, cpuinfo, fromTree string
	var asJSON bool
	detect := &cobra.Command{
		Use:   "detect",
		Short: "Describe this host from sysfs (and /sys/fs/resctrl/info when mounted)",
		Long: `Reads the CPU topology and last-level cache from sysfs and, when resctrl is
mounted, the CAT/MBA capabilities from its info directory. Memory bandwidth is not in
sysfs and is assumed; the description says what was assumed.`,
		Example: "  colo machine detect\n  colo machine detect --json --sysfs /host/sys --resctrl /host/sys/fs/resctrl",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var p *machine.Profile
			var err error
			if fromTree != "" {
				// a capture: DIR/cpu, DIR/resctrl (or DIR itself), DIR/cpuinfo
				root, terr := emu.TreeRoot(fromTree)
				if terr != nil {
					return badInput(terr)
				}
				if _, err := emu.ProfileFromTree(fromTree); err != nil {
					return badInput(err)
				}
				if p, err = machine.DetectDirs(filepath.Join(fromTree, "cpu"), root); err != nil {
					return badInputf("--from-tree %s: %v (a capture has DIR/cpu: colo resctrl capture writes it)", fromTree, err)
				}
				if !cmd.Flags().Changed("cpuinfo") {
					cpuinfo = filepath.Join(fromTree, "cpuinfo")
				}
				p.Source = "captured tree " + fromTree
			} else {
				if _, err := os.Stat(sysfs); err != nil {
					return badInputf("--sysfs %s: %v (give the sysfs mount point, e.g. /sys)", sysfs, err)
				}
				if p, err = machine.Detect(sysfs, resctrlDir); err != nil {
					return err
				}
			}
			p.NameCPU(machine.CPUModel(cpuinfo)) // sysfs does not name the CPU; /proc/cpuinfo does
			return printProfile(cmd, p, asJSON)
		},
	}
	detect.Flags().StringVar(&sysfs, "sysfs", "/sys", "sysfs mount point")
	detect.Flags().StringVar(&fromTree, "from-tree", "", "describe a captured host (colo resctrl capture DIR) instead of this one")
	detect.Flags().StringVar(&resctrlDir, "resctrl", "/sys/fs/resctrl", "resctrl mount point (absent: no CAT/MBA)")
	detect.Flags().StringVar(&cpuinfo, "cpuinfo", "/proc/cpuinfo", "cpuinfo file naming the CPU model")
	jsonFlag(detect.Flags(), &asJSON)
	mc.AddCommand(detect)
}
