package resctrl

import (
	"fmt"
	"strings"

	"colo/machine"
	"colo/resctrl/plan"
)

// PlanState reads the mount for the group planner (colo/resctrl/plan): every control
// group, system/default first, with its L3 masks (L3DATA under CDP) and MB values per
// domain and its number of MON groups; own(name) says which control groups the calling
// instance created (its journal). It also returns the usable CLOSIDs and the RMIDs (0
// without monitoring).
func (a *Adapter) PlanState(m *machine.Profile, own func(name string) bool) (groups []plan.Group, closids, rmids int, err error) {
	gs, err := a.c.Groups()
	if err != nil {
		return nil, 0, 0, err
	}
	res := "L3"
	if a.cdp {
		res = "L3DATA"
	}
	idx := map[string]int{}
	for _, g := range gs {
		if g.Mon {
			if i, ok := idx[g.Ctrl]; ok {
				groups[i].Mons++
			}
			continue
		}
		s, err := a.c.Schemata(g.Path)
		if err != nil {
			return nil, 0, 0, err
		}
		pg := plan.Group{Name: g.Path, Own: g.Path != "" && own != nil && own(g.Path), L3: make([]uint64, m.LLCDomains())}
		for d := range pg.L3 {
			pg.L3[d] = m.FullMask()
			if v, ok := s.Get(res, d); ok {
				pg.L3[d] = v
			}
		}
		if a.mb && m.MBA != nil {
			pg.MB = make([]int, m.LLCDomains())
			for d := range pg.MB {
				pg.MB[d] = m.MBA.Max
				if v, ok := s.Get("MB", d); ok {
					pg.MB[d] = int(v)
				}
			}
		}
		idx[g.Path] = len(groups)
		groups = append(groups, pg)
	}
	return groups, a.closids, a.rmids, nil
}

// ApplyPlan performs a plan's operations in order under flock(LOCK_EX) on the root.
// Task moves skip threads that exited meanwhile (ESRCH); under CDP an L3 value is
// written to L3CODE and L3DATA; MB values are dropped on a mount without MBA. It stops
// at the first failure and says which operation failed (the caller re-reads the mount:
// the planner starts from what is there).
func (a *Adapter) ApplyPlan(ops []plan.Op) error {
	if len(ops) == 0 {
		return nil
	}
	unlock, err := a.c.fs.Lock()
	if err != nil {
		return fmt.Errorf("resctrl: flock on %s: %w", a.c.where(), err)
	}
	defer unlock()
	for i, o := range ops {
		if err := a.applyOp(o); err != nil {
			return fmt.Errorf("resctrl plan step %d of %d (%s): %w", i+1, len(ops), strings.TrimSpace(o.String()), err)
		}
	}
	return nil
}

func (a *Adapter) applyOp(o plan.Op) error {
	switch o.Kind {
	case plan.Mkdir:
		return a.c.CreateGroup(o.Group)
	case plan.Rmdir:
		if !a.c.Exists(o.Group) {
			return nil // went with its parent
		}
		return a.c.RemoveGroup(o.Group)
	case plan.Schemata:
		var s Schemata
		for d, v := range o.L3 {
			if a.cdp {
				s = s.Set("L3CODE", d, v).Set("L3DATA", d, v)
			} else {
				s = s.Set("L3", d, v)
			}
		}
		if a.mb {
			for d, v := range o.MB {
				if v > 0 {
					s = s.Set("MB", d, uint64(v))
				}
			}
		}
		if len(s) == 0 {
			return nil
		}
		return a.c.SetSchemata(o.Group, s)
	case plan.Tasks:
		_, err := a.AddTasks(o.Group, o.Tasks)
		return err
	}
	return fmt.Errorf("unknown plan operation %d", o.Kind)
}
