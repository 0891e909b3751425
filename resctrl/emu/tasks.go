// Task and CPU membership: the tasks, cpus and cpus_list files and CPU online state
// (rdtgroup_tasks_write, rdtgroup_cpus_write).

package emu

import (
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// ctrlOf is g's CTRL_MON group (g itself for one).
func ctrlOf(g *group) *group {
	if g.ctrl {
		return g
	}
	return g.parent
}

func (e *Emulator) tasksOf(g *group) []int {
	var out []int
	for pid, t := range e.tasks {
		if (g.ctrl && t.closid == g.closid) || (!g.ctrl && t.closid == g.closid && t.rmid == g.rmid) {
			out = append(out, pid)
		}
	}
	sort.Ints(out)
	return out
}

// writeTasks is rdtgroup_tasks_write: comma-separated PIDs moved one after another; the
// first failure stops the write and earlier moves stay.
func (e *Emulator) writeTasks(g *group, buf string) error {
	e.cmd()
	if c := ctrlOf(g); c.mode == "pseudo-locksetup" || c.mode == "pseudo-locked" {
		e.status("Pseudo-locking in progress")
		return syscall.EINVAL
	}
	for buf != "" && buf[0] != '\n' {
		var tok string
		tok, buf, _ = strings.Cut(buf, ",")
		tok = strings.TrimSpace(tok)
		pid, err := strconv.ParseInt(tok, 0, 32)
		if err != nil {
			e.status("Task list parsing error pid %s", tok)
			return syscall.EINVAL
		}
		if pid < 0 {
			e.status("Invalid pid %d", pid)
			return syscall.EINVAL
		}
		if err := e.moveTask(int(pid), g); err != nil {
			e.status("Error while processing task %d", pid)
			return err
		}
	}
	return nil
}

func (e *Emulator) moveTask(pid int, g *group) error {
	if !e.opts.PIDExists(pid) {
		e.status("No task %d", pid)
		return syscall.ESRCH
	}
	if !e.opts.PIDMovable(pid) {
		e.status("No permission to move task %d", pid)
		return syscall.EPERM
	}
	t := e.tasks[pid]
	if t == nil {
		t = &task{} // in the default group until the move below succeeds
	}
	if g.ctrl {
		t.closid, t.rmid = g.closid, g.rmid
	} else {
		if t.closid != g.parent.closid {
			e.status("Can't move task to different control group")
			return syscall.EINVAL
		}
		t.rmid = g.rmid
	}
	e.tasks[pid] = t
	e.gen++
	return nil
}

func (e *Emulator) writeCPUs(g *group, buf string, list bool) error {
	e.cmd()
	if c := ctrlOf(g); c.mode == "pseudo-locksetup" || c.mode == "pseudo-locked" {
		e.status("Pseudo-locking in progress")
		return syscall.EINVAL
	}
	var nm cpuset
	var ok bool
	if list {
		nm, ok = parseList(buf, e.p.CPUs)
	} else {
		nm, ok = parseMask(buf, e.p.CPUs)
	}
	if !ok {
		e.status("Bad CPU list/mask")
		return syscall.EINVAL
	}
	if !nm.andNot(e.online).empty() {
		e.status("Can only assign online CPUs")
		return syscall.EINVAL
	}
	if g.ctrl {
		dropped := g.cpus.andNot(nm)
		if !dropped.empty() {
			if g == e.root {
				e.status("Can't drop CPUs from default group")
				return syscall.EINVAL
			}
			e.root.cpus.orIn(dropped)
		}
		added := nm.andNot(g.cpus)
		if !added.empty() {
			for _, o := range e.sortedCtrls() {
				if o == g {
					continue
				}
				o.cpus.clearIn(added)
				for _, m := range o.mons {
					m.cpus.clearIn(added)
				}
			}
		}
		g.cpus = nm
		for _, m := range g.mons {
			m.cpus = newCPUSet(e.p.CPUs)
		}
	} else {
		if !nm.andNot(g.parent.cpus).empty() {
			e.status("Can only add CPUs to mongroup that belong to parent")
			return syscall.EINVAL
		}
		added := nm.andNot(g.cpus)
		for _, m := range g.parent.mons {
			if m != g {
				m.cpus.clearIn(added)
			}
		}
		g.cpus = nm
	}
	e.gen++
	return nil
}

// ---- CPU online state ----------------------------------------------------------------

// SetOnline takes a CPU offline or brings it back (offline CPUs cannot be assigned).
func (e *Emulator) SetOnline(cpu int, on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cpu < 0 || cpu >= e.p.CPUs {
		return
	}
	if on {
		e.online.set(cpu)
	} else {
		e.online[cpu/64] &^= 1 << uint(cpu%64)
	}
}
