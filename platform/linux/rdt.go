package linux

import (
	"colo/machine"
	"colo/resctrl"
	"colo/resctrl/plan"
)

// RDT is what the platform needs from a resctrl mount (the real /sys/fs/resctrl or an
// emulator mount given with --resctrl-root): resctrl.Adapter. Paths are group paths
// relative to the mount root: "" is system/default, "g" a control group,
// "g/mon_groups/m" (or "mon_groups/m" under the default group) a monitoring group.
type RDT interface {
	// PlanState reads every control group for the planner (own: this instance's).
	PlanState(m *machine.Profile, own func(name string) bool) (groups []plan.Group, closids, rmids int, err error)
	// ApplyPlan performs the planner's operations in order.
	ApplyPlan(ops []plan.Op) error
	// SetSchemata sets the L3 mask and (mba > 0) the MB value of one domain.
	SetSchemata(path string, domain int, mask uint64, mba int) error
	// ReadSchemata returns the L3 mask and MB value (0 without MBA) of one domain.
	ReadSchemata(path string, domain int) (mask uint64, mba int, err error)
	// Tasks lists the thread IDs in a group.
	Tasks(path string) ([]int, error)
	// AddTasks moves threads into a group; threads that vanished meanwhile are
	// skipped and counted in gone.
	AddTasks(path string, tids []int) (gone int, err error)
	// MonData sums a monitoring-capable group's counters over its domains.
	MonData(path string) (occupancy, mbmTotal, mbmLocal uint64, err error)
	// RemoveGroups removes the groups whose own name matches (MON groups first) and
	// returns them; nothing else is touched.
	RemoveGroups(match func(name string) bool) ([]string, error)
	// DefaultSchemata reads system/default's whole schemata; RestoreDefault writes it
	// back (the journal keeps it across a crash).
	DefaultSchemata() (string, error)
	RestoreDefault(schemata string) error
	// ExclusiveWays is the union of the L3 masks of the groups in mode exclusive or
	// pseudo-locked on one domain (system/default may not be given them).
	ExclusiveWays(domain int) (uint64, error)
	// Client is the client underneath (journal reconcile works on its FS).
	Client() *resctrl.Client
	// Root is the mount point (for messages).
	Root() string
}
