// Group modes (shareable, exclusive, pseudo-locksetup) and the overlap tests behind
// them (rdtgroup_mode_write, rdtgroup_mode_test_exclusive, rdtgroup_cbm_overlaps).

package emu

import (
	"syscall"

	"colo/machine"
)

func (e *Emulator) writeMode(g *group, buf string) error {
	if len(buf) == 0 || buf[len(buf)-1] != '\n' {
		return syscall.EINVAL
	}
	buf = buf[:len(buf)-1]
	e.cmd()
	if buf == g.mode {
		return nil
	}
	if g.mode == "pseudo-locked" {
		e.status("Cannot change pseudo-locked group")
		return syscall.EINVAL
	}
	switch buf {
	case "shareable":
		if err := e.locksetupExit(g); err != nil {
			return err
		}
		g.mode = "shareable"
	case "exclusive":
		if !e.testExclusive(g) {
			return syscall.EINVAL
		}
		if err := e.locksetupExit(g); err != nil {
			return err
		}
		g.mode = "exclusive"
	case "pseudo-locksetup":
		if e.p.Vendor == machine.Arm {
			// arm64 kernels are built without CONFIG_RESCTRL_FS_PSEUDO_LOCK
			e.status("Unknown or unsupported mode")
			return syscall.EINVAL
		}
		// rdtgroup_locksetup_enter, in the kernel's order
		switch {
		case g == e.root:
			e.status("Cannot pseudo-lock default group")
		case e.p.CDP || e.p.CDPL2:
			e.status("CDP enabled")
		case !e.p.PseudoLock:
			e.status("Pseudo-locking not supported")
		case len(g.mons) > 0:
			e.status("Monitoring in progress")
		case len(e.tasksOf(g)) > 0:
			e.status("Tasks assigned to resource group")
		case !g.cpus.empty():
			e.status("CPUs assigned to resource group")
		default:
			// the group's RMID is not needed while it is used for pseudo-locking
			if e.p.Mon != nil {
				e.releaseRMID(g.rmid)
				g.rmid = noID
			}
			g.mode = "pseudo-locksetup"
			e.gen++
			return nil
		}
		return syscall.EINVAL
	default:
		e.status("Unknown or unsupported mode")
		return syscall.EINVAL
	}
	e.gen++
	return nil
}

// locksetupExit is rdtgroup_locksetup_exit: a group leaving pseudo-locksetup for
// shareable or exclusive takes an RMID again (it gave its own up on entering), or stays
// in pseudo-locksetup with "Out of RMIDs".
func (e *Emulator) locksetupExit(g *group) error {
	if g.mode != "pseudo-locksetup" || e.p.Mon == nil {
		return nil
	}
	r, err := e.allocRMID()
	if err != nil {
		e.status("Out of RMIDs")
		return err
	}
	g.rmid = r
	e.rmids[r] = g
	return nil
}

// testExclusive is rdtgroup_mode_test_exclusive: every cache mask of g must overlap
// neither the hardware-shareable bits nor any other group.
func (e *Emulator) testExclusive(g *group) bool {
	hasCache := false
	for _, s := range e.schemas {
		if !s.isCache() {
			continue
		}
		hasCache = true
		for d := 0; d < s.domains; d++ {
			if e.cbmOverlaps(s, d, g.cfg[s.name][d], g.closid, false) {
				e.status("Schemata overlaps")
				return false
			}
		}
	}
	if !hasCache {
		e.status("Cannot be exclusive without CAT/CDP")
		return false
	}
	return true
}

// cbmOverlaps is rdtgroup_cbm_overlaps: does cbm on domain d overlap another CLOSID's
// mask (only exclusive ones when exclusive is set; also hardware-shareable bits when
// not)? Under CDP the peer schema (CODE vs DATA) is checked too.
func (e *Emulator) cbmOverlaps(s *schema, d int, cbm uint32, closid int, exclusive bool) bool {
	if e.cbmOverlaps1(s, d, cbm, closid, exclusive) {
		return true
	}
	if p := e.peer(s); p != nil {
		return e.cbmOverlaps1(p, d, cbm, closid, exclusive)
	}
	return false
}

func (e *Emulator) cbmOverlaps1(s *schema, d int, cbm uint32, closid int, exclusive bool) bool {
	if !exclusive && cbm&uint32(s.cache.ShareableBits) != 0 {
		return true
	}
	for _, o := range e.sortedCtrls() {
		if o.closid == closid || o.mode == "pseudo-locksetup" || o.mode == "pseudo-locked" {
			// a locksetup group's masks mean nothing until it is locked; a locked group
			// holds no CLOSID (its region is checked on its own: lockedIn)
			continue
		}
		if cbm&o.cfg[s.name][d] != 0 {
			if exclusive {
				if o.mode == "exclusive" {
					return true
				}
				continue
			}
			return true
		}
	}
	return false
}
