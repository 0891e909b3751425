package main

import (
	"fmt"
	"io"

	"colo/resctrl"
	"colo/resctrl/journal"

	"github.com/spf13/cobra"
)

// reconcileCmd is `colo resctrl reconcile`: undo, on one mount, what dead colo instances
// recorded in their journals (resctrl/journal).
func reconcileCmd(root *string, out func(*cobra.Command, any, func(io.Writer) error) error) *cobra.Command {
	var stateDir string
	var legacy bool
	c := &cobra.Command{
		Use:   "reconcile",
		Short: "Undo what dead colo instances left on this mount (their groups, system/default), from their journals",
		Long: `Reads the journals of the resctrl mount under --state-dir (one per colo run, agent or
command that changed the mount) and, for each instance whose process is gone, removes the
groups it recorded (or that carry its prefix) and writes system/default's schemata back
as it found it. Live instances' groups, other agents' groups and your own groups
(colo.web from colo resctrl set --create) are never touched. colo cleanup does the same
for every mount and also removes a dead run's containers and network.

Groups named colo.jN (and mon_groups/colo.jN) were made by a colo from before journals:
nothing records whose they are, so they are never removed on their own and count as
another agent's (their ways are never handed out as exclusive). reconcile names them on
stderr; --legacy removes the ones that hold no task.`,
		Example: `  colo resctrl reconcile
  colo resctrl --root /tmp/rdt reconcile --state-dir /tmp/state`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := resctrl.ResolveRoot(*root)
			done, err := journal.Reconcile(resctrl.OSFS{Root: r}, stateDir, r, nil)
			if err != nil {
				return err
			}
			if err := legacyGroups(cmd.ErrOrStderr(), resctrl.OSFS{Root: r}, legacy); err != nil {
				return err
			}
			done = append([]journal.Undone{}, done...) // --json: [] rather than null
			return out(cmd, done, func(w io.Writer) error {
				if len(done) == 0 {
					fmt.Fprintf(w, "no dead colo instance recorded for %s\n", r)
				}
				for _, u := range done {
					fmt.Fprintln(w, u)
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&stateDir, "state-dir", journal.DefaultStateDir(), "where colo instances keep their journals")
	c.Flags().BoolVar(&legacy, "legacy", false, "also remove the groups an older colo left (colo.jN) that hold no task")
	return c
}

// legacyGroups notes on w the groups an older colo left (journal.Legacy) and, with remove,
// removes the ones holding no task (journal.RemoveLegacy).
func legacyGroups(w io.Writer, fsys resctrl.FS, remove bool) error {
	if !remove {
		gs, err := journal.Legacy(fsys)
		if err != nil {
			return err
		}
		for _, g := range gs {
			fmt.Fprintf(w, "colo: %s was made by a colo from before journals: left alone (counted as another agent's); --legacy removes it when it holds no task\n", g)
		}
		return nil
	}
	removed, kept, err := journal.RemoveLegacy(fsys)
	for _, g := range removed {
		fmt.Fprintf(w, "colo: removed %s (an older colo's group, no task)\n", g)
	}
	for g, n := range kept {
		fmt.Fprintf(w, "colo: kept %s (an older colo's group): it holds %d tasks\n", g, n)
	}
	return err
}
