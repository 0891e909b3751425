package plan

import (
	"sort"
	"strings"

	"colo/machine"
)

// State is a resctrl mount as the planner sees it (resctrl.Adapter implements it): every
// control group, system/default first, own(name) marking the calling instance's, and the
// usable CLOSIDs and RMIDs.
type State interface {
	PlanState(m *machine.Profile, own func(name string) bool) (groups []Group, closids, rmids int, err error)
}

// Read builds the planner's Input for an instance whose groups are named with prefix:
// the mount's groups and budgets from st (a control group is the instance's own when its
// name starts with prefix), where its tenants are (placed) and what each wants, in tenant
// order so that the same wishes always give the same plan. Every caller of Plan (both
// platforms and the node agent) builds its Input here.
func Read(st State, m *machine.Profile, prefix string, placed map[string]Placement, want map[string]Want) (Input, error) {
	groups, closids, rmids, err := st.PlanState(m, func(name string) bool { return strings.HasPrefix(name, prefix) })
	if err != nil {
		return Input{}, err
	}
	in := Input{Machine: m, CLOSIDs: closids, RMIDs: rmids, Prefix: prefix, Groups: groups, Placed: placed}
	names := make([]string, 0, len(want))
	for t := range want {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		in.Want = append(in.Want, want[t])
	}
	return in, nil
}
