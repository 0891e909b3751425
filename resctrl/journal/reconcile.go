package journal

import (
	"errors"
	"fmt"
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
}

func (u Undone) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "instance %s (%s, pid %d)", u.Record.Instance, u.Record.Kind, u.Record.PID)
	if len(u.Removed) > 0 {
		fmt.Fprintf(&b, ": removed %s", strings.Join(u.Removed, ", "))
	}
	if u.Default != "" {
		fmt.Fprintf(&b, "; restored system/default to %q", strings.TrimSpace(strings.ReplaceAll(u.Default, "\n", "; ")))
	}
	if u.DefaultLeft != "" {
		fmt.Fprintf(&b, "; system/default left as is: %s", u.DefaultLeft)
	}
	return b.String()
}

// Reconcile undoes on the mount (fsys, at root) what the dead instances recorded under
// stateDir left: the groups each recorded, or that carry its prefix (MON groups first),
// are removed, and system/default gets the schemata the oldest dead instance found —
// unless a live instance recorded a default of its own (it restores at its end). A
// record whose changes are all undone is deleted. Live instances' groups, other agents'
// groups and a user's own groups are never touched.
//
// fsys nil (an instance without resctrl) only judges the records. forgetRuns also
// deletes dead colo runs' records (the caller removed their containers and network).
func Reconcile(fsys resctrl.FS, stateDir, root string, forgetRuns bool) ([]Undone, error) {
	rs, err := List(stateDir, root)
	if err != nil {
		return nil, err
	}
	var c *resctrl.Client
	if fsys != nil {
		c = resctrl.New(fsys, resctrl.Options{AllowForeign: true})
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
		if c == nil {
			out = append(out, u)
			continue
		}
		gs, err := c.Groups()
		if err != nil {
			return out, err
		}
		for i := len(gs) - 1; i >= 0; i-- { // MON groups before their CTRL_MON group
			g := gs[i]
			if g.Path == "" || !r.owns(g.Path) || !c.Exists(g.Path) {
				continue
			}
			if err := c.RemoveGroup(g.Path); err != nil {
				errs = append(errs, fmt.Errorf("instance %s: %w", r.Instance, err))
				continue
			}
			u.Removed = append(u.Removed, g.Path)
		}
		if r.Default != "" {
			switch {
			case liveDefault != "":
				u.DefaultLeft = "live instance " + liveDefault + " changed it after and restores it at its end"
			case restored:
				u.DefaultLeft = "an older dead instance's record was written back"
			default:
				s, err := resctrl.ParseSchemata(r.Default)
				if err == nil {
					err = c.SetSchemata("", s)
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("instance %s: restoring system/default: %w", r.Instance, err))
				} else {
					u.Default, restored = r.Default, true
				}
			}
		}
		out = append(out, u)
	}
	if len(errs) > 0 {
		return out, errors.Join(errs...)
	}
	for _, u := range out {
		r := u.Record
		if liveDefault == "" {
			r.Default = "" // written back (or superseded by an older record's)
		}
		r.Groups = nil
		var err error
		switch {
		case r.Default == "" && (forgetRuns || r.Run == "" && r.Network == ""):
			err = r.Forget()
		default: // containers are colo cleanup's; a default waits for the live instance
			err = r.Save()
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// RestoreDefault writes a recorded system/default schemata back through c.
func RestoreDefault(c *resctrl.Client, schemata string) error {
	s, err := resctrl.ParseSchemata(schemata)
	if err != nil {
		return err
	}
	return c.SetSchemata("", s)
}
