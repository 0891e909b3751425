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
// Differences from the kernel (documented, deliberate): pseudo-locking is refused as
// the kernel refuses it on the modelled platforms ("Pseudo-locking not supported" on
// x86 parts without known prefetch-disable bits, an unknown mode on arm64); moving MON groups between CTRL_MON groups (rename) is
// not supported; PID 0 ("the writing task") is not resolved; the root group's tasks file
// lists only tasks the emulator has been told about.
package emu

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"colo/machine"
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
}

func (s *schema) isCache() bool { return s.cache != nil }

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
}

// New builds an emulator freshly mounted with profile p.
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
				&schema{name: base + "CODE", res: base, conf: confCode, cache: c, closids: c.NumCLOSIDs / 2, domains: c.Domains},
				&schema{name: base + "DATA", res: base, conf: confData, cache: c, closids: c.NumCLOSIDs / 2, domains: c.Domains})
		} else {
			e.schemas = append(e.schemas, &schema{name: base, res: base, conf: confNone, cache: c, closids: c.NumCLOSIDs, domains: c.Domains})
		}
	}
	addCache(p.L3, p.CDP)
	addCache(p.L2, p.CDPL2)
	if p.MB != nil {
		e.schemas = append(e.schemas, &schema{name: "MB", res: "MB", bw: p.MB, closids: p.MB.NumCLOSIDs, domains: p.MB.Domains})
	}
	if p.SMBA != nil {
		e.schemas = append(e.schemas, &schema{name: "SMBA", res: "SMBA", bw: p.SMBA, closids: p.SMBA.NumCLOSIDs, domains: p.SMBA.Domains})
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
	}
	e.mon.init()
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
		return uint32(uint64(1)<<uint(s.cache.CBMLen) - 1)
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
	names := make([]string, 0, len(e.ctrls))
	for n := range e.ctrls {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, e.ctrls[n])
	}
	return out
}

func sortedMons(g *group) []*group {
	names := make([]string, 0, len(g.mons))
	for n := range g.mons {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*group, len(names))
	for i, n := range names {
		out[i] = g.mons[n]
	}
	return out
}

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
	// group holds (shareable bits, shareable groups' bits, unused bits), made contiguous
	// where sparse masks are not supported; bandwidth starts at the maximum.
	cfg := map[string][]uint32{}
	for _, s := range e.schemas {
		v := make([]uint32, s.domains)
		for d := range v {
			if !s.isCache() {
				v[d] = e.defaultCtrl(s)
				continue
			}
			full := uint32(uint64(1)<<uint(s.cache.CBMLen) - 1)
			newCtrl := uint32(s.cache.ShareableBits)
			usedB := newCtrl
			for _, o := range e.sortedCtrls() {
				if o.closid == closid {
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
			if bits.OnesCount32(newCtrl) < s.cache.MinCBMBits {
				e.status("No space on %s:%d", s.name, d)
				if e.p.Mon != nil {
					e.releaseRMID(g.rmid)
				}
				return syscall.ENOSPC
			}
			if !s.cache.Sparse {
				newCtrl = lowestRun(newCtrl)
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
	}
	e.gen++
	return nil
}

// lowestRun keeps the lowest contiguous run of 1-bits (cbm_ensure_valid).
func lowestRun(v uint32) uint32 {
	if v == 0 {
		return 0
	}
	first := bits.TrailingZeros32(v)
	run := bits.TrailingZeros32(^(v >> uint(first)))
	return uint32((uint64(1)<<uint(run) - 1) << uint(first))
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
	e.gen++
	return nil
}

// allocRMID takes the oldest free RMID. With none free it fails with EBUSY while RMIDs
// wait in limbo (their occupancy is above max_threshold_occupancy), else ENOSPC.
func (e *Emulator) allocRMID() (int, error) {
	e.checkLimbo()
	if len(e.free) == 0 {
		if len(e.limbo) > 0 {
			return 0, syscall.EBUSY
		}
		return 0, syscall.ENOSPC
	}
	r := e.free[0]
	e.free = e.free[1:]
	e.mon.resetMBM(r)
	return r, nil
}

func (e *Emulator) releaseRMID(r int) {
	delete(e.rmids, r)
	if e.mon.maxOccupancy(r) > e.thresh {
		e.limbo = append(e.limbo, r)
		return
	}
	e.free = append(e.free, r)
}

// checkLimbo frees limbo RMIDs whose occupancy dropped to the threshold.
func (e *Emulator) checkLimbo() {
	keep := e.limbo[:0]
	for _, r := range e.limbo {
		if e.mon.maxOccupancy(r) <= e.thresh {
			e.free = append(e.free, r)
		} else {
			keep = append(keep, r)
		}
	}
	e.limbo = keep
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
		if e.p.Mon != nil {
			e.releaseRMID(g.rmid)
		}
		e.used[g.closid] = false
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

// ---- name resolution -----------------------------------------------------------------

type node struct {
	dir  bool
	g    *group
	sub  string // "", "mon_groups", "mon_data", "info"
	info string // info sub-directory name
	dom  int    // mon_data domain
	domD bool   // the node is (or is inside) mon_data/mon_L3_XX
	file string
}

var ctrlFiles = []string{"cpus", "cpus_list", "mode", "schemata", "size", "tasks"}
var monFiles = []string{"cpus", "cpus_list", "tasks"}

func (e *Emulator) infoDirs() []string {
	var out []string
	for _, s := range e.schemas {
		out = append(out, s.name)
	}
	if e.p.Mon != nil {
		out = append(out, "L3_MON")
	}
	sort.Strings(out)
	return out
}

func (e *Emulator) infoFiles(dir string) []string {
	if dir == "L3_MON" {
		return []string{"max_threshold_occupancy", "mon_features", "num_rmids"}
	}
	s := e.schemaByName(dir)
	if s == nil {
		return nil
	}
	if s.isCache() {
		return []string{"bit_usage", "cbm_mask", "min_cbm_bits", "num_closids", "shareable_bits", "sparse_masks"}
	}
	f := []string{"bandwidth_gran", "delay_linear", "min_bandwidth", "num_closids"}
	if s.bw.ThrottleMode != "" {
		f = append(f, "thread_throttle_mode")
	}
	return f
}

func (e *Emulator) groupFiles(g *group) []string {
	if !g.ctrl {
		return monFiles
	}
	if e.p.MBAMBps {
		return append(append([]string(nil), ctrlFiles...), "mba_MBps_event")
	}
	return ctrlFiles
}

func (e *Emulator) monFeatures() []string {
	if e.p.Mon == nil {
		return nil
	}
	return e.p.Mon.Features
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// resolve maps path components to a node, or ENOENT/ENOTDIR.
func (e *Emulator) resolve(c []string) (*node, error) {
	if len(c) == 0 {
		return &node{dir: true, g: e.root}, nil
	}
	if c[0] == "info" {
		switch len(c) {
		case 1:
			return &node{dir: true, sub: "info"}, nil
		case 2:
			if c[1] == "last_cmd_status" {
				return &node{sub: "info", file: "last_cmd_status"}, nil
			}
			if contains(e.infoDirs(), c[1]) {
				return &node{dir: true, sub: "info", info: c[1]}, nil
			}
		case 3:
			if contains(e.infoDirs(), c[1]) && contains(e.infoFiles(c[1]), c[2]) {
				return &node{sub: "info", info: c[1], file: c[2]}, nil
			}
		}
		return nil, syscall.ENOENT
	}
	g := e.root
	if cg, ok := e.ctrls[c[0]]; ok {
		g = cg
		c = c[1:]
	}
	return e.resolveIn(g, c)
}

func (e *Emulator) resolveIn(g *group, c []string) (*node, error) {
	if len(c) == 0 {
		return &node{dir: true, g: g}, nil
	}
	switch c[0] {
	case "mon_groups":
		if !g.ctrl || e.p.Mon == nil {
			break
		}
		if len(c) == 1 {
			return &node{dir: true, g: g, sub: "mon_groups"}, nil
		}
		m, ok := g.mons[c[1]]
		if !ok {
			return nil, syscall.ENOENT
		}
		return e.resolveIn(m, c[2:])
	case "mon_data":
		if e.p.Mon == nil {
			break
		}
		if len(c) == 1 {
			return &node{dir: true, g: g, sub: "mon_data"}, nil
		}
		d, ok := parseMonDir(c[1], e.p.L3.Domains)
		if !ok {
			return nil, syscall.ENOENT
		}
		if len(c) == 2 {
			return &node{dir: true, g: g, sub: "mon_data", dom: d, domD: true}, nil
		}
		if len(c) == 3 && contains(e.monFeatures(), c[2]) {
			return &node{g: g, sub: "mon_data", dom: d, domD: true, file: c[2]}, nil
		}
		return nil, syscall.ENOENT
	default:
		if contains(e.groupFiles(g), c[0]) {
			if len(c) > 1 {
				return nil, syscall.ENOTDIR
			}
			return &node{g: g, file: c[0]}, nil
		}
	}
	return nil, syscall.ENOENT
}

func monDirName(d int) string { return fmt.Sprintf("mon_L3_%02d", d) }

func parseMonDir(s string, n int) (int, bool) {
	rest, ok := strings.CutPrefix(s, "mon_L3_")
	if !ok || len(rest) < 2 {
		return 0, false
	}
	d, err := strconv.Atoi(rest)
	if err != nil || d < 0 || d >= n || monDirName(d) != s {
		return 0, false
	}
	return d, true
}

// Entry is one directory entry.
type Entry struct {
	Name     string
	Dir      bool
	Writable bool
}

var writableFiles = map[string]bool{"cpus": true, "cpus_list": true, "mode": true, "schemata": true, "tasks": true,
	"mba_MBps_event": true, "max_threshold_occupancy": true}

// Stat reports whether path exists and whether it is a directory.
func (e *Emulator) Stat(path string) (Entry, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := splitPath(path)
	n, err := e.resolve(c)
	if err != nil {
		return Entry{}, err
	}
	name := ""
	if len(c) > 0 {
		name = c[len(c)-1]
	}
	return Entry{Name: name, Dir: n.dir, Writable: !n.dir && writableFiles[n.file]}, nil
}

// ReadDir lists a directory, sorted by name.
func (e *Emulator) ReadDir(path string) ([]Entry, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, err := e.resolve(splitPath(path))
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, syscall.ENOTDIR
	}
	var out []Entry
	addF := func(names ...string) {
		for _, f := range names {
			out = append(out, Entry{Name: f, Writable: writableFiles[f]})
		}
	}
	addD := func(names ...string) {
		for _, d := range names {
			out = append(out, Entry{Name: d, Dir: true})
		}
	}
	switch {
	case n.sub == "info" && n.info == "":
		addF("last_cmd_status")
		addD(e.infoDirs()...)
	case n.sub == "info":
		addF(e.infoFiles(n.info)...)
	case n.sub == "mon_groups":
		for _, m := range sortedMons(n.g) {
			addD(m.name)
		}
	case n.sub == "mon_data" && n.domD:
		addF(e.monFeatures()...)
	case n.sub == "mon_data":
		for d := 0; d < e.p.L3.Domains; d++ {
			addD(monDirName(d))
		}
	default:
		addF(e.groupFiles(n.g)...)
		if e.p.Mon != nil {
			addD("mon_data")
			if n.g.ctrl {
				addD("mon_groups")
			}
		}
		if n.g == e.root {
			addD("info")
			for _, g := range e.sortedCtrls()[1:] {
				addD(g.name)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ---- reads ---------------------------------------------------------------------------

// ReadFile returns the content of a file as the kernel would print it.
func (e *Emulator) ReadFile(path string) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, err := e.resolve(splitPath(path))
	if err != nil {
		return nil, err
	}
	if n.dir {
		return nil, syscall.EISDIR
	}
	return []byte(e.read(n)), nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (e *Emulator) read(n *node) string {
	if n.sub == "info" {
		if n.file == "last_cmd_status" {
			return e.lastCmdText()
		}
		if n.info == "L3_MON" {
			m := e.p.Mon
			switch n.file {
			case "num_rmids":
				return fmt.Sprintf("%d\n", m.NumRMIDs)
			case "mon_features":
				return strings.Join(m.Features, "\n") + "\n"
			case "max_threshold_occupancy":
				return fmt.Sprintf("%d\n", e.thresh)
			}
		}
		s := e.schemaByName(n.info)
		if s.isCache() {
			c := s.cache
			switch n.file {
			case "num_closids":
				return fmt.Sprintf("%d\n", s.closids)
			case "cbm_mask":
				return fmt.Sprintf("%x\n", uint64(1)<<uint(c.CBMLen)-1)
			case "min_cbm_bits":
				return fmt.Sprintf("%d\n", c.MinCBMBits)
			case "shareable_bits":
				return fmt.Sprintf("%x\n", c.ShareableBits)
			case "sparse_masks":
				return fmt.Sprintf("%d\n", b2i(c.Sparse))
			case "bit_usage":
				return e.bitUsage(s)
			}
		}
		b := s.bw
		switch n.file {
		case "num_closids":
			return fmt.Sprintf("%d\n", s.closids)
		case "min_bandwidth":
			return fmt.Sprintf("%d\n", b.Min)
		case "bandwidth_gran":
			return fmt.Sprintf("%d\n", b.Gran)
		case "delay_linear":
			return fmt.Sprintf("%d\n", b2i(b.DelayLinear))
		case "thread_throttle_mode":
			return b.ThrottleMode + "\n"
		}
		return ""
	}
	if n.sub == "mon_data" {
		return e.readMon(n.g, n.dom, n.file)
	}
	g := n.g
	switch n.file {
	case "cpus":
		return formatMask(g.cpus, e.p.CPUs) + "\n"
	case "cpus_list":
		return formatList(g.cpus) + "\n"
	case "tasks":
		var b strings.Builder
		for _, pid := range e.tasksOf(g) {
			fmt.Fprintf(&b, "%d\n", pid)
		}
		return b.String()
	case "mode":
		return g.mode + "\n"
	case "schemata":
		return e.formatSchemata(g)
	case "size":
		return e.formatSize(g)
	case "mba_MBps_event":
		return g.event + "\n"
	}
	return ""
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

func (e *Emulator) formatValue(s *schema, v uint32) string {
	if s.isCache() {
		if e.p.Padded {
			return fmt.Sprintf("%0*x", (s.cache.CBMLen+3)/4, v)
		}
		return fmt.Sprintf("%x", v)
	}
	if e.p.Padded {
		w := 3
		if s.bw.Max > 999 {
			w = 4
		}
		return fmt.Sprintf("%*d", w, v)
	}
	return fmt.Sprintf("%d", v)
}

func (e *Emulator) formatSchemata(g *group) string {
	var b strings.Builder
	for _, s := range e.schemas {
		if g.closid >= s.closids {
			continue
		}
		fmt.Fprintf(&b, "%*s:", e.nameW, s.name)
		for d, v := range g.cfg[s.name] {
			if d > 0 {
				b.WriteByte(';')
			}
			fmt.Fprintf(&b, "%d=%s", d, e.formatValue(s, v))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (e *Emulator) formatSize(g *group) string {
	var b strings.Builder
	for _, s := range e.schemas {
		fmt.Fprintf(&b, "%*s:", e.nameW, s.name)
		for d, v := range g.cfg[s.name] {
			if d > 0 {
				b.WriteByte(';')
			}
			size := uint64(v)
			if s.isCache() {
				size = s.cache.SizeBytes / uint64(s.cache.CBMLen) * uint64(bits.OnesCount32(v))
			}
			fmt.Fprintf(&b, "%d=%d", d, size)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// bitUsage prints info/*/bit_usage: per bit from the MSB, X (hardware and software
// shareable), H (hardware only), S (software shareable), E (exclusive), else 0.
func (e *Emulator) bitUsage(s *schema) string {
	var b strings.Builder
	for d := 0; d < s.domains; d++ {
		if d > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, "%d=", d)
		hw := uint32(s.cache.ShareableBits)
		var sw, excl uint32
		for _, g := range e.sortedCtrls() {
			v := g.cfg[s.name][d]
			switch g.mode {
			case "shareable":
				sw |= v
			case "exclusive":
				excl |= v
			}
		}
		for i := s.cache.CBMLen - 1; i >= 0; i-- {
			m := uint32(1) << uint(i)
			switch {
			case hw&m != 0 && sw&m != 0:
				b.WriteByte('X')
			case hw&m != 0:
				b.WriteByte('H')
			case sw&m != 0:
				b.WriteByte('S')
			case excl&m != 0:
				b.WriteByte('E')
			default:
				b.WriteByte('0')
			}
		}
	}
	b.WriteByte('\n')
	return b.String()
}

// ---- writes --------------------------------------------------------------------------

// WriteFile performs one write(2) of data to path, as the kernel sees it: the whole
// buffer is one command. Errors are syscall.Errno values; info/last_cmd_status holds
// the kernel's message.
func (e *Emulator) WriteFile(path string, data []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, err := e.resolve(splitPath(path))
	if err != nil {
		return err
	}
	if n.dir {
		return syscall.EISDIR
	}
	if !writableFiles[n.file] {
		return syscall.EACCES
	}
	if len(data) > pageSize {
		return syscall.E2BIG // kernfs: one write is one command of at most atomic_write_len (PAGE_SIZE)
	}
	buf := string(data)
	var werr error
	switch n.file {
	case "schemata":
		werr = e.writeSchemata(n.g, buf)
	case "mode":
		werr = e.writeMode(n.g, buf)
	case "tasks":
		werr = e.writeTasks(n.g, buf)
	case "cpus":
		werr = e.writeCPUs(n.g, buf, false)
	case "cpus_list":
		werr = e.writeCPUs(n.g, buf, true)
	case "mba_MBps_event":
		werr = e.writeEvent(n.g, buf)
	case "max_threshold_occupancy":
		werr = e.writeThreshold(buf)
	}
	return werr
}

func (e *Emulator) writeMode(g *group, buf string) error {
	if len(buf) == 0 || buf[len(buf)-1] != '\n' {
		return syscall.EINVAL
	}
	buf = buf[:len(buf)-1]
	e.cmd()
	if buf == g.mode {
		return nil
	}
	switch buf {
	case "shareable":
		g.mode = "shareable"
	case "exclusive":
		if !e.testExclusive(g) {
			return syscall.EINVAL
		}
		g.mode = "exclusive"
	case "pseudo-locksetup":
		if e.p.Vendor == machine.Arm {
			// arm64 kernels are built without CONFIG_RESCTRL_FS_PSEUDO_LOCK
			e.status("Unknown or unsupported mode")
			return syscall.EINVAL
		}
		// rdtgroup_locksetup_enter: none of the modelled x86 parts has the
		// prefetch-disable bits pseudo-locking needs (only some Atom and
		// Broadwell-D parts do), so it stops at the platform check.
		switch {
		case g == e.root:
			e.status("Cannot pseudo-lock default group")
		case e.p.CDP || e.p.CDPL2:
			e.status("CDP enabled")
		default:
			e.status("Pseudo-locking not supported")
		}
		return syscall.EINVAL
	default:
		e.status("Unknown or unsupported mode")
		return syscall.EINVAL
	}
	e.gen++
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
		if o.closid == closid {
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

type staged struct {
	s   *schema
	d   int
	val uint32
}

// writeSchemata is rdtgroup_schemata_write: every line is parsed and validated in the
// kernel's order and staged; nothing is applied unless every line is valid.
func (e *Emulator) writeSchemata(g *group, buf string) error {
	if len(buf) == 0 || buf[len(buf)-1] != '\n' {
		return syscall.EINVAL
	}
	buf = buf[:len(buf)-1]
	e.cmd()
	var st []staged
	have := map[string]bool{}
	for _, line := range strings.Split(buf, "\n") {
		resname, tok, ok := strings.Cut(line, ":")
		resname = strings.TrimSpace(resname)
		if !ok {
			e.status("Missing ':'")
			return syscall.EINVAL
		}
		if tok == "" {
			e.status("Missing '%s' value", resname)
			return syscall.EINVAL
		}
		s := e.schemaByName(resname)
		if s == nil || g.closid >= s.closids {
			e.status("Unknown or unsupported resource name '%s'", resname)
			return syscall.EINVAL
		}
		if err := e.parseLine(g, s, tok, &st, have); err != nil {
			return err
		}
	}
	for _, x := range st {
		g.cfg[x.s.name][x.d] = x.val
	}
	e.gen++
	return nil
}

func (e *Emulator) parseLine(g *group, s *schema, line string, st *[]staged, have map[string]bool) error {
	for line != "" {
		var dom string
		dom, line, _ = strings.Cut(line, ";")
		id, val, ok := strings.Cut(dom, "=")
		domID, err := strconv.ParseUint(id, 10, 64)
		if !ok || err != nil {
			e.status("Missing '=' or non-numeric domain")
			return syscall.EINVAL
		}
		val = strings.TrimSpace(val)
		if domID >= uint64(s.domains) {
			return syscall.EINVAL // the kernel leaves no message for an unknown domain
		}
		d := int(domID)
		key := fmt.Sprintf("%s/%d", s.name, d)
		mbaSC := s.res == "MB" && e.p.MBAMBps
		if have[key] && !mbaSC {
			e.status("Duplicate domain %d", d)
			return syscall.EINVAL
		}
		var v uint32
		if s.isCache() {
			if v, ok = e.cbmValidate(s, val); !ok {
				return syscall.EINVAL
			}
			if e.cbmOverlaps(s, d, v, g.closid, true) {
				e.status("Overlaps with exclusive group")
				return syscall.EINVAL
			}
			if g.mode == "exclusive" && e.cbmOverlaps(s, d, v, g.closid, false) {
				e.status("Overlaps with other group")
				return syscall.EINVAL
			}
		} else if v, ok = e.bwValidate(s, val); !ok {
			return syscall.EINVAL
		}
		if mbaSC {
			// parse_bw: under mba_MBps the value goes to the software controller at
			// parse time, unstaged, so it sticks even if a later line fails and a
			// repeated domain is not a duplicate (fs/resctrl/ctrlmondata.c).
			g.cfg[s.name][d] = v
			e.gen++
			continue
		}
		have[key] = true
		*st = append(*st, staged{s, d, v})
	}
	return nil
}

// kstrtoul parses like the kernel's kstrtoul: optional "0x" for base 16, one trailing
// newline allowed, nothing else.
func kstrtoul(s string, base int) (uint64, bool) {
	s = strings.TrimSuffix(s, "\n")
	if base == 16 {
		if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
			s = s[2:]
		}
	}
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseUint(s, base, 64)
	return v, err == nil
}

// cbmValidate is cbm_validate (fs/resctrl/ctrlmondata.c).
func (e *Emulator) cbmValidate(s *schema, buf string) (uint32, bool) {
	c := s.cache
	val, ok := kstrtoul(buf, 16)
	if !ok {
		e.status("Non-hex character in the mask %s", buf)
		return 0, false
	}
	supported := uint64(1)<<uint(c.CBMLen) - 1
	if (c.MinCBMBits > 0 && val == 0) || val > supported {
		e.status("Mask out of range")
		return 0, false
	}
	v := uint32(val)
	first, zero := 0, 0
	if v != 0 {
		first = bits.TrailingZeros32(v)
		zero = first + bits.TrailingZeros32(^(v >> uint(first)))
	} else {
		first, zero = c.CBMLen, c.CBMLen
	}
	if !c.Sparse && zero < 32 && v>>uint(zero) != 0 {
		e.status("The mask %x has non-consecutive 1-bits", v)
		return 0, false
	}
	if zero-first < c.MinCBMBits {
		e.status("Need at least %d bits in the mask", c.MinCBMBits)
		return 0, false
	}
	return v, true
}

// bwValidate is bw_validate: range check against [min_bandwidth, max] and round up to
// bandwidth_gran, or any u32 under mba_MBps.
func (e *Emulator) bwValidate(s *schema, buf string) (uint32, bool) {
	b := s.bw
	if !b.DelayLinear && b.NeedsLinear {
		e.status("No support for non-linear MB domains")
		return 0, false
	}
	v, ok := kstrtoul(buf, 10)
	if !ok || v > uint64(^uint32(0)) {
		e.status("Invalid MB value %s", buf)
		return 0, false
	}
	if s.res == "MB" && e.p.MBAMBps {
		return uint32(v), true
	}
	if v < uint64(b.Min) || v > uint64(b.Max) {
		e.status("MB value %d out of range [%d,%d]", v, b.Min, b.Max)
		return 0, false
	}
	g := uint64(b.Gran)
	return uint32((v + g - 1) / g * g), true
}

// writeTasks is rdtgroup_tasks_write: comma-separated PIDs moved one after another; the
// first failure stops the write and earlier moves stay.
func (e *Emulator) writeTasks(g *group, buf string) error {
	e.cmd()
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
		t = &task{}
		e.tasks[pid] = t
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
	e.gen++
	return nil
}

func (e *Emulator) writeCPUs(g *group, buf string, list bool) error {
	e.cmd()
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

func (e *Emulator) writeEvent(g *group, buf string) error {
	if len(buf) == 0 || buf[len(buf)-1] != '\n' {
		return syscall.EINVAL
	}
	buf = buf[:len(buf)-1]
	e.cmd()
	if buf != "mbm_local_bytes" && buf != "mbm_total_bytes" || !contains(e.monFeatures(), buf) {
		e.status("Unsupported event id '%s'", buf)
		return syscall.EINVAL
	}
	g.event = buf
	return nil
}

func (e *Emulator) writeThreshold(buf string) error {
	v, ok := kstrtoul(buf, 10)
	if !ok || v > uint64(^uint32(0)) {
		return syscall.EINVAL
	}
	if v > e.p.L3.SizeBytes {
		return syscall.EINVAL
	}
	e.thresh = v
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
