package resctrl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Change is one group's part of a multi-group change.
type Change struct {
	// Group is the group path (NAME or NAME/mon_groups/MON); it must be owned.
	Group string
	// Create makes the group if it does not exist.
	Create bool
	// Mode, if set, is written before the schemata (e.g. "shareable").
	Mode string
	// Schemata lines to write (partial write), if any.
	Schemata Schemata
	// Tasks to move into the group.
	Tasks []int
	// ExclusiveAfter writes mode "exclusive" after the schemata.
	ExclusiveAfter bool
}

// ApplyError is a multi-group change that failed at one step and was rolled back.
type ApplyError struct {
	Step        int    // index of the failing Change
	Group       string // its group
	Err         error  // why it failed
	RollbackErr error  // nil when the state before Apply was restored
}

func (e *ApplyError) Error() string {
	s := fmt.Sprintf("resctrl: change %d (group %s) failed: %v", e.Step+1, e.Group, e.Err)
	if e.RollbackErr != nil {
		return s + "; ROLLBACK FAILED, the mount is half-changed: " + e.RollbackErr.Error() +
			" (inspect with colo resctrl ls; colo resctrl reconcile removes colo's groups)"
	}
	return s + "; every earlier step was rolled back, nothing changed"
}

func (e *ApplyError) Unwrap() error { return e.Err }

// Apply performs several changes as one: under flock(LOCK_EX) on the root, each change
// in order; if any step fails, every step already done is undone in reverse order
// (groups created are removed, schemata and modes rewritten to their old values, tasks
// moved back to the groups they came from) and an *ApplyError is returned.
func (c *Client) Apply(changes ...Change) error {
	for _, ch := range changes {
		if err := c.mustOwn(ch.Group); err != nil {
			return err
		}
	}
	unlock, err := c.fs.Lock()
	if err != nil {
		return fmt.Errorf("resctrl: flock on %s: %w", c.where(), err)
	}
	defer unlock()
	var undo []func() error
	fail := func(i int, err error) error {
		var rb []error
		for j := len(undo) - 1; j >= 0; j-- {
			if e := undo[j](); e != nil {
				rb = append(rb, e)
			}
		}
		return &ApplyError{Step: i, Group: changes[i].Group, Err: err, RollbackErr: errors.Join(rb...)}
	}
	for i, ch := range changes {
		g := ch.Group
		if ch.Create && !c.Exists(g) {
			if err := c.CreateGroup(g); err != nil {
				return fail(i, err)
			}
			undo = append(undo, func() error { return c.fs.Rmdir(g) })
		}
		if ch.Mode != "" {
			old, err := c.Mode(g)
			if err != nil {
				return fail(i, err)
			}
			if err := c.write(join(g, "mode"), ch.Mode+"\n"); err != nil {
				return fail(i, err)
			}
			undo = append(undo, func() error { return c.write(join(g, "mode"), old+"\n") })
		}
		if len(ch.Schemata) > 0 {
			cur, err := c.Schemata(g)
			if err != nil {
				return fail(i, err)
			}
			old, err := ch.Schemata.Restrict(cur)
			if err != nil {
				return fail(i, fmt.Errorf("%s: %w", g, err))
			}
			if err := c.write(join(g, "schemata"), ch.Schemata.String()); err != nil {
				// A rejected write is all-or-nothing, except under mba_MBps where the
				// kernel applies MB lines while parsing: put them back too.
				if len(old) > 0 {
					undo = append(undo, func() error { return c.write(join(g, "schemata"), old.String()) })
				}
				return fail(i, err)
			}
			if len(old) > 0 {
				undo = append(undo, func() error { return c.write(join(g, "schemata"), old.String()) })
			}
		}
		if ch.ExclusiveAfter {
			old, err := c.Mode(g)
			if err != nil {
				return fail(i, err)
			}
			if err := c.write(join(g, "mode"), "exclusive\n"); err != nil {
				return fail(i, err)
			}
			undo = append(undo, func() error { return c.write(join(g, "mode"), old+"\n") })
		}
		for _, pid := range ch.Tasks {
			from, err := c.TaskGroup(pid)
			if err != nil {
				return fail(i, err)
			}
			if err := c.addTasks(g, []int{pid}); err != nil {
				return fail(i, err)
			}
			p := pid
			undo = append(undo, func() error { return c.restoreTask(p, from) })
		}
	}
	return nil
}

// restoreTask moves a task back to the group it was in: its CTRL_MON group first (a
// task cannot enter a MON group of another CLOSID), then its MON group.
func (c *Client) restoreTask(pid int, from string) error {
	ctrl, mon, err := SplitGroup(from)
	if err != nil {
		return err
	}
	if err := c.write(join(ctrl, "tasks"), strconv.Itoa(pid)+"\n"); err != nil {
		if strings.Contains(err.Error(), "No task") {
			return nil // it exited meanwhile: nothing to restore
		}
		return err
	}
	if mon != "" {
		return c.write(join(from, "tasks"), strconv.Itoa(pid)+"\n")
	}
	return nil
}
