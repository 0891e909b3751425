package main

import (
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"colo/resctrl"
	"colo/resctrl/journal"

	"github.com/spf13/cobra"
)

// rmResult is `colo resctrl rm --json`.
type rmResult struct {
	Removed []string `json:"removed"`
	Tasks   int      `json:"tasks"` // tasks that went back to the parent group
}

// rmCmd is `colo resctrl rm GROUP|'PATTERN'…`: remove resource groups. colo's own groups
// (the colo. prefix) only, unless --force; never the default group; never a group a live
// colo instance (run or agent) recorded in its journal, unless --force.
func rmCmd(root *string, out func(*cobra.Command, any, func(io.Writer) error) error) *cobra.Command {
	var force bool
	var stateDir string
	c := &cobra.Command{
		Use:   "rm GROUP|PATTERN...",
		Short: "Remove resource groups (colo's own; others only with --force); their tasks go back to the parent group",
		Long: `Removes the named resctrl groups. A name may be a pattern ('colo.part-ucp-c*',
quoted so the shell leaves it alone; path.Match syntax) matched against every group.
The kernel moves a removed group's tasks and CPUs to its parent (the default group for a
control group, whose monitoring groups go with it).

Refused without --force: a group that is not colo's (its name lacks the colo. prefix) and
a group a live colo instance (a run or the agent) recorded in its journal under
--state-dir. The default group is never removed. This undoes colo partition --apply:
  colo resctrl rm 'colo.part-POLICY-c*'`,
		Example: `  colo resctrl rm colo.web
  colo resctrl --root /tmp/rdt rm 'colo.part-ucp-c*'
  colo resctrl rm other.group --force`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := resctrl.ResolveRoot(*root)
			cl := resctrl.Open(*root, resctrl.Options{AllowForeign: force})
			gs, err := cl.Groups()
			if err != nil {
				return err
			}
			live := liveGroups(stateDir, r)
			var targets []string
			for _, a := range args {
				a = strings.Trim(a, "/")
				if a == "" || a == "." || a == "default" {
					return badInputf("%q: the default group cannot be removed", a)
				}
				if _, err := path.Match(a, ""); err != nil {
					return badInputf("%q: %v", a, err)
				}
				n := 0
				for _, g := range gs {
					if g.Path == "" {
						continue
					}
					if ok, _ := path.Match(a, g.Path); !ok {
						continue
					}
					n++
					if !force && !strings.HasPrefix(path.Base(g.Path), cl.Prefix()) {
						return badInputf("%s is not colo's (its name lacks the prefix %q); pass --force to remove it anyway", g.Path, cl.Prefix())
					}
					if who := live(g.Path); who != "" && !force {
						return badInputf("%s belongs to a live colo instance (%s); stop it (it removes its groups) or pass --force", g.Path, who)
					}
					if !slices.Contains(targets, g.Path) && !slices.Contains(targets, strings.SplitN(g.Path, "/", 2)[0]) {
						targets = append(targets, g.Path)
					}
				}
				if n == 0 {
					return badInputf("%q: no such group at %s (see colo resctrl ls)", a, r)
				}
			}
			res := rmResult{Removed: []string{}}
			for _, p := range targets {
				ts, _ := cl.Tasks(p)
				if err := cl.RemoveGroup(p); err != nil {
					return kernelRejected(err)
				}
				res.Removed = append(res.Removed, p)
				res.Tasks += len(ts)
			}
			return out(cmd, res, func(w io.Writer) error {
				for _, p := range res.Removed {
					fmt.Fprintf(w, "removed %s\n", p)
				}
				fmt.Fprintf(w, "%d tasks went back to the parent group\n", res.Tasks)
				return nil
			})
		},
	}
	c.Flags().BoolVar(&force, "force", false, "also remove groups that are not colo's or that a live colo instance holds")
	c.Flags().StringVar(&stateDir, "state-dir", journal.DefaultStateDir(), "where colo instances keep their journals (a live instance's groups are refused)")
	return c
}

// liveGroups says which live colo instance (a run, the agent) holds a group on root: one
// that recorded it, or whose group prefix its name has ("colo run, pid 123"; "" none).
// Unreadable journals count as none.
func liveGroups(stateDir, root string) func(group string) string {
	rs, _ := journal.ListAll(stateDir)
	var live []journal.Record
	for _, r := range rs {
		if r.Root == root && r.Alive() {
			live = append(live, r)
		}
	}
	return func(group string) string {
		ctrl := strings.SplitN(group, "/", 2)[0]
		for _, r := range live {
			held := r.Prefix != "" && (strings.HasPrefix(ctrl, r.Prefix) || strings.HasPrefix(path.Base(group), r.Prefix))
			for _, g := range r.Groups {
				held = held || strings.Trim(g, "/") == group || strings.Trim(g, "/") == ctrl
			}
			if held {
				return fmt.Sprintf("%s, pid %d", r.Kind, r.PID)
			}
		}
		return ""
	}
}
