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
				return fmt.Sprintf("%x\n", uint64(cbm.Full(c.CBMLen)))
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
