package resctrl

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// Adapter is the narrow per-domain view an execution platform needs (it satisfies
// colo/platform/linux.RDT): one L3 mask and one MB value per group and domain, task
// moves that tolerate exited threads, summed monitoring counters. It writes the
// default group (system/default) but no other agent's groups, and under CDP it sets
// L3CODE and L3DATA together.
type Adapter struct {
	c    *Client
	root string
	cdp  bool
	mb   bool
	// closids and rmids are the mount's usable CLOSIDs and RMIDs (0: no monitoring).
	closids, rmids int
	// l3IDs and mbIDs are the kernel's domain ids of the L3 (L3CODE under CDP) and MB
	// lines, ascending, as the default group's schemata lists them. colo addresses a
	// domain by its index (the socket and CCX order of the machine), the mount by id:
	// real parts have gaps (AMD: 0,2,…,14 or 0–7,16–23).
	l3IDs, mbIDs []int
}

// OpenAdapter opens the resctrl mount at root (ResolveRoot applied) for a platform.
func OpenAdapter(root string) (*Adapter, error) {
	root = ResolveRoot(root)
	return NewAdapter(New(OSFS{Root: root}, Options{AllowDefault: true}), root)
}

// NewAdapter wraps a client (for example one on the in-process emulator).
func NewAdapter(c *Client, root string) (*Adapter, error) {
	in, err := c.Info()
	if err != nil {
		return nil, err
	}
	a := &Adapter{c: c, root: root, cdp: in.CDP(), mb: in.Resource("MB") != nil, closids: in.CLOSIDs()}
	if in.Mon != nil {
		a.rmids = in.Mon.NumRMIDs
	}
	if in.Resource("L3") == nil && !a.cdp {
		return nil, fmt.Errorf("resctrl at %s has no L3 cache allocation (resources: %v)", root, names(in))
	}
	def, err := c.Schemata("")
	if err != nil {
		return nil, err
	}
	for _, l := range def {
		var ids []int
		for _, v := range l.Values {
			ids = append(ids, v.Domain)
		}
		switch l.Resource {
		case "L3", "L3CODE":
			a.l3IDs = ids
		case "MB":
			a.mbIDs = ids
		}
	}
	return a, nil
}

// DomainIDs returns the kernel's L3 domain ids, ascending.
func (a *Adapter) DomainIDs() []int { return append([]int(nil), a.l3IDs...) }

// domainID maps colo's domain index to the kernel's id of a line's domains (an index
// beyond the list is passed through and fails at the kernel).
func domainID(ids []int, i int) int {
	if i >= 0 && i < len(ids) {
		return ids[i]
	}
	return i
}

// DomainIndex maps a kernel L3 domain id to colo's index (an error naming the ids the
// mount has when it has no such domain).
func (a *Adapter) DomainIndex(id int) (int, error) {
	for i, x := range a.l3IDs {
		if x == id {
			return i, nil
		}
	}
	return 0, fmt.Errorf("resctrl at %s has no L3 domain %d (its domain ids: %v)", a.root, id, a.l3IDs)
}

func names(in *Info) []string {
	var out []string
	for _, r := range in.Resources {
		out = append(out, r.Name)
	}
	return out
}

// Client returns the underlying client.
func (a *Adapter) Client() *Client { return a.c }

// Prefix is the name prefix of owned groups.
func (a *Adapter) Prefix() string { return a.c.Prefix() }

// MonPath is the path of MON group mon under CTRL_MON group ctrl.
func (a *Adapter) MonPath(ctrl, mon string) string { return MonPath(ctrl, mon) }

// CreateGroup creates an owned group.
func (a *Adapter) CreateGroup(path string) error { return a.c.CreateGroup(path) }

// RemoveGroup removes an owned group.
func (a *Adapter) RemoveGroup(path string) error { return a.c.RemoveGroup(path) }

// Exists reports whether a group exists.
func (a *Adapter) Exists(path string) bool { return a.c.Exists(path) }

// Root is the mount point.
func (a *Adapter) Root() string { return a.root }

// SetSchemata sets the L3 mask (both CDP halves under CDP) and, when mba > 0, the MB
// value of one domain (colo's index: DomainIDs gives the kernel's id), in one
// all-or-nothing write.
func (a *Adapter) SetSchemata(path string, domain int, mask uint64, mba int) error {
	var s Schemata
	id := domainID(a.l3IDs, domain)
	if a.cdp {
		s = s.Set("L3CODE", id, mask).Set("L3DATA", id, mask)
	} else {
		s = s.Set("L3", id, mask)
	}
	if mba > 0 {
		if !a.mb {
			return fmt.Errorf("resctrl at %s has no MBA; cannot set MB %d on %s", a.root, mba, path)
		}
		s = s.Set("MB", domainID(a.mbIDs, domain), uint64(mba))
	}
	return a.c.SetSchemata(path, s)
}

// ReadSchemata returns the L3 mask (L3DATA under CDP) and MB value (0 without MBA) of
// one domain (colo's index).
func (a *Adapter) ReadSchemata(path string, domain int) (mask uint64, mba int, err error) {
	s, err := a.c.Schemata(path)
	if err != nil {
		return 0, 0, err
	}
	res := "L3"
	if a.cdp {
		res = "L3DATA"
	}
	m, ok := s.Get(res, domainID(a.l3IDs, domain))
	if !ok {
		return 0, 0, fmt.Errorf("resctrl: %s has no %s domain %d (index %d)", path, res, domainID(a.l3IDs, domain), domain)
	}
	if v, ok := s.Get("MB", domainID(a.mbIDs, domain)); ok {
		mba = int(v)
	}
	return m, mba, nil
}

// Tasks lists the thread IDs in a group.
func (a *Adapter) Tasks(path string) ([]int, error) { return a.c.Tasks(path) }

// AddTasks moves threads into a group one by one; threads that exited meanwhile (ESRCH,
// "No task %d") are skipped and counted in gone.
func (a *Adapter) AddTasks(path string, tids []int) (gone int, err error) {
	if err := a.c.mustOwn(path); err != nil {
		return 0, err
	}
	for _, t := range tids {
		if err := a.c.addTasks(path, []int{t}); err != nil {
			if IsErrno(err, syscall.ESRCH) {
				gone++
				continue
			}
			return gone, err
		}
	}
	return gone, nil
}

// ErrNotCounted says an MBM counter read "Unassigned" (no counter held in the kernel's
// mbm_event mode) or "Unavailable" (reset by a configuration change): the bandwidth is
// not measured this time, which is not zero.
var ErrNotCounted = errors.New("MBM counter not counting (Unassigned or Unavailable): not measured")

// MonData sums a group's counters over its L3 domains. When an MBM event the mount
// offers reads Unassigned or Unavailable on any domain, it returns the occupancy and an
// error wrapping ErrNotCounted instead of a partial or zero bandwidth.
func (a *Adapter) MonData(path string) (occupancy, mbmTotal, mbmLocal uint64, err error) {
	md, err := a.c.MonData(path)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, d := range md {
		for _, ev := range d.Unavailable {
			if ev == "mbm_total_bytes" || ev == "mbm_local_bytes" {
				occupancy = 0
				for _, x := range md {
					occupancy += x.LLCOccupancy
				}
				return occupancy, 0, 0, fmt.Errorf("%s domain %d %s: %w", path, d.Domain, ev, ErrNotCounted)
			}
		}
	}
	for _, d := range md {
		occupancy += d.LLCOccupancy
		mbmTotal += d.MBMTotalBytes
		mbmLocal += d.MBMLocalBytes
	}
	return occupancy, mbmTotal, mbmLocal, nil
}

// Reconcile removes every owned group (left by a crashed colo) and returns them.
func (a *Adapter) Reconcile() ([]string, error) { return a.c.Reconcile(nil) }

// RemoveGroups removes the groups whose own name (a CTRL_MON group's name, a MON group's
// last path element) matches, MON groups before their CTRL_MON groups, and returns them;
// nothing else is touched (a CTRL_MON group holding a MON group that does not match
// stays).
func (a *Adapter) RemoveGroups(match func(name string) bool) ([]string, error) {
	return a.c.Reconcile(func(path string) bool {
		return !match(path[strings.LastIndex(path, "/")+1:])
	})
}

// DefaultSchemata reads system/default's whole schemata (every resource and domain), to
// be written back with RestoreDefault.
func (a *Adapter) DefaultSchemata() (string, error) {
	s, err := a.c.Schemata("")
	if err != nil {
		return "", err
	}
	return s.String(), nil
}

// RestoreDefault writes a schemata read by DefaultSchemata back to system/default.
func (a *Adapter) RestoreDefault(schemata string) error {
	s, err := ParseSchemata(schemata)
	if err != nil {
		return err
	}
	return a.c.SetSchemata("", s)
}

// ExclusiveWays is the union of the L3 masks on domain (colo's index) of every control
// group in mode exclusive or pseudo-locked: ways no other group may be given, not even
// system/default (the kernel refuses the write, "overlaps with exclusive group").
func (a *Adapter) ExclusiveWays(domain int) (uint64, error) {
	gs, err := a.c.Groups()
	if err != nil {
		return 0, err
	}
	var out uint64
	for _, g := range gs {
		if g.Path == "" || g.Mon {
			continue
		}
		mode, err := a.c.Mode(g.Path)
		if err != nil || mode != "exclusive" && mode != "pseudo-locked" {
			continue // gone meanwhile, or shareable
		}
		m, _, err := a.ReadSchemata(g.Path, domain)
		if err != nil {
			return 0, err
		}
		out |= m
	}
	return out, nil
}
