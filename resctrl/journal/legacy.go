package journal

import (
	"fmt"
	"path"
	"regexp"

	"colo/resctrl"
)

// Groups an older colo left. Before per-instance journals, colo's Linux platform named a
// job's control group colo.jN (N the job's ID), with a monitoring group of the same name in
// mon_groups, and recovered from one host-wide /run/colo/linux-state.json. Nothing on
// record says which run created such a group or whether it still runs (an older colo may
// be running now, with its own recovery), so:
//
//   - the planner counts them as another agent's groups: their CLOSIDs are taken and
//     their ways are never handed out as exclusive (resctrl/plan, Group.Own false);
//   - Reconcile and colo cleanup never remove them on their own;
//   - Legacy lists them and RemoveLegacy removes the ones holding no task (`colo resctrl
//     reconcile --legacy`): an empty group serves nobody, one with tasks may be a live
//     older run's and stays until its tasks are gone.
var legacyName = regexp.MustCompile(`^colo\.j[0-9]+$`)

// Legacy lists the groups on the mount named as colo named them before journals (control
// groups colo.jN and monitoring groups .../mon_groups/colo.jN), in the mount's order.
func Legacy(fsys resctrl.FS) ([]string, error) {
	gs, err := resctrl.New(fsys, resctrl.Options{AllowForeign: true}).Groups()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, g := range gs {
		if g.Path != "" && legacyName.MatchString(path.Base(g.Path)) {
			out = append(out, g.Path)
		}
	}
	return out, nil
}

// RemoveLegacy removes the groups Legacy lists that hold no task (monitoring groups
// first; a control group's tasks include its monitoring groups') and returns them; the
// others are left, with the number of tasks each holds in kept.
func RemoveLegacy(fsys resctrl.FS) (removed []string, kept map[string]int, err error) {
	gs, err := Legacy(fsys)
	if err != nil {
		return nil, nil, err
	}
	c := resctrl.New(fsys, resctrl.Options{AllowForeign: true})
	kept = map[string]int{}
	for i := len(gs) - 1; i >= 0; i-- {
		g := gs[i]
		if !c.Exists(g) {
			continue // went with its control group
		}
		ts, err := c.Tasks(g)
		if err != nil {
			return removed, kept, err
		}
		if len(ts) > 0 {
			kept[g] = len(ts)
			continue
		}
		if err := c.RemoveGroup(g); err != nil {
			return removed, kept, fmt.Errorf("legacy group %s: %w", g, err)
		}
		removed = append(removed, g)
	}
	return removed, kept, nil
}
