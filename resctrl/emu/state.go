package emu

import (
	"io/fs"
	"syscall"
)

// GroupState is the emulator's view of one resource group.
type GroupState struct {
	// Path is the group's directory relative to the mount: "" for the default group,
	// "g" for a CTRL_MON group, "g/mon_groups/m" or "mon_groups/m" for a MON group.
	Path string
	// Ctrl is the CTRL_MON group the group belongs to ("" = default); equal to Path for
	// CTRL_MON groups.
	Ctrl  string
	IsMon bool
	// CLOSID and RMID are -1 where the group holds none: a pseudo-locksetup group has
	// given up its RMID, a pseudo-locked group its CLOSID too (as the kernel frees them).
	CLOSID int
	RMID   int
	Mode   string
	// Schemata maps a schema name (L3, L3CODE, L3DATA, L2, MB, SMBA) to its value per
	// domain id: capacity bitmasks for caches, the MB/SMBA value (percent, 1/8 GB/s or
	// MiB/s as the profile says). Nil for MON groups.
	Schemata map[string][]uint32
	Tasks    []int // PIDs in the group (for a CTRL_MON group including its MON groups)
	CPUs     []int // CPUs assigned to the group
}

// State is a consistent snapshot of all groups.
type State struct {
	// Generation increases with every change of groups, schemata, modes, tasks or CPUs.
	Generation uint64
	Groups     []GroupState // default group first, then CTRL_MON groups by name, each followed by its MON groups
}

// Group returns the state of the group at path.
func (s State) Group(path string) (GroupState, bool) {
	for _, g := range s.Groups {
		if g.Path == path {
			return g, true
		}
	}
	return GroupState{}, false
}

// Generation returns the change counter (see State.Generation).
func (e *Emulator) Generation() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.gen
}

func (e *Emulator) groupState(g *group) GroupState {
	gs := GroupState{Path: g.path(), CLOSID: g.closid, RMID: g.rmid, Mode: g.mode, IsMon: !g.ctrl,
		Tasks: e.tasksOf(g), CPUs: g.cpus.list()}
	if g.ctrl {
		gs.Ctrl = g.name
		gs.Schemata = map[string][]uint32{}
		for k, v := range g.cfg {
			gs.Schemata[k] = append([]uint32(nil), v...)
		}
	} else {
		gs.Ctrl = g.parent.name
	}
	return gs
}

// State returns a snapshot of every group.
func (e *Emulator) State() State {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := State{Generation: e.gen}
	for _, g := range e.sortedCtrls() {
		st.Groups = append(st.Groups, e.groupState(g))
		for _, m := range sortedMons(g) {
			st.Groups = append(st.Groups, e.groupState(m))
		}
	}
	return st
}

// TaskGroup returns the CTRL_MON group and (if any) MON group path of a task; tasks the
// emulator has never seen are in the default group.
func (e *Emulator) TaskGroup(pid int) (ctrl, mon string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.tasks[pid]
	if t == nil {
		return "", ""
	}
	g := e.groupByClosid(t.closid)
	if g == nil {
		return "", ""
	}
	if t.rmid != g.rmid {
		if m := e.rmids[t.rmid]; m != nil && !m.ctrl {
			return g.name, m.path()
		}
	}
	return g.name, ""
}

// cpuOwner returns the CLOSID and RMID a CPU gives to tasks of the default group.
func (e *Emulator) cpuOwner(cpu int) (closid, rmid int) {
	for _, g := range e.sortedCtrls() {
		if g.cpus.has(cpu) {
			for _, m := range g.mons {
				if m.cpus.has(cpu) {
					return g.closid, m.rmid
				}
			}
			return g.closid, g.rmid
		}
	}
	return 0, 0
}

// Effective returns the CLOSID and RMID that task pid gets while it runs on cpu, by the
// kernel's precedence (resctrl_arch_sched_in): the task's own CLOSID/RMID if non-zero,
// else the CPU's group's, else the default group's.
func (e *Emulator) Effective(pid, cpu int) (closid, rmid int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var t task
	if p := e.tasks[pid]; p != nil {
		t = *p
	}
	cc, cr := 0, 0
	if cpu >= 0 && cpu < e.p.CPUs {
		cc, cr = e.cpuOwner(cpu)
	}
	closid, rmid = t.closid, t.rmid
	if closid == 0 {
		closid = cc
	}
	if rmid == 0 {
		rmid = cr
	}
	return closid, rmid
}

// GroupOfCLOSID returns the path of the CTRL_MON group holding a CLOSID.
func (e *Emulator) GroupOfCLOSID(closid int) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.groupByClosid(closid)
	if g == nil {
		return "", false
	}
	return g.name, true
}

// FS is the emulator seen as a filesystem rooted at the mount point: paths are relative
// ("info/L3/cbm_mask", "g/schemata"); errors are *fs.PathError wrapping the errno the
// kernel returns, exactly as os.ReadFile/os.WriteFile report them on a real mount.
type FS struct{ e *Emulator }

// FS returns the in-process filesystem view.
func (e *Emulator) FS() *FS { return &FS{e} }

func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// ReadFile reads a whole file.
func (f *FS) ReadFile(name string) ([]byte, error) {
	b, err := f.e.ReadFile(name)
	return b, pathErr("read", name, err)
}

// WriteFile performs one write of data (one command).
func (f *FS) WriteFile(name string, data []byte) error {
	return pathErr("write", name, f.e.WriteFile(name, data))
}

// Mkdir creates a group directory.
func (f *FS) Mkdir(name string) error { return pathErr("mkdir", name, f.e.Mkdir(name)) }

// Rmdir removes a group directory.
func (f *FS) Rmdir(name string) error { return pathErr("rmdir", name, f.e.Rmdir(name)) }

// Rename moves a MON group (rename(2)).
func (f *FS) Rename(oldName, newName string) error {
	return pathErr("rename", oldName, f.e.Rename(oldName, newName))
}

// ReadDir lists the names in a directory, sorted; directories end in "/".
func (f *FS) ReadDir(name string) ([]string, error) {
	ents, err := f.e.ReadDir(name)
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	out := make([]string, len(ents))
	for i, en := range ents {
		out[i] = en.Name
		if en.Dir {
			out[i] += "/"
		}
	}
	return out, nil
}

// Lock takes the emulator's equivalent of flock(LOCK_EX) on the mount root: one holder
// at a time, the others wait.
func (f *FS) Lock() (unlock func() error, err error) {
	f.e.flock.Lock()
	return func() error { f.e.flock.Unlock(); return nil }, nil
}

// String names the filesystem in messages.
func (f *FS) String() string { return "emulator(" + f.e.p.Name + ")" }

// IsErrno reports whether err carries errno (through *fs.PathError or directly).
func IsErrno(err error, errno syscall.Errno) bool {
	for err != nil {
		if e, ok := err.(syscall.Errno); ok {
			return e == errno
		}
		if pe, ok := err.(*fs.PathError); ok {
			err = pe.Err
			continue
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}
