// The file tree: name resolution, directory listings, reads and the write dispatch
// (the file tables of fs/resctrl/rdtgroup.c).

package emu

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"colo/cbm"
)

// ---- name resolution -----------------------------------------------------------------

type node struct {
	dir  bool
	g    *group
	sub  string // "", "mon_groups", "mon_data", "info"
	info string // info sub-directory name
	dom  int    // mon_data domain (L3 domain index)
	domD bool   // the node is (or is inside) mon_data/mon_L3_XX
	sub2 int    // SNC node within dom (mon_sub_L3_YY), or -1
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
		f := []string{"max_threshold_occupancy", "mon_features", "num_rmids"}
		if e.p.Mon.Counters > 0 {
			f = append(f, "available_mbm_cntrs", "mbm_assign_mode", "mbm_assign_on_mkdir", "num_mbm_cntrs")
		}
		if e.bmecOn() {
			for _, ev := range mbmEvents {
				if contains(e.p.Mon.Features, ev) {
					f = append(f, ev+"_config")
				}
			}
		}
		sort.Strings(f)
		return f
	}
	s := e.schemaByName(dir)
	if s == nil {
		return nil
	}
	if s.isCache() {
		f := []string{"bit_usage", "cbm_mask", "min_cbm_bits", "num_closids", "shareable_bits", "sparse_masks"}
		if s.cache.IOAlloc {
			f = append(f, "io_alloc", "io_alloc_cbm")
			sort.Strings(f)
		}
		return f
	}
	f := []string{"bandwidth_gran", "delay_linear", "min_bandwidth", "num_closids"}
	if s.bw.ThrottleMode != "" {
		f = append(f, "thread_throttle_mode")
	}
	return f
}

func (e *Emulator) groupFiles(g *group) []string {
	if !g.ctrl {
		return e.monGroupFiles()
	}
	f := ctrlFiles
	if e.p.MBAMBps {
		f = append(append([]string(nil), f...), "mba_MBps_event")
	}
	if e.p.Mon != nil && e.p.Mon.Counters > 0 {
		f = append(append([]string(nil), f...), "mbm_L3_assignments")
		sort.Strings(f)
	}
	return f
}

// monGroupFiles are a MON group's files.
func (e *Emulator) monGroupFiles() []string {
	if e.p.Mon != nil && e.p.Mon.Counters > 0 {
		return []string{"cpus", "cpus_list", "mbm_L3_assignments", "tasks"}
	}
	return monFiles
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
		d, ok := parseMonDir(c[1], "mon_L3_", e.p.L3IDs())
		if !ok {
			return nil, syscall.ENOENT
		}
		if len(c) == 2 {
			return &node{dir: true, g: g, sub: "mon_data", dom: d, domD: true, sub2: -1}, nil
		}
		if len(c) == 3 && contains(e.monFeatures(), c[2]) {
			return &node{g: g, sub: "mon_data", dom: d, domD: true, sub2: -1, file: c[2]}, nil
		}
		if e.snc() > 1 {
			k, ok := parseMonDir(c[2], "mon_sub_L3_", e.subIDs(d))
			if !ok {
				return nil, syscall.ENOENT
			}
			if len(c) == 3 {
				return &node{dir: true, g: g, sub: "mon_data", dom: d, domD: true, sub2: k}, nil
			}
			if len(c) == 4 && contains(e.monFeatures(), c[3]) {
				return &node{g: g, sub: "mon_data", dom: d, domD: true, sub2: k, file: c[3]}, nil
			}
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

func monDirName(prefix string, id int) string { return fmt.Sprintf("%s%02d", prefix, id) }

// parseMonDir maps a mon_L3_XX (or mon_sub_L3_YY) name to the index of its id in ids.
func parseMonDir(s, prefix string, ids []int) (int, bool) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) < 2 {
		return 0, false
	}
	id, err := strconv.Atoi(rest)
	if err != nil || monDirName(prefix, id) != s {
		return 0, false
	}
	d := indexOf(ids, id)
	return d, d >= 0
}

// subIDs are the SNC node ids within L3 domain index d: the monitoring domains of the
// nodes that share the cache, numbered index*SNC+k (the NUMA node ids of a part whose
// L3 ids are 0..n-1).
func (e *Emulator) subIDs(d int) []int {
	n := e.snc()
	out := make([]int, n)
	for k := range out {
		out[k] = d*n + k
	}
	return out
}

// Entry is one directory entry.
type Entry struct {
	Name     string
	Dir      bool
	Writable bool
}

var writableFiles = map[string]bool{"cpus": true, "cpus_list": true, "mode": true, "schemata": true, "tasks": true,
	"mba_MBps_event": true, "max_threshold_occupancy": true, "mbm_assign_mode": true, "mbm_assign_on_mkdir": true,
	"mbm_L3_assignments": true, "mbm_total_bytes_config": true, "mbm_local_bytes_config": true,
	"io_alloc": true, "io_alloc_cbm": true}

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
		if n.sub2 < 0 && e.snc() > 1 {
			for _, id := range e.subIDs(n.dom) {
				addD(monDirName("mon_sub_L3_", id))
			}
		}
	case n.sub == "mon_data":
		for _, id := range e.p.L3IDs() {
			addD(monDirName("mon_L3_", id))
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
	if n.file == "io_alloc_cbm" {
		t, err := e.readIOAllocCBM()
		return []byte(t), err
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
				// with BMEC the kernel lists each configurable event's _config after it
				var b strings.Builder
				for _, f := range m.Features {
					b.WriteString(f + "\n")
					if e.bmecOn() && f != "llc_occupancy" {
						b.WriteString(f + "_config\n")
					}
				}
				return b.String()
			case "max_threshold_occupancy":
				return fmt.Sprintf("%d\n", e.thresh)
			case "num_mbm_cntrs":
				return e.perDomain(func(int) string { return strconv.Itoa(m.Counters) })
			case "available_mbm_cntrs":
				return e.perDomain(func(d int) string { return strconv.Itoa(e.availableCntrs(d)) })
			case "mbm_assign_mode":
				return e.readAssignMode()
			case "mbm_assign_on_mkdir":
				return fmt.Sprintf("%d\n", b2i(e.onMkdir))
			case "mbm_total_bytes_config", "mbm_local_bytes_config":
				return e.readBMEC(strings.TrimSuffix(n.file, "_config"))
			}
		}
		s := e.schemaByName(n.info)
		if s.isCache() {
			c := s.cache
			switch n.file {
			case "num_closids":
				return fmt.Sprintf("%d\n", s.closids)
			case "cbm_mask":
				return fmt.Sprintf("%x\n", uint64(cbm.Full(c.CBMLen)))
			case "min_cbm_bits":
				return fmt.Sprintf("%d\n", c.MinCBMBits)
			case "shareable_bits":
				return fmt.Sprintf("%x\n", c.ShareableBits)
			case "sparse_masks":
				return fmt.Sprintf("%d\n", b2i(c.Sparse))
			case "bit_usage":
				return e.bitUsage(s)
			case "io_alloc":
				return e.readIOAlloc()
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
		return e.readMon(n.g, n.dom, n.sub2, n.file)
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
	case "mbm_L3_assignments":
		return e.readAssignments(g)
	}
	return ""
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
	case "mbm_assign_mode":
		werr = e.writeAssignMode(buf)
	case "mbm_assign_on_mkdir":
		werr = e.writeOnMkdir(buf)
	case "mbm_L3_assignments":
		werr = e.writeAssignments(n.g, buf)
	case "mbm_total_bytes_config", "mbm_local_bytes_config":
		werr = e.writeBMEC(strings.TrimSuffix(n.file, "_config"), buf)
	case "io_alloc":
		werr = e.writeIOAlloc(buf)
	case "io_alloc_cbm":
		werr = e.writeIOAllocCBM(buf)
	}
	return werr
}
