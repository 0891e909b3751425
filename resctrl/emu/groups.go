// Control and monitoring groups: mkdir, rmdir and rename of resctrl directories
// (rdtgroup_mkdir, rdtgroup_rmdir, rdtgroup_rename in fs/resctrl/rdtgroup.c).

package emu

import (
	"math/bits"
	"strings"
	"syscall"

	"colo/cbm"
)

// ---- mkdir / rmdir -------------------------------------------------------------------

func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// Mkdir creates a CTRL_MON group ("name") or a MON group ("[ctrl/]mon_groups/name").
func (e *Emulator) Mkdir(path string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := splitPath(path)
	if len(c) == 0 {
		return syscall.EEXIST
	}
	if n, err := e.resolve(c); err == nil && n != nil {
		return syscall.EEXIST
	}
	name := c[len(c)-1]
	if strings.Contains(name, "\n") {
		return syscall.EINVAL
	}
	if len(c) > 1 && name == "mon_groups" {
		return syscall.EPERM // is_mon_groups: a MON group may not be called mon_groups
	}
	switch {
	case len(c) == 1:
		return e.mkdirCtrl(name)
	case len(c) == 2 && c[0] == "mon_groups" && e.p.Mon != nil:
		return e.mkdirMon(e.root, name)
	case len(c) == 3 && c[1] == "mon_groups" && e.p.Mon != nil:
		g := e.ctrls[c[0]]
		if g == nil {
			return syscall.ENOENT
		}
		if g.mode == "pseudo-locksetup" || g.mode == "pseudo-locked" {
			e.cmd()
			e.status("Pseudo-locking in progress")
			return syscall.EINVAL
		}
		return e.mkdirMon(g, name)
	}
	if _, err := e.resolve(c[:len(c)-1]); err != nil {
		return syscall.ENOENT
	}
	return syscall.EPERM
}

func (e *Emulator) mkdirCtrl(name string) error {
	e.cmd()
	closid := -1
	for i := 0; i < e.closids; i++ {
		if !e.used[i] {
			closid = i
			break
		}
	}
	if closid < 0 {
		e.status("Out of CLOSIDs")
		return syscall.ENOSPC
	}
	g := &group{name: name, ctrl: true, closid: closid, mode: "shareable", mons: map[string]*group{},
		cpus: newCPUSet(e.p.CPUs), event: "mbm_local_bytes"}
	if e.p.Mon != nil {
		r, err := e.allocRMID()
		if err != nil {
			e.status("Out of RMIDs")
			return err
		}
		g.rmid = r
	}
	// rdtgroup_init_alloc: each cache domain starts with every bit that no exclusive
	// group holds (shareable bits, shareable groups' bits, unused bits), cut to its
	// lowest contiguous run (__init_one_rdt_domain, cbm_ensure_valid); bandwidth starts
	// at the maximum.
	cfg := map[string][]uint32{}
	for _, s := range e.schemas {
		v := make([]uint32, s.domains)
		for d := range v {
			if !s.isCache() {
				v[d] = e.defaultCtrl(s)
				continue
			}
			full := uint32(cbm.Full(s.cache.CBMLen))
			newCtrl := uint32(s.cache.ShareableBits)
			usedB := newCtrl
			for _, o := range e.sortedCtrls() {
				if o.closid == closid || o.mode == "pseudo-locksetup" {
					continue // locksetup values mean nothing until the region is locked
				}
				if o.mode == "pseudo-locked" {
					if o.plr.domain == d && e.schemaByName(o.plr.schema).res == s.res {
						usedB |= o.plr.cbm
					}
					continue
				}
				val := o.cfg[s.name][d]
				if peer := e.peer(s); peer != nil {
					val |= o.cfg[peer.name][d]
				}
				usedB |= val
				if o.mode == "shareable" {
					newCtrl |= val
				}
			}
			newCtrl |= (usedB ^ full) & full
			// cbm_ensure_valid keeps the lowest contiguous run, also where sparse masks
			// are accepted, and the minimum is checked on what is left.
			newCtrl = uint32(cbm.Mask(newCtrl).FirstRun())
			if bits.OnesCount32(newCtrl) < s.cache.MinCBMBits {
				e.status("No space on %s:%d", s.name, d)
				if e.p.Mon != nil {
					e.releaseRMID(g.rmid)
				}
				return syscall.ENOSPC
			}
			v[d] = newCtrl
		}
		cfg[s.name] = v
	}
	g.cfg = cfg
	e.used[closid] = true
	e.ctrls[name] = g
	if e.p.Mon != nil {
		e.rmids[g.rmid] = g
		e.assignOnMkdir(g)
	}
	e.gen++
	return nil
}

func (e *Emulator) peer(s *schema) *schema {
	switch s.conf {
	case confCode:
		return e.schemaByName(s.res + "DATA")
	case confData:
		return e.schemaByName(s.res + "CODE")
	}
	return nil
}

func (e *Emulator) mkdirMon(parent *group, name string) error {
	e.cmd()
	r, err := e.allocRMID()
	if err != nil {
		e.status("Out of RMIDs")
		return err
	}
	g := &group{name: name, parent: parent, closid: parent.closid, rmid: r, cpus: newCPUSet(e.p.CPUs)}
	parent.mons[name] = g
	e.rmids[r] = g
	e.assignOnMkdir(g)
	e.gen++
	return nil
}

// Rmdir removes a group. Tasks and CPUs of a CTRL_MON group go to the default group
// and its MON groups are removed; those of a MON group go to its parent.
func (e *Emulator) Rmdir(path string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := splitPath(path)
	n, err := e.resolve(c)
	if err != nil {
		return err
	}
	if !n.dir {
		return syscall.ENOTDIR
	}
	switch {
	case n.g != nil && n.g.ctrl && n.g != e.root && n.sub == "" && len(c) == 1:
		g := n.g
		for _, t := range e.tasks {
			if t.closid == g.closid {
				t.closid, t.rmid = 0, 0
			}
		}
		e.root.cpus.orIn(g.cpus)
		for _, m := range g.mons {
			e.releaseRMID(m.rmid)
		}
		// a pseudo-locksetup group gave up its RMID, a pseudo-locked one its CLOSID too
		if e.p.Mon != nil && g.rmid != noID {
			e.releaseRMID(g.rmid)
		}
		if g.closid != noID {
			e.used[g.closid] = false
		}
		delete(e.ctrls, g.name)
	case n.g != nil && !n.g.ctrl && n.sub == "":
		g := n.g
		for _, t := range e.tasks {
			if t.rmid == g.rmid && t.closid == g.closid {
				t.rmid = g.parent.rmid
			}
		}
		e.releaseRMID(g.rmid)
		delete(g.parent.mons, g.name)
	default:
		return syscall.EPERM
	}
	e.gen++
	return nil
}

// Rename moves a MON group to another CTRL_MON group's mon_groups (and/or renames
// it), as rdtgroup_rename does: its tasks take the new parent's CLOSID and keep their
// RMID. Only MON groups move, only into a mon_groups directory, and not while they
// monitor CPUs of their old parent.
func (e *Emulator) Rename(oldPath, newPath string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	oc, nc := splitPath(oldPath), splitPath(newPath)
	n, err := e.resolve(oc)
	if err != nil {
		return err
	}
	if len(nc) == 0 {
		return syscall.EBUSY
	}
	np, err := e.resolve(nc[:len(nc)-1])
	if err != nil {
		return err
	}
	e.cmd()
	if !n.dir || !np.dir {
		e.status("Source and destination must be directories")
		return syscall.EPERM
	}
	if n.g == nil || n.g.ctrl || n.sub != "" {
		e.status("Source must be a MON group")
		return syscall.EPERM
	}
	name := nc[len(nc)-1]
	if np.sub != "mon_groups" || np.g == nil || name == "mon_groups" {
		e.status("Destination must be a mon_groups subdirectory")
		return syscall.EPERM
	}
	g, parent := n.g, np.g
	if _, exists := parent.mons[name]; exists && !(parent == g.parent && name == g.name) {
		return syscall.EEXIST
	}
	if !g.cpus.empty() && g.parent != parent {
		e.status("Cannot move a MON group that monitors CPUs")
		return syscall.EPERM
	}
	delete(g.parent.mons, g.name)
	for _, t := range e.tasks {
		if t.rmid == g.rmid && t.closid == g.closid {
			t.closid = parent.closid
		}
	}
	g.parent, g.closid, g.name = parent, parent.closid, name
	parent.mons[name] = g
	e.gen++
	return nil
}
