// Package emu is a validating emulator of the Linux resctrl filesystem.
//
// It holds the state the kernel holds (control groups with their CLOSIDs and
// schemata, monitoring groups with their RMIDs, task and CPU membership, exclusive
// modes, last_cmd_status) and accepts or rejects every command the way the kernel's
// fs/resctrl code does, in the same order and with the same messages
// (../shared/research/anchors.md §4). Vendor profiles (Intel with or without CDP and
// MBA, AMD, Arm MPAM) come from colo/machine geometry via ProfileFromMachine.
//
// The emulator is used in two ways: in process through FS (a file-level view with the
// same paths, errors and formats as /sys/fs/resctrl), and mounted as a real filesystem
// through FUSE (Mount). Its state is readable through State, TaskGroup and Effective so
// that a simulated machine can mirror the allocations; monitoring counters come from a
// pluggable Source advanced by Tick.
//
// Pseudo-locking follows the kernel's state machine where the CPU supports it (the
// Broadwell-EP profile: Profile.PseudoLock): pseudo-locksetup gives up the group's RMID
// (rdtgroup_locksetup_enter; leaving setup takes one again), then a one-domain schemata
// write locks the region (bit_usage P, overlapping writes refused) and frees the group's
// CLOSID for the next mkdir (rdtgroup_pseudo_lock_create, fs/resctrl/pseudo_lock.c);
// elsewhere "Pseudo-locking not supported" (x86) or an unknown mode (arm64).
//
// Differences from the kernel (documented, deliberate): no /dev/pseudo_lock device
// appears; moving MON groups between CTRL_MON groups (rename) is
// not supported; PID 0 ("the writing task") is not resolved; the root group's tasks file
// lists only tasks the emulator has been told about.
package emu

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"colo/cbm"
)

// Options configures an emulator.
type Options struct {
	// PIDExists says whether a task exists. Default: every positive PID exists (a
	// simulated machine has no real processes).
	PIDExists func(pid int) bool
	// PIDMovable says whether the writer may move a task (EPERM "No permission to move
	// task %d" otherwise). Default: always.
	PIDMovable func(pid int) bool
	// Source supplies monitoring counters (nil: all counters stay zero).
	Source Source
}

const (
	confNone = iota
	confCode
	confData
)

// schema is one line of the schemata file (a resource, or one CDP half of it).
type schema struct {
	name    string // L3, L3CODE, L3DATA, L2, L2CODE, L2DATA, MB, SMBA
	res     string // L3, L2, MB, SMBA
	conf    int
	cache   *CacheRes
	bw      *BWRes
	closids int
	domains int
	ids     []int // the kernel's domain id of each domain index
}

func (s *schema) isCache() bool { return s.cache != nil }

// index returns the domain index of kernel domain id, or -1.
func (s *schema) index(id int) int {
	for i, x := range s.ids {
		if x == id {
			return i
		}
	}
	return -1
}

// group is a CTRL_MON group (ctrl) or a MON group.
type group struct {
	name   string
	ctrl   bool
	parent *group // MON groups: their CTRL_MON group
	closid int
	rmid   int
	mode   string
	cfg    map[string][]uint32 // CTRL_MON: schema name -> value per domain
	mons   map[string]*group
	cpus   cpuset
	event  string // mba_MBps_event
	plr    *plr   // the pseudo-locked region (mode pseudo-locked)
	// cntr: per MBM event, per L3 domain index, whether the group holds an assignable
	// counter (mbm_event mode).
	cntr map[string][]bool
}

// plr is a pseudo-locked region: one cache domain's bits, locked for the group.
type plr struct {
	schema string
	domain int
	cbm    uint32
}

func (g *group) path() string {
	if g.ctrl {
		return g.name
	}
	if g.parent.name == "" {
		return "mon_groups/" + g.name
	}
	return g.parent.name + "/mon_groups/" + g.name
}

type task struct{ closid, rmid int }

// noID is the CLOSID or RMID of a group that holds none: a pseudo-locksetup group has
// no RMID, a pseudo-locked group neither.
const noID = -1

// Emulator is one emulated resctrl mount. All methods are safe for concurrent use.
type Emulator struct {
	mu    sync.Mutex // guards core
	flock sync.Mutex // the emulated flock(LOCK_EX) on the root
	core
}

// core is everything a fresh mount resets.
type core struct {
	p       *Profile
	opts    Options
	schemas []*schema
	nameW   int
	root    *group
	ctrls   map[string]*group
	rmids   map[int]*group // allocated RMID -> group
	closids int            // closids_supported: smallest num_closids of the enabled schemas
	used    []bool         // CLOSID allocated
	free    []int          // free RMIDs, FIFO
	limbo   []int          // freed RMIDs whose occupancy is above the threshold
	tasks   map[int]*task
	online  cpuset
	lastCmd strings.Builder
	gen     uint64
	mon     monState
	thresh  uint64
	// assignMode is info/L3_MON/mbm_assign_mode's active mode ("mbm_event" when the
	// profile has assignable counters, else "default"); onMkdir is mbm_assign_on_mkdir.
	assignMode string
	onMkdir    bool
	// bmec is the BMEC event configuration per event and L3 domain index.
	bmec map[string][]uint32
	// ioAlloc is info/L3/io_alloc; ioCBM its mask per L3 domain index.
	ioAlloc bool
	ioCBM   []uint32
}

// New builds an emulator freshly mounted with profile p.
// HostPIDExists is Options.PIDExists for an emulator serving this host's processes (a
// FUSE mount used by real colo runs): a task exists when /proc has it, so a write of a
// PID that does not exist fails with ESRCH and "No task N", as the kernel's does.
func HostPIDExists(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

func New(p *Profile, opts Options) (*Emulator, error) {
	if p == nil {
		return nil, fmt.Errorf("emu: nil profile")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.Clone()
	if opts.PIDExists == nil {
		opts.PIDExists = func(pid int) bool { return pid > 0 }
	}
	if opts.PIDMovable == nil {
		opts.PIDMovable = func(int) bool { return true }
	}
	e := &Emulator{core: core{p: p, opts: opts, ctrls: map[string]*group{}, rmids: map[int]*group{}, tasks: map[int]*task{}}}
	addCache := func(c *CacheRes, cdp bool) {
		if c == nil {
			return
		}
		base := fmt.Sprintf("L%d", c.Level)
		if cdp {
			e.schemas = append(e.schemas,
				&schema{name: base + "CODE", res: base, conf: confCode, cache: c, closids: c.NumCLOSIDs / 2, domains: c.Domains, ids: domainIDs(c.IDs, c.Domains)},
				&schema{name: base + "DATA", res: base, conf: confData, cache: c, closids: c.NumCLOSIDs / 2, domains: c.Domains, ids: domainIDs(c.IDs, c.Domains)})
		} else {
			e.schemas = append(e.schemas, &schema{name: base, res: base, conf: confNone, cache: c, closids: c.NumCLOSIDs, domains: c.Domains, ids: domainIDs(c.IDs, c.Domains)})
		}
	}
	addCache(p.L3, p.CDP)
	addCache(p.L2, p.CDPL2)
	if p.MB != nil {
		e.schemas = append(e.schemas, &schema{name: "MB", res: "MB", bw: p.MB, closids: p.MB.NumCLOSIDs, domains: p.MB.Domains, ids: domainIDs(p.MB.IDs, p.MB.Domains)})
	}
	if p.SMBA != nil {
		e.schemas = append(e.schemas, &schema{name: "SMBA", res: "SMBA", bw: p.SMBA, closids: p.SMBA.NumCLOSIDs, domains: p.SMBA.Domains, ids: domainIDs(p.SMBA.IDs, p.SMBA.Domains)})
	}
	e.closids = 1 << 30
	for _, s := range e.schemas {
		e.closids = min(e.closids, s.closids)
		w := len(s.name)
		if s.cache != nil && s.conf == confNone && s.cache.CDPCapable {
			w += 4 // schemata_list_add: room for a CODE/DATA suffix
		}
		e.nameW = max(e.nameW, w)
	}
	if e.closids < 1 {
		return nil, fmt.Errorf("emu: profile %q leaves no CLOSID (CDP halves num_closids)", p.Name)
	}
	e.used = make([]bool, e.closids)
	e.used[0] = true
	e.online = newCPUSet(p.CPUs)
	for i := 0; i < p.CPUs; i++ {
		e.online.set(i)
	}
	e.root = &group{name: "", ctrl: true, closid: 0, rmid: 0, mode: "shareable", mons: map[string]*group{}, cpus: e.online.clone(), event: "mbm_local_bytes"}
	e.root.cfg = map[string][]uint32{}
	for _, s := range e.schemas {
		v := make([]uint32, s.domains)
		for d := range v {
			v[d] = e.defaultCtrl(s)
		}
		e.root.cfg[s.name] = v
	}
	if p.Mon != nil {
		e.rmids[0] = e.root
		for r := 1; r < p.Mon.NumRMIDs; r++ {
			e.free = append(e.free, r)
		}
		e.thresh = p.Mon.MaxThresholdOccupancy
		e.assignMode, e.onMkdir = "default", true
		if p.Mon.Counters > 0 {
			e.assignMode = "mbm_event"
		}
		if p.Mon.BMEC {
			e.bmec = map[string][]uint32{}
			for _, ev := range mbmEvents {
				v := make([]uint32, p.L3.Domains)
				for d := range v {
					v[d] = bmecDefault[ev]
				}
				e.bmec[ev] = v
			}
		}
	}
	e.mon.init()
	if p.Mon != nil {
		e.assignOnMkdir(e.root) // the default group gets its counters at mount
	}
	return e, nil
}

// Reset returns the emulator to a freshly mounted state (same profile and options):
// every group is gone, every task back in the default group, counters zero.
func (e *Emulator) Reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, err := New(e.p, e.opts)
	if err != nil {
		panic("emu: profile validated at New became invalid: " + err.Error())
	}
	gen := e.gen
	e.core = n.core
	e.gen = gen + 1
}

// NewNamed builds an emulator from a built-in profile name (see NamedProfile).
func NewNamed(name string, opts Options) (*Emulator, error) {
	p, err := NamedProfile(name)
	if err != nil {
		return nil, err
	}
	return New(p, opts)
}

// Profile returns a copy of the emulated profile.
func (e *Emulator) Profile() *Profile { return e.p.Clone() }

// pageSize is kernfs' atomic_write_len for resctrl files.
const pageSize = 4096

// mbaMaxMBps is MBA_MAX_MBPS (U32_MAX): the software controller's "unlimited".
const mbaMaxMBps = ^uint32(0)

func (e *Emulator) defaultCtrl(s *schema) uint32 {
	if s.isCache() {
		return uint32(cbm.Full(s.cache.CBMLen))
	}
	if s.res == "MB" && e.p.MBAMBps {
		return mbaMaxMBps
	}
	return s.bw.Max
}

func (e *Emulator) schemaByName(n string) *schema {
	for _, s := range e.schemas {
		if s.name == n {
			return s
		}
	}
	return nil
}

// cmd starts a command: last_cmd_status is cleared.
func (e *Emulator) cmd() { e.lastCmd.Reset() }

func (e *Emulator) status(format string, a ...any) {
	fmt.Fprintf(&e.lastCmd, format, a...)
	e.lastCmd.WriteByte('\n')
}

// LastCmdStatus returns info/last_cmd_status without its trailing newline.
func (e *Emulator) LastCmdStatus() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.TrimSuffix(e.lastCmdText(), "\n")
}

func (e *Emulator) lastCmdText() string {
	if e.lastCmd.Len() == 0 {
		return "ok\n"
	}
	return e.lastCmd.String()
}

// groupsByClosid returns the allocated CTRL_MON groups indexed by CLOSID.
func (e *Emulator) groupByClosid(c int) *group {
	if c == 0 {
		return e.root
	}
	for _, g := range e.ctrls {
		if g.closid == c {
			return g
		}
	}
	return nil
}

// sortedCtrls returns root then the CTRL_MON groups by name.
func (e *Emulator) sortedCtrls() []*group {
	out := []*group{e.root}
	names := slices.Sorted(maps.Keys(e.ctrls))
	for _, n := range names {
		out = append(out, e.ctrls[n])
	}
	return out
}

func sortedMons(g *group) []*group {
	names := slices.Sorted(maps.Keys(g.mons))
	out := make([]*group, len(names))
	for i, n := range names {
		out[i] = g.mons[n]
	}
	return out
}
