package linux

// RDT is what the platform needs from a resctrl mount (the real /sys/fs/resctrl or an
// emulator mount given with --resctrl-root). Paths are group paths relative to the
// mount root: "" is system/default, "g" a control group, "g/mon_groups/m" (or
// "mon_groups/m" under the default group) a monitoring group. Implemented over the
// resctrl client (resctrlRDT); a fake in tests.
type RDT interface {
	// Prefix is the name prefix of the groups the platform owns.
	Prefix() string
	// MonPath is the path of monitoring group mon under control group ctrl.
	MonPath(ctrl, mon string) string
	CreateGroup(path string) error
	RemoveGroup(path string) error
	Exists(path string) bool
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
	// Reconcile removes every owned group (left by a crashed colo) and returns them.
	Reconcile() ([]string, error)
	// Root is the mount point (for messages).
	Root() string
}
