package journal

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"colo/resctrl"
)

// Undone is what Reconcile did for one dead instance.
type Undone struct {
	Record  Record   `json:"record"`
	Removed []string `json:"removed"` // groups removed
	Default string   `json:"default"` // system/default schemata written back ("" none)
	// DefaultLeft says why a recorded default was not written back ("" when it was or
	// none was recorded).
	DefaultLeft string `json:"default_left"`
	// Dropped says why the record was dropped without undoing anything on the mount
	// (the mount is gone: nothing of it is left to undo).
	Dropped string `json:"dropped"`
	// Err is the step that failed for this record (it is kept for a later try).
	Err error `json:"-"`
}

// Did reports whether Reconcile changed anything for the record (an Undone that did
// nothing is not worth reporting).
func (u Undone) Did() bool {
	return len(u.Removed) > 0 || u.Default != "" || u.DefaultLeft != "" || u.Dropped != "" || u.Err != nil
}

func (u Undone) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "instance %s (%s, pid %d)", u.Record.Instance, u.Record.Kind, u.Record.PID)
	if u.Dropped != "" {
		fmt.Fprintf(&b, ": record dropped: %s", u.Dropped)
	}
	if len(u.Removed) > 0 {
		fmt.Fprintf(&b, ": removed %s", strings.Join(u.Removed, ", "))
	}
	if u.Default != "" {
		fmt.Fprintf(&b, "; restored system/default to %q", strings.TrimSpace(strings.ReplaceAll(u.Default, "\n", "; ")))
	}
	if u.DefaultLeft != "" {
		fmt.Fprintf(&b, "; system/default left as is: %s", u.DefaultLeft)
	}
	if u.Err != nil {
		fmt.Fprintf(&b, "; record kept: %v", u.Err)
	}
	return b.String()
}

// Reconcile undoes on the mount (fsys, at root) what the dead instances recorded under
// stateDir left, each record on its own: the groups it recorded, or that carry its
// prefix, are removed (MON groups first), and system/default gets the administrator's
// schemata the records hold — unless a live instance holds one too (it writes the same
// value back as the last one out; Journal.ReleaseDefault), so a live instance's
// system/default is never written. A record whose changes are all undone is deleted; a
// record whose step failed is kept (Undone.Err) and the others go on; when the mount is
// gone (its schemata file does not exist: unmounted, or an emulator's directory) nothing
// of it is left to undo and the record is dropped with a note. Live instances' groups,
// other agents' groups and a user's own groups are never touched.
//
// fsys nil (instances without resctrl) has nothing on a mount to undo. runGone says whether
// a dead colo run's containers and network are gone (the caller removed them), so its
// record may go; nil keeps runs' records for colo cleanup.
func Reconcile(fsys resctrl.FS, stateDir, root string, runGone func(Record) bool) ([]Undone, error) {
	dir := Dir(stateDir, root)
	rs, err := listDir(dir)
	if err != nil {
		return nil, err
	}
	dead := false
	for _, r := range rs {
		dead = dead || !r.Alive()
	}
	if !dead {
		return nil, nil
	}
	unlock, err := lockDefault(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if rs, err = listDir(dir); err != nil { // again, under the lock
		return nil, err
	}
	var c *resctrl.Client
	gone := ""
	if fsys != nil {
		c = resctrl.New(fsys, resctrl.Options{AllowForeign: true})
		if _, err := fsys.ReadFile("schemata"); errors.Is(err, os.ErrNotExist) {
			gone = fmt.Sprintf("resctrl is no longer mounted at %s", root)
		}
	}
	liveDefault := ""
	for _, r := range rs {
		if r.Alive() && r.Default != "" && liveDefault == "" {
			liveDefault = r.Instance
		}
	}
	var out []Undone
	var errs []error
	restored := false
	for _, r := range rs {
		if r.Alive() {
			continue
		}
		u := Undone{Record: r}
		switch {
		case c == nil:
		case gone != "":
			u.Dropped = gone
		default:
			u.Err = undoGroups(c, r, &u)
			if u.Err == nil && r.Default != "" {
				switch {
				case liveDefault != "":
					u.DefaultLeft = "live instance " + liveDefault + " holds the administrator's default and writes it back at its end"
				case restored:
				default:
					if err := RestoreDefault(c, r.Default); err != nil {
						u.Err = fmt.Errorf("restoring system/default: %w", err)
					} else {
						u.Default, restored = r.Default, true
					}
				}
			}
		}
		if u.Err == nil {
			r.Default, r.Groups = "", nil
			if runGone != nil && runGone(r) || r.Run == "" && r.Network == "" {
				u.Err = r.Forget()
			} else { // its containers are colo cleanup's
				u.Err = r.Save()
			}
		}
		if u.Err != nil {
			errs = append(errs, fmt.Errorf("instance %s: %w", r.Instance, u.Err))
		}
		out = append(out, u)
	}
	return out, errors.Join(errs...)
}

// undoGroups removes the groups of the dead record r (recorded, or carrying its prefix),
// MON groups before their CTRL_MON group.
func undoGroups(c *resctrl.Client, r Record, u *Undone) error {
	gs, err := c.Groups()
	if err != nil {
		return err
	}
	for i := len(gs) - 1; i >= 0; i-- {
		g := gs[i]
		if g.Path == "" || !r.owns(g.Path) || !c.Exists(g.Path) {
			continue
		}
		if err := c.RemoveGroup(g.Path); err != nil {
			return err
		}
		u.Removed = append(u.Removed, g.Path)
	}
	return nil
}

// RestoreDefault writes a recorded system/default schemata back through c.
func RestoreDefault(c *resctrl.Client, schemata string) error {
	s, err := resctrl.ParseSchemata(schemata)
	if err != nil {
		return err
	}
	return c.SetSchemata("", s)
}
