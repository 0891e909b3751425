// Package resctrl is a client for the Linux resctrl filesystem (/sys/fs/resctrl): it
// reads what the platform supports (info/), lists and creates control (CTRL_MON) and
// monitoring (MON) groups, reads and writes schemata, moves tasks and CPUs, and reads
// monitoring counters (mon_data).
//
// It works on any root: the real mount, a FUSE-mounted emulator, or in process on the
// emulator of colo/resctrl/emu through the FS interface. It is a good citizen on a
// shared mount: it changes and removes only groups whose name carries its prefix
// (default "colo."), takes flock(LOCK_EX) on the root for multi-step changes, reports
// the kernel's info/last_cmd_status with every rejected write, and rolls multi-group
// changes back when one step fails (Apply).
package resctrl

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"colo/machine"
)

// DefaultRoot is where resctrl is mounted on Linux.
const DefaultRoot = "/sys/fs/resctrl"

// EnvRoot names the environment variable that overrides the root (e.g. a FUSE mount of
// the emulator).
const EnvRoot = "COLO_RESCTRL_ROOT"

// DefaultPrefix is the prefix of the groups colo owns.
const DefaultPrefix = "colo."

// ResolveRoot returns the root to use: the flag value if set, else $COLO_RESCTRL_ROOT,
// else /sys/fs/resctrl.
func ResolveRoot(flag string) string {
	if flag != "" {
		return flag
	}
	if v := os.Getenv(EnvRoot); v != "" {
		return v
	}
	return DefaultRoot
}

// Options configures a client.
type Options struct {
	// Prefix of the groups this client owns (DefaultPrefix if empty).
	Prefix string
	// AllowForeign lets the client change groups without the prefix and the default
	// group (an administrator's CLI; never set it in an agent).
	AllowForeign bool
	// AllowDefault lets the client change the default group's schemata and move tasks
	// back into it (an agent that shrinks system/default to make room); other agents'
	// groups stay off limits.
	AllowDefault bool
}

// Client talks to one resctrl mount.
type Client struct {
	fs     FS
	prefix string
	any    bool
	dflt   bool
}

// New returns a client on fsys.
func New(fsys FS, o Options) *Client {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	return &Client{fs: fsys, prefix: o.Prefix, any: o.AllowForeign, dflt: o.AllowDefault}
}

// Open returns a client on a mounted root (ResolveRoot applied to root).
func Open(root string, o Options) *Client { return New(OSFS{Root: ResolveRoot(root)}, o) }

// FS returns the filesystem the client works on.
func (c *Client) FS() FS { return c.fs }

// Prefix returns the prefix of owned groups.
func (c *Client) Prefix() string { return c.prefix }

func (c *Client) where() string {
	if s, ok := c.fs.(fmt.Stringer); ok {
		return s.String()
	}
	return "resctrl"
}

// WriteError is a write or mkdir the kernel rejected.
type WriteError struct {
	Op     string // "write", "mkdir", "rmdir"
	Path   string // relative to the root
	Data   string // what was written
	Err    error  // the errno (as returned by the filesystem)
	Status string // info/last_cmd_status after the failure ("" when "ok" or unreadable)
}

func (e *WriteError) Error() string {
	var b strings.Builder
	if e.Op == "write" {
		fmt.Fprintf(&b, "resctrl: writing %q to %s failed: %v", strings.TrimSuffix(e.Data, "\n"), e.Path, errnoText(e.Err))
	} else {
		fmt.Fprintf(&b, "resctrl: %s %s failed: %v", e.Op, e.Path, errnoText(e.Err))
	}
	if e.Status != "" {
		fmt.Fprintf(&b, "; kernel says %q", e.Status)
	}
	if h := hint(e.Status, errnoOf(e.Err)); h != "" {
		b.WriteString(" (")
		b.WriteString(h)
		b.WriteString(")")
	}
	return b.String()
}

func (e *WriteError) Unwrap() error { return e.Err }

func errnoText(err error) string {
	if en := errnoOf(err); en != 0 {
		return en.Error()
	}
	return err.Error()
}

// hints say what to do about a rejection: the first entry whose text is in the kernel's
// last_cmd_status (lower case) and whose errno matches (0: any) applies.
var hints = []struct {
	status string
	errno  syscall.Errno
	hint   string
}{
	{"non-consecutive", 0, "this platform needs contiguous masks (info/*/sparse_masks is 0): give one run of set bits, e.g. 0xff0 rather than 0xf0f"},
	{"out of closids", 0, "every CLOSID is in use: remove an unused group or share one group between workloads"},
	{"out of rmids", syscall.EBUSY, "freed RMIDs are still in limbo (occupancy above max_threshold_occupancy); retry later"},
	{"out of rmids", 0, "every RMID is in use: remove MON groups you no longer read"},
	{"overlaps with exclusive", 0, "the mask shares bits with an exclusive group; choose bits free in info/*/bit_usage"},
	{"schemata overlaps", 0, "shrink the other groups (including the default group) off this group's bits first"},
	{"out of range", 0, "see info/*/cbm_mask, min_cbm_bits, min_bandwidth for the accepted range"},
	{"need at least", 0, "see info/*/min_cbm_bits"},
	{"unknown or unsupported resource", 0, "see colo resctrl info for the resources this mount has"},
	{"no task", 0, "the process has exited"},
	{"different control group", 0, "move the task into the MON group's parent CTRL_MON group first"},
}

// hint says what to do about a rejection.
func hint(status string, en syscall.Errno) string {
	s := strings.ToLower(status)
	for _, h := range hints {
		if strings.Contains(s, h.status) && (h.errno == 0 || h.errno == en) {
			return h.hint
		}
	}
	switch {
	case status == "" && en == syscall.EINVAL:
		return "the kernel gave no message: a write without trailing newline, or a domain id the platform does not have"
	case en == syscall.EACCES || en == syscall.EPERM:
		return "run as root, and only write the writable files of group directories"
	}
	return ""
}

func (c *Client) lastCmdStatus() string {
	b, err := c.fs.ReadFile("info/last_cmd_status")
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if s == "ok" {
		return ""
	}
	return strings.ReplaceAll(s, "\n", "; ")
}

func (c *Client) write(path, data string) error {
	if err := c.fs.WriteFile(path, []byte(data)); err != nil {
		return &WriteError{Op: "write", Path: path, Data: data, Err: err, Status: c.lastCmdStatus()}
	}
	return nil
}

func (c *Client) read(path string) (string, error) {
	b, err := c.fs.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("resctrl at %s: %w", c.where(), err)
	}
	return string(b), nil
}

// ---- group paths ---------------------------------------------------------------------

// MonPath is the path of MON group mon under CTRL_MON group ctrl ("" = default group).
func MonPath(ctrl, mon string) string {
	if ctrl == "" {
		return "mon_groups/" + mon
	}
	return ctrl + "/mon_groups/" + mon
}

// SplitGroup splits a group path into its CTRL_MON group and MON group ("" if none),
// rejecting anything that is not a group path.
func SplitGroup(path string) (ctrl, mon string, err error) {
	p := strings.Trim(path, "/")
	if p == "" {
		return "", "", nil
	}
	parts := strings.Split(p, "/")
	bad := func(s string) bool {
		return s == "" || s == "info" || s == "mon_groups" || s == "mon_data" || s == "." || s == ".."
	}
	switch {
	case len(parts) == 1 && !bad(parts[0]):
		return parts[0], "", nil
	case len(parts) == 2 && parts[0] == "mon_groups" && !bad(parts[1]):
		return "", parts[1], nil
	case len(parts) == 3 && parts[1] == "mon_groups" && !bad(parts[0]) && !bad(parts[2]):
		return parts[0], parts[2], nil
	}
	return "", "", fmt.Errorf("%q is not a group path (want NAME, NAME/mon_groups/MON, mon_groups/MON or \"\" for the default group)", path)
}

func join(dir, file string) string {
	if dir == "" {
		return file
	}
	return strings.Trim(dir, "/") + "/" + file
}

// Owns reports whether the client may change or remove the group at path.
func (c *Client) Owns(path string) bool {
	if c.any {
		return true
	}
	ctrl, mon, err := SplitGroup(path)
	if err != nil {
		return false
	}
	if ctrl == "" && mon == "" {
		return c.dflt
	}
	if mon != "" {
		return strings.HasPrefix(mon, c.prefix)
	}
	return ctrl != "" && strings.HasPrefix(ctrl, c.prefix)
}

func (c *Client) mustOwn(path string) error {
	if _, _, err := SplitGroup(path); err != nil {
		return err
	}
	if !c.Owns(path) {
		name := path
		if name == "" {
			name = "the default group"
		}
		return fmt.Errorf("resctrl: %s is not colo's (its name lacks the prefix %q); colo changes only its own groups", name, c.prefix)
	}
	return nil
}

// Group is one resource group.
type Group struct {
	Path  string `json:"path"`
	Ctrl  string `json:"ctrl"` // the CTRL_MON group ("" = default)
	Mon   bool   `json:"mon"`  // a MON group
	Owned bool   `json:"owned"`
}

// Groups lists the default group, the CTRL_MON groups and every MON group, sorted.
func (c *Client) Groups() ([]Group, error) {
	root, err := c.fs.ReadDir("")
	if err != nil {
		return nil, fmt.Errorf("resctrl at %s: %w (is resctrl mounted? see colo doctor)", c.where(), err)
	}
	out := []Group{{Path: "", Ctrl: "", Owned: c.Owns("")}}
	hasMon := false
	for _, n := range root {
		if n == "mon_groups/" {
			hasMon = true
		}
	}
	addMons := func(ctrl string) error {
		if !hasMon {
			return nil
		}
		ms, err := c.fs.ReadDir(join(ctrl, "mon_groups"))
		if err != nil {
			return fmt.Errorf("resctrl at %s: %w", c.where(), err)
		}
		for _, m := range ms {
			if isDirName(m) {
				p := MonPath(ctrl, strings.TrimSuffix(m, "/"))
				out = append(out, Group{Path: p, Ctrl: ctrl, Mon: true, Owned: c.Owns(p)})
			}
		}
		return nil
	}
	if err := addMons(""); err != nil {
		return nil, err
	}
	for _, n := range root {
		if !isDirName(n) {
			continue
		}
		name := strings.TrimSuffix(n, "/")
		if name == "info" || name == "mon_groups" || name == "mon_data" {
			continue
		}
		out = append(out, Group{Path: name, Ctrl: name, Owned: c.Owns(name)})
		if err := addMons(name); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Ctrl != out[j].Ctrl {
			return out[i].Ctrl < out[j].Ctrl
		}
		return !out[i].Mon && out[j].Mon || out[i].Mon == out[j].Mon && out[i].Path < out[j].Path
	})
	return out, nil
}

// CreateGroup creates the group at path (a CTRL_MON group "NAME" or a MON group
// "CTRL/mon_groups/NAME"). The name must carry the client's prefix.
func (c *Client) CreateGroup(path string) error {
	if err := c.mustOwn(path); err != nil {
		return err
	}
	if path == "" {
		return fmt.Errorf("resctrl: the default group always exists")
	}
	if err := c.fs.Mkdir(path); err != nil {
		return &WriteError{Op: "mkdir", Path: path, Err: err, Status: c.lastCmdStatus()}
	}
	return nil
}

// Exists reports whether the group at path exists.
func (c *Client) Exists(path string) bool {
	_, err := c.fs.ReadDir(path)
	return err == nil
}

// RemoveGroup removes an owned group; its tasks and CPUs go to the parent group (the
// default group for a CTRL_MON group, whose MON groups are removed with it).
func (c *Client) RemoveGroup(path string) error {
	if err := c.mustOwn(path); err != nil {
		return err
	}
	if path == "" {
		return fmt.Errorf("resctrl: the default group cannot be removed")
	}
	if err := c.fs.Rmdir(path); err != nil {
		return &WriteError{Op: "rmdir", Path: path, Err: err}
	}
	return nil
}

// MoveMonGroup moves an owned MON group under another CTRL_MON group (its tasks take
// that group's CLOSID and keep their RMID, so monitoring continues without a gap).
func (c *Client) MoveMonGroup(from, to string) error {
	for _, p := range []string{from, to} {
		if err := c.mustOwn(p); err != nil {
			return err
		}
		if _, mon, _ := SplitGroup(p); mon == "" {
			return fmt.Errorf("resctrl: %s is not a MON group path (CTRL/mon_groups/NAME)", p)
		}
	}
	if err := c.fs.Rename(from, to); err != nil {
		return &WriteError{Op: "rename", Path: from + " -> " + to, Err: err, Status: c.lastCmdStatus()}
	}
	return nil
}

// Schemata reads a CTRL_MON group's schemata.
func (c *Client) Schemata(path string) (Schemata, error) {
	if _, mon, err := SplitGroup(path); err != nil {
		return nil, err
	} else if mon != "" {
		return nil, fmt.Errorf("resctrl: %s is a MON group; it has no schemata (its CTRL_MON group has)", path)
	}
	s, err := c.read(join(path, "schemata"))
	if err != nil {
		return nil, err
	}
	sc, err := ParseSchemata(s)
	if err != nil {
		return nil, fmt.Errorf("resctrl: %s/schemata: %w", path, err)
	}
	return sc, nil
}

// SetSchemata writes the given lines (a partial write: other resources and domains keep
// their values) in one write. The kernel applies all or nothing.
func (c *Client) SetSchemata(path string, s Schemata) error {
	if err := c.mustOwn(path); err != nil {
		return err
	}
	if len(s) == 0 {
		return fmt.Errorf("resctrl: empty schemata for %s: give at least one RES:id=value", path)
	}
	return c.write(join(path, "schemata"), s.String())
}

// Mode reads a CTRL_MON group's mode (shareable, exclusive, pseudo-locked ...).
func (c *Client) Mode(path string) (string, error) {
	s, err := c.read(join(path, "mode"))
	return strings.TrimSpace(s), err
}

// SetMode writes a CTRL_MON group's mode.
func (c *Client) SetMode(path, mode string) error {
	if err := c.mustOwn(path); err != nil {
		return err
	}
	return c.write(join(path, "mode"), mode+"\n")
}

// Tasks lists the PIDs of a group (a CTRL_MON group's list includes its MON groups').
func (c *Client) Tasks(path string) ([]int, error) {
	s, err := c.read(join(path, "tasks"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(s) {
		p, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("resctrl: %s/tasks: %q is not a PID", path, f)
		}
		out = append(out, p)
	}
	return out, nil
}

// AddTasks moves tasks into an owned group, one write per PID (older kernels accept
// one PID per write). It stops at the first failure; earlier moves stay (use Apply for
// all-or-nothing).
func (c *Client) AddTasks(path string, pids ...int) error {
	if err := c.mustOwn(path); err != nil {
		return err
	}
	return c.addTasks(path, pids)
}

func (c *Client) addTasks(path string, pids []int) error {
	for _, p := range pids {
		if p <= 0 {
			return fmt.Errorf("resctrl: PID %d is not a positive number", p)
		}
		if err := c.write(join(path, "tasks"), strconv.Itoa(p)+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// CPUs reads a group's CPU list.
func (c *Client) CPUs(path string) ([]int, error) {
	s, err := c.read(join(path, "cpus_list"))
	if err != nil {
		return nil, err
	}
	return machine.ParseCPUList(strings.TrimSpace(s))
}

// SetCPUs assigns exactly these CPUs to an owned group (through cpus_list).
func (c *Client) SetCPUs(path string, cpus []int) error {
	if err := c.mustOwn(path); err != nil {
		return err
	}
	return c.write(join(path, "cpus_list"), machine.FormatCPUList(cpus)+"\n")
}

// MonDomain is the monitoring data of one group on one L3 domain.
type MonDomain struct {
	Domain        int    `json:"domain"`
	LLCOccupancy  uint64 `json:"llc_occupancy_bytes"`
	MBMTotalBytes uint64 `json:"mbm_total_bytes"`
	MBMLocalBytes uint64 `json:"mbm_local_bytes"`
	// Unavailable lists the events that read "Unavailable" or "Error" (e.g. after a
	// counter was reconfigured, or without an assigned counter).
	Unavailable []string `json:"unavailable,omitempty"`
}

// MonData reads mon_data/mon_L3_XX/* of a group (CTRL_MON values include its MON groups).
func (c *Client) MonData(path string) ([]MonDomain, error) {
	dirs, err := c.fs.ReadDir(join(path, "mon_data"))
	if err != nil {
		return nil, fmt.Errorf("resctrl at %s: %s has no mon_data (monitoring unsupported?): %w", c.where(), path, err)
	}
	var out []MonDomain
	for _, d := range dirs {
		name := strings.TrimSuffix(d, "/")
		rest, ok := strings.CutPrefix(name, "mon_L3_")
		if !ok || !isDirName(d) {
			continue
		}
		id, err := strconv.Atoi(rest)
		if err != nil {
			continue
		}
		md := MonDomain{Domain: id}
		files, err := c.fs.ReadDir(join(path, "mon_data/"+name))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if isDirName(f) {
				continue
			}
			b, err := c.fs.ReadFile(join(path, "mon_data/"+name+"/"+f))
			if err != nil {
				md.Unavailable = append(md.Unavailable, f)
				continue
			}
			v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				md.Unavailable = append(md.Unavailable, f)
				continue
			}
			switch f {
			case "llc_occupancy":
				md.LLCOccupancy = v
			case "mbm_total_bytes":
				md.MBMTotalBytes = v
			case "mbm_local_bytes":
				md.MBMLocalBytes = v
			}
		}
		out = append(out, md)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Domain < out[j].Domain })
	return out, nil
}

// TaskGroup finds the group a task is in: its MON group if it is in one, else its
// CTRL_MON group ("" for the default group).
func (c *Client) TaskGroup(pid int) (string, error) {
	gs, err := c.Groups()
	if err != nil {
		return "", err
	}
	ctrl := ""
	for _, g := range gs {
		ts, err := c.Tasks(g.Path)
		if err != nil {
			return "", err
		}
		for _, t := range ts {
			if t == pid {
				if g.Mon {
					return g.Path, nil
				}
				if g.Path != "" {
					ctrl = g.Path
				}
			}
		}
	}
	return ctrl, nil
}

// Reconcile removes owned groups that keep does not want (leftovers of a crashed run).
// MON groups are removed before their CTRL_MON groups; nothing else is touched.
func (c *Client) Reconcile(keep func(path string) bool) ([]string, error) {
	unlock, err := c.fs.Lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	gs, err := c.Groups()
	if err != nil {
		return nil, err
	}
	var removed []string
	// MON groups first (reverse order puts them before their parents).
	for i := len(gs) - 1; i >= 0; i-- {
		g := gs[i]
		if g.Path == "" || !c.Owns(g.Path) || (keep != nil && keep(g.Path)) {
			continue
		}
		if !g.Mon && keep != nil {
			// a kept MON group under a CTRL_MON group keeps its parent too
			kept := false
			for _, m := range gs {
				if m.Mon && m.Ctrl == g.Path && keep(m.Path) {
					kept = true
				}
			}
			if kept {
				continue
			}
		}
		if !c.Exists(g.Path) {
			continue // removed with its parent
		}
		if err := c.RemoveGroup(g.Path); err != nil {
			return removed, err
		}
		removed = append(removed, g.Path)
	}
	sort.Strings(removed)
	return removed, nil
}

// IsErrno reports whether err (from this package or an FS) carries errno.
func IsErrno(err error, errno syscall.Errno) bool { return errors.Is(err, errno) }

// MissingTasks returns the thread IDs of tids that are not in have (a group's tasks file),
// in tids' order: what a sync of a workload's threads into its group must still move.
func MissingTasks(have, tids []int) []int {
	in := make(map[int]bool, len(have))
	for _, t := range have {
		in[t] = true
	}
	var add []int
	for _, t := range tids {
		if !in[t] {
			add = append(add, t)
		}
	}
	return add
}
