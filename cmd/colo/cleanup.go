package main

import (
	"encoding/json"
	"fmt"

	"colo/platform/linux"
	"colo/resctrl/journal"

	"github.com/spf13/cobra"
)

func init() {
	var stateDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove what dead colo runs left: their containers, networks, resctrl groups, and system/default as they found it",
		Long: `Reads the journals under --state-dir (each colo run on platform linux writes one per
resctrl mount before it changes anything) and, for every run whose process is gone
(killed, crashed), removes the containers and the Docker network labelled with that run,
the resctrl groups it recorded, and writes system/default's schemata back as it found
it. Live runs, the node agent, other tools' groups and containers, and your own groups
(colo.web) are never touched. colo resctrl reconcile does the resctrl part for one mount.`,
		Example: "  colo cleanup\n  colo cleanup --state-dir /tmp/state --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			did, err := linux.Cleanup(cmd.Context(), stateDir, nil)
			if asJSON {
				if did == nil {
					did = []linux.Done{}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if e := enc.Encode(did); e != nil {
					return e
				}
			} else {
				if len(did) == 0 && err == nil {
					fmt.Fprintln(cmd.OutOrStdout(), "nothing left by a dead colo run")
				}
				for _, d := range did {
					fmt.Fprintln(cmd.OutOrStdout(), d)
				}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&stateDir, "state-dir", journal.DefaultStateDir(), "where colo runs keep their journals")
	jsonFlag(cmd.Flags(), &asJSON)
	rootCmd.AddCommand(cmd)
}
