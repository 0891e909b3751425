// Loading a captured resctrl tree (colo resctrl capture, or a plain `cp -r
// /sys/fs/resctrl`) as an emulator that serves that host: its resources, domain ids,
// masks, modes, CLOSID and RMID counts, groups, tasks, counter assignments and counter
// values as captured, with the kernel's rules for that hardware.

package emu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"colo/cbm"
	"colo/machine"
)

// TreeRoot returns the resctrl directory of a capture: DIR/resctrl when it exists (the
// capture layout), else DIR itself when it has info/ (a bare copy of the mount).
func TreeRoot(dir string) (string, error) {
	for _, d := range []string{filepath.Join(dir, "resctrl"), dir} {
		if st, err := os.Stat(filepath.Join(d, "info")); err == nil && st.IsDir() {
			return d, nil
		}
	}
	return "", fmt.Errorf("%s: no resctrl tree (want %s/resctrl/info or %s/info: a colo resctrl capture, or cp -r /sys/fs/resctrl)", dir, dir, dir)
}

// tree reads files of a captured resctrl directory; errors name the file.
type tree struct{ root string }

func (t tree) path(rel string) string { return filepath.Join(t.root, rel) }

func (t tree) has(rel string) bool {
	_, err := os.Stat(t.path(rel))
	return err == nil
}

func (t tree) read(rel string) (string, error) {
	b, err := os.ReadFile(t.path(rel))
	if err != nil {
		return "", fmt.Errorf("captured tree: %w", err)
	}
	return string(b), nil
}

func (t tree) int(rel string) (int, error) {
	s, err := t.read(rel)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", t.path(rel), strings.TrimSpace(s))
	}
	return v, nil
}

func (t tree) hex(rel string) (uint64, error) {
	s, err := t.read(rel)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(s), "0x"), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not hexadecimal", t.path(rel), strings.TrimSpace(s))
	}
	return v, nil
}

func (t tree) dirs(rel string) []string {
	ents, err := os.ReadDir(t.path(rel))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// schemaLine is one parsed line of a captured schemata file.
type schemaLine struct {
	name  string
	width int // the printed name field, spaces included
	ids   []int
	vals  []string
}

func parseCapturedSchemata(path, text string) ([]schemaLine, error) {
	var out []schemaLine
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		name, rest, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("%s: line %q has no ':'", path, l)
		}
		sl := schemaLine{name: strings.TrimSpace(name), width: len(name)}
		if strings.TrimSpace(rest) == "uninitialized" {
			return nil, fmt.Errorf("%s: a pseudo-locksetup group cannot be replayed", path)
		}
		for _, tok := range strings.Split(rest, ";") {
			id, v, ok := strings.Cut(tok, "=")
			d, err := strconv.Atoi(strings.TrimSpace(id))
			if !ok || err != nil {
				return nil, fmt.Errorf("%s: entry %q of %s is not id=value", path, tok, sl.name)
			}
			sl.ids = append(sl.ids, d)
			sl.vals = append(sl.vals, strings.TrimSpace(v))
		}
		out = append(out, sl)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	return out, nil
}

// ProfileFromTree derives the emulator profile of a captured resctrl tree (see
// TreeRoot). The vendor comes from cpuinfo beside the tree (vendor_id, or "CPU
// implementer" for Arm), else from the MB scale (2048 = AMD); the CPU count from
// cpu/online beside the tree, else from the groups' cpus_list. Facts the files do not
// give: which hardware supports CDP when it is off (assumed from the name padding of
// the schemata), the cache size without a size file.
func ProfileFromTree(dir string) (*Profile, error) {
	root, err := TreeRoot(dir)
	if err != nil {
		return nil, err
	}
	t := tree{root}
	schem, err := t.read("schemata")
	if err != nil {
		return nil, err
	}
	lines, err := parseCapturedSchemata(t.path("schemata"), schem)
	if err != nil {
		return nil, err
	}
	byName := map[string]schemaLine{}
	for _, l := range lines {
		byName[l.name] = l
	}
	p := &Profile{Name: "tree:" + filepath.Base(filepath.Clean(dir)), Padded: true}
	p.Vendor = treeVendor(dir, byName)
	// a line order other than the kernel's resource order (caches, MB, SMBA) is the
	// reversed listing of some kernels
	if len(lines) > 1 && !isCacheLine(lines[0].name) && isCacheLine(lines[len(lines)-1].name) {
		p.ReverseSchemata = true
	}
	infos := t.dirs("info")
	if len(infos) == 0 {
		return nil, fmt.Errorf("%s: no resource directories", t.path("info"))
	}
	for _, lvl := range []int{3, 2} {
		base := fmt.Sprintf("L%d", lvl)
		name := base
		cdp := false
		if slices.Contains(infos, base+"CODE") {
			name, cdp = base+"CODE", true
		} else if !slices.Contains(infos, base) {
			continue
		}
		c, err := cacheFromTree(t, name, byName)
		if err != nil {
			return nil, err
		}
		c.Level = lvl
		if cdp {
			c.NumCLOSIDs *= 2
			c.CDPCapable = true
		} else if l, ok := byName[name]; ok && l.width >= len(name)+4 {
			c.CDPCapable = true // the kernel reserved room for a CODE/DATA suffix
		}
		if lvl == 3 {
			p.L3, p.CDP = c, cdp
		} else {
			p.L2, p.CDPL2 = c, cdp
		}
	}
	for _, name := range []string{"MB", "SMBA"} {
		if !slices.Contains(infos, name) {
			continue
		}
		b, err := bwFromTree(t, name, byName, p.Vendor)
		if err != nil {
			return nil, err
		}
		if name == "MB" {
			p.MB = b
		} else {
			p.SMBA = b
		}
	}
	p.MBAMBps = t.has("mba_MBps_event")
	if p.MBAMBps && p.MB != nil {
		p.MB.Max = 100
	}
	if slices.Contains(infos, "L3_MON") {
		m, snc, err := monFromTree(t)
		if err != nil {
			return nil, err
		}
		p.Mon, p.SNC = m, snc
	}
	if p.CPUs, err = treeCPUs(dir, t); err != nil {
		return nil, err
	}
	p.Padded = treePadded(t, p)
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: cannot be modelled: %w", root, err)
	}
	return p, nil
}

func isCacheLine(n string) bool { return strings.HasPrefix(n, "L") }

func treeVendor(dir string, lines map[string]schemaLine) machine.Vendor {
	if b, err := os.ReadFile(filepath.Join(dir, "cpuinfo")); err == nil {
		s := string(b)
		switch {
		case strings.Contains(s, "AuthenticAMD") || strings.Contains(s, "HygonGenuine"):
			return machine.AMD
		case strings.Contains(s, "GenuineIntel"):
			return machine.Intel
		case strings.Contains(s, "CPU implementer"):
			return machine.Arm
		}
	}
	if l, ok := lines["MB"]; ok && len(l.vals) > 0 && l.vals[0] == "2048" {
		return machine.AMD
	}
	if _, ok := lines["SMBA"]; ok {
		return machine.AMD
	}
	return machine.Intel
}

func cacheFromTree(t tree, name string, lines map[string]schemaLine) (*CacheRes, error) {
	dir := "info/" + name + "/"
	mask, err := t.hex(dir + "cbm_mask")
	if err != nil {
		return nil, err
	}
	if mask == 0 || mask&(mask+1) != 0 {
		return nil, fmt.Errorf("%s: cbm_mask %x is not a run of ones from bit 0", t.path(dir+"cbm_mask"), mask)
	}
	c := &CacheRes{CBMLen: cbm.Mask(mask).Ones()}
	if c.NumCLOSIDs, err = t.int(dir + "num_closids"); err != nil {
		return nil, err
	}
	if c.MinCBMBits, err = t.int(dir + "min_cbm_bits"); err != nil {
		return nil, err
	}
	if t.has(dir + "shareable_bits") {
		if c.ShareableBits, err = t.hex(dir + "shareable_bits"); err != nil {
			return nil, err
		}
	}
	if t.has(dir + "sparse_masks") { // older kernels lack it: contiguous masks only
		v, err := t.int(dir + "sparse_masks")
		if err != nil {
			return nil, err
		}
		c.Sparse = v == 1
	}
	c.IOAlloc = t.has(dir + "io_alloc")
	l, ok := lines[name]
	if !ok {
		return nil, fmt.Errorf("%s: no %s line although info/%s exists", t.path("schemata"), name, name)
	}
	c.Domains, c.IDs = len(l.ids), slices.Clone(l.ids)
	if err := checkIDs(c.IDs, c.Domains); err != "" {
		return nil, fmt.Errorf("%s: %s line %s", t.path("schemata"), name, err)
	}
	// the default group's size file gives the bytes of its mask; scale to the full mask
	c.SizeBytes = 1 << 20 * uint64(c.CBMLen)
	if sz, err := t.read("size"); err == nil {
		if sl, err := parseCapturedSchemata(t.path("size"), sz); err == nil {
			for _, x := range sl {
				if x.name != name || len(x.vals) == 0 {
					continue
				}
				v, err1 := strconv.ParseUint(x.vals[0], 10, 64)
				m, err2 := strconv.ParseUint(l.vals[0], 16, 64)
				if err1 == nil && err2 == nil && m != 0 {
					c.SizeBytes = v / uint64(cbm.Mask(m).Ones()) * uint64(c.CBMLen)
				}
			}
		}
	}
	return c, nil
}

func bwFromTree(t tree, name string, lines map[string]schemaLine, v machine.Vendor) (*BWRes, error) {
	l, ok := lines[name]
	if !ok {
		return nil, fmt.Errorf("%s: no %s line although info/%s exists", t.path("schemata"), name, name)
	}
	b := &BWRes{Domains: len(l.ids), IDs: slices.Clone(l.ids), Max: 100}
	if err := checkIDs(b.IDs, b.Domains); err != "" {
		return nil, fmt.Errorf("%s: %s line %s", t.path("schemata"), name, err)
	}
	dir := "info/" + name + "/"
	var err error
	if b.NumCLOSIDs, err = t.int(dir + "num_closids"); err != nil {
		return nil, err
	}
	mn, err := t.int(dir + "min_bandwidth")
	if err != nil {
		return nil, err
	}
	g, err := t.int(dir + "bandwidth_gran")
	if err != nil {
		return nil, err
	}
	b.Min, b.Gran = uint32(mn), uint32(g)
	if t.has(dir + "delay_linear") {
		d, err := t.int(dir + "delay_linear")
		if err != nil {
			return nil, err
		}
		b.DelayLinear = d == 1
	}
	if t.has(dir + "thread_throttle_mode") {
		s, _ := t.read(dir + "thread_throttle_mode")
		b.ThrottleMode = strings.TrimSpace(s)
	}
	switch v {
	case machine.AMD:
		b.Max = 2048
	case machine.Intel:
		b.NeedsLinear = true
	}
	return b, nil
}

func monFromTree(t tree) (*MonRes, int, error) {
	m := &MonRes{}
	var err error
	if m.NumRMIDs, err = t.int("info/L3_MON/num_rmids"); err != nil {
		return nil, 0, err
	}
	f, err := t.read("info/L3_MON/mon_features")
	if err != nil {
		return nil, 0, err
	}
	for _, x := range strings.Fields(f) {
		if !slices.Contains(allMonFeatures, x) {
			continue // events colo does not model (e.g. *_config names listed by some kernels)
		}
		m.Features = append(m.Features, x)
	}
	if t.has("info/L3_MON/max_threshold_occupancy") {
		v, err := t.int("info/L3_MON/max_threshold_occupancy")
		if err != nil {
			return nil, 0, err
		}
		m.MaxThresholdOccupancy = uint64(v)
	}
	m.BMEC = t.has("info/L3_MON/mbm_total_bytes_config") || t.has("info/L3_MON/mbm_local_bytes_config")
	if t.has("info/L3_MON/num_mbm_cntrs") {
		s, _ := t.read("info/L3_MON/num_mbm_cntrs")
		first, _, _ := strings.Cut(strings.TrimSpace(s), ";")
		_, v, _ := strings.Cut(first, "=")
		if m.Counters, err = strconv.Atoi(v); err != nil || m.Counters < 1 {
			return nil, 0, fmt.Errorf("%s: %q is not id=count", t.path("info/L3_MON/num_mbm_cntrs"), strings.TrimSpace(s))
		}
		m.BMEC = true // hidden in mbm_event mode; AMD ABMC parts have it
	}
	snc := 0
	if ds := t.dirs("mon_data"); len(ds) > 0 {
		n := 0
		for _, s := range t.dirs("mon_data/" + ds[0]) {
			if strings.HasPrefix(s, "mon_sub_L3_") {
				n++
			}
		}
		if n > 1 {
			snc = n
		}
	}
	return m, snc, nil
}

// treeCPUs is the number of CPUs: cpu/online beside the tree, else one more than the
// highest CPU in any group's cpus_list.
func treeCPUs(dir string, t tree) (int, error) {
	if b, err := os.ReadFile(filepath.Join(dir, "cpu", "online")); err == nil {
		l, err := machine.ParseCPUList(strings.TrimSpace(string(b)))
		if err != nil || len(l) == 0 {
			return 0, fmt.Errorf("%s: %q is not a CPU list", filepath.Join(dir, "cpu", "online"), strings.TrimSpace(string(b)))
		}
		return slices.Max(l) + 1, nil
	}
	hi := -1
	err := filepath.WalkDir(t.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cpus_list" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		l, err := machine.ParseCPUList(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("%s: %q is not a CPU list", p, strings.TrimSpace(string(b)))
		}
		if len(l) > 0 {
			hi = max(hi, slices.Max(l))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if hi < 0 {
		return 0, fmt.Errorf("%s: no CPU count (no cpu/online beside the tree and no cpus_list in it)", t.root)
	}
	return hi + 1, nil
}

// treePadded says whether the tree uses the older zero-padded format: a mask printed
// shorter than the mask width means unpadded.
func treePadded(t tree, p *Profile) bool {
	if p.L3 == nil {
		return true
	}
	w := (p.L3.CBMLen + 3) / 4
	padded := true
	_ = filepath.WalkDir(t.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "schemata" {
			return nil
		}
		b, _ := os.ReadFile(path)
		ls, err := parseCapturedSchemata(path, string(b))
		if err != nil {
			return nil
		}
		for _, l := range ls {
			if !strings.HasPrefix(l.name, "L3") {
				continue
			}
			for _, v := range l.vals {
				if len(v) < w {
					padded = false
				}
			}
		}
		return nil
	})
	return padded
}

// LoadTree builds an emulator serving a captured tree: ProfileFromTree, then the groups
// replayed (mkdir, schemata, mode, CPUs, tasks, counter assignments, BMEC and io_alloc
// settings) and the counter values seeded so that every readable file reads as
// captured. Captured tasks are accepted whatever opts.PIDExists says (they are another
// host's PIDs); later writes follow opts. An inconsistency is an error naming the file.
func LoadTree(dir string, opts Options) (*Emulator, error) {
	p, err := ProfileFromTree(dir)
	if err != nil {
		return nil, err
	}
	e, err := New(p, opts)
	if err != nil {
		return nil, err
	}
	root, _ := TreeRoot(dir)
	t := tree{root}
	exists := e.opts.PIDExists
	e.opts.PIDExists = func(int) bool { return true }
	defer func() { e.opts.PIDExists = exists }()
	if err := e.replay(t); err != nil {
		return nil, err
	}
	return e, nil
}

// replayWrite writes one captured file's content and names the file on failure.
func (e *Emulator) replayWrite(t tree, rel, data string) error {
	if err := e.WriteFile(rel, []byte(data)); err != nil {
		return fmt.Errorf("%s: the emulator of this hardware refuses %q: %v (%s)", t.path(rel), strings.TrimSpace(data), err, e.LastCmdStatus())
	}
	return nil
}

func (e *Emulator) replay(t tree) error {
	ctrls := []string{""}
	for _, d := range t.dirs("") {
		if d != "info" && d != "mon_data" && d != "mon_groups" {
			ctrls = append(ctrls, d)
		}
	}
	// settings first: they decide what groups may do
	for _, f := range []string{"info/L3_MON/mbm_assign_mode", "info/L3_MON/mbm_assign_on_mkdir", "info/L3_MON/max_threshold_occupancy"} {
		if !t.has(f) {
			continue
		}
		v, _ := t.read(f)
		if f == "info/L3_MON/mbm_assign_mode" {
			v = activeMode(v)
		}
		if err := e.replayWrite(t, f, v); err != nil {
			return err
		}
	}
	mons := map[string][]string{}
	for _, c := range ctrls {
		if c != "" {
			if err := e.Mkdir(c); err != nil {
				return fmt.Errorf("%s: mkdir: %v (%s)", t.path(c), err, e.LastCmdStatus())
			}
		}
		for _, m := range t.dirs(filepath.Join(c, "mon_groups")) {
			mp := filepath.Join(c, "mon_groups", m)
			if err := e.Mkdir(mp); err != nil {
				return fmt.Errorf("%s: mkdir: %v (%s)", t.path(mp), err, e.LastCmdStatus())
			}
			mons[c] = append(mons[c], mp)
		}
	}
	for _, c := range ctrls {
		s, err := t.read(filepath.Join(c, "schemata"))
		if err != nil {
			return err
		}
		if err := e.replaySchemata(t, c, s); err != nil {
			return err
		}
	}
	for _, c := range ctrls[1:] {
		if !t.has(filepath.Join(c, "mode")) {
			continue
		}
		m, _ := t.read(filepath.Join(c, "mode"))
		m = strings.TrimSpace(m)
		if m == "pseudo-locked" || m == "pseudo-locksetup" {
			return fmt.Errorf("%s: %s groups cannot be replayed", t.path(filepath.Join(c, "mode")), m)
		}
		if m != "shareable" {
			if err := e.replayWrite(t, filepath.Join(c, "mode"), m+"\n"); err != nil {
				return err
			}
		}
	}
	all := append([]string(nil), ctrls...)
	for _, c := range ctrls {
		all = append(all, mons[c]...)
	}
	for _, g := range all[1:] {
		if err := e.replayMembers(t, g); err != nil {
			return err
		}
	}
	if b, err := t.read("tasks"); err == nil {
		for _, f := range strings.Fields(b) {
			if pid, err := strconv.Atoi(f); err == nil {
				e.Declare(pid)
			}
		}
	}
	for _, g := range all {
		f := filepath.Join(g, "mbm_L3_assignments")
		if !t.has(f) {
			continue
		}
		v, _ := t.read(f)
		// free every counter first so that they go where the capture has them
		if e.countersOn() {
			if err := e.replayWrite(t, f, strings.ReplaceAll(v, "=e", "=_")); err != nil {
				return err
			}
		}
	}
	for _, g := range all {
		f := filepath.Join(g, "mbm_L3_assignments")
		if v, err := t.read(f); err == nil && e.countersOn() {
			if err := e.replayWrite(t, f, v); err != nil {
				return err
			}
		}
	}
	for _, ev := range mbmEvents {
		f := "info/L3_MON/" + ev + "_config"
		if v, err := t.read(f); err == nil && e.bmecOn() {
			if err := e.replayWrite(t, f, v); err != nil {
				return err
			}
		}
	}
	for _, r := range []string{"L3", "L3CODE"} {
		f := "info/" + r + "/io_alloc"
		if v, err := t.read(f); err == nil && strings.TrimSpace(v) == "enabled" {
			if err := e.replayWrite(t, f, "1\n"); err != nil {
				return err
			}
			if c, err := t.read("info/" + r + "/io_alloc_cbm"); err == nil {
				if err := e.replayWrite(t, "info/"+r+"/io_alloc_cbm", c); err != nil {
					return err
				}
			}
			break
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cmd()
	return e.seedCounters(t, all)
}

// activeMode picks the bracketed entry of mbm_assign_mode.
func activeMode(s string) string {
	for _, l := range strings.Fields(s) {
		if strings.HasPrefix(l, "[") {
			return strings.Trim(l, "[]") + "\n"
		}
	}
	return strings.TrimSpace(s) + "\n"
}

// replaySchemata writes a captured schemata file line by line (one command each, so
// that a refusal names the line).
func (e *Emulator) replaySchemata(t tree, g, text string) error {
	f := filepath.Join(g, "schemata")
	lines, err := parseCapturedSchemata(t.path(f), text)
	if err != nil {
		return err
	}
	for _, l := range lines {
		parts := make([]string, len(l.ids))
		for i := range l.ids {
			parts[i] = fmt.Sprintf("%d=%s", l.ids[i], l.vals[i])
		}
		if err := e.replayWrite(t, f, l.name+":"+strings.Join(parts, ";")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// replayMembers gives a group its captured CPUs and tasks.
func (e *Emulator) replayMembers(t tree, g string) error {
	if v, err := t.read(filepath.Join(g, "cpus_list")); err == nil && strings.TrimSpace(v) != "" {
		if err := e.replayWrite(t, filepath.Join(g, "cpus_list"), v); err != nil {
			return err
		}
	}
	if v, err := t.read(filepath.Join(g, "tasks")); err == nil {
		for _, f := range strings.Fields(v) {
			if err := e.replayWrite(t, filepath.Join(g, "tasks"), f+"\n"); err != nil {
				return err
			}
		}
	}
	return nil
}

// seedPID is the pseudo-task that holds a captured group's cache occupancy until the
// first Tick with a source (the machine running again replaces the snapshot).
func seedPID(rmid int) int { return -1 - rmid }

// seedCounters sets each group's own counters so that reads give the captured values
// (a CTRL_MON group reads its own plus its MON groups'); "Unavailable" marks the next
// read. Called with e.mu held.
func (e *Emulator) seedCounters(t tree, groups []string) error {
	if e.p.Mon == nil {
		return nil
	}
	n := e.snc()
	ids := e.p.L3IDs()
	// MON groups first: their values are subtracted from their parent's
	slices.SortStableFunc(groups, func(a, b string) int {
		return strings.Count(b, "/") - strings.Count(a, "/")
	})
	for _, gp := range groups {
		nd, err := e.resolve(splitPath(gp))
		if err != nil || nd.g == nil {
			continue
		}
		g := nd.g
		if g.rmid == noID {
			continue
		}
		for d, id := range ids {
			dom := filepath.Join(gp, "mon_data", monDirName("mon_L3_", id))
			for _, ev := range e.monFeatures() {
				for k := 0; k < n; k++ {
					f := filepath.Join(dom, ev)
					if n > 1 {
						f = filepath.Join(dom, monDirName("mon_sub_L3_", e.subIDs(d)[k]), ev)
					}
					s, err := t.read(f)
					if err != nil {
						if errors.Is(err, fs.ErrNotExist) {
							continue
						}
						return err
					}
					s = strings.TrimSpace(s)
					if s == "Unavailable" {
						e.mon.unavail[unavailKey{g.rmid, d, ev}] = true
						continue
					}
					if s == "Unassigned" || s == "Error" {
						continue
					}
					v, err := strconv.ParseUint(s, 10, 64)
					if err != nil {
						return fmt.Errorf("%s: %q is not a counter value", t.path(f), s)
					}
					if g.ctrl {
						for _, m := range g.mons {
							v -= min(v, e.ownValue(m, d*n+k, ev))
						}
					}
					md := d*n + k
					switch ev {
					case "llc_occupancy":
						pid := seedPID(g.rmid)
						if e.mon.held[pid] == nil {
							e.mon.held[pid] = map[int]map[int]uint64{}
						}
						if e.mon.held[pid][md] == nil {
							e.mon.held[pid][md] = map[int]uint64{}
						}
						e.mon.held[pid][md][g.rmid] = v
						e.mon.seeded = true
					case "mbm_total_bytes":
						e.mon.total[rd{g.rmid, md}] = v
					case "mbm_local_bytes":
						e.mon.local[rd{g.rmid, md}] = v
					}
				}
			}
		}
	}
	return nil
}

// ownValue is what one group's own RMID holds for an event on a monitoring domain.
func (e *Emulator) ownValue(g *group, md int, ev string) uint64 {
	switch ev {
	case "llc_occupancy":
		return e.mon.held[seedPID(g.rmid)][md][g.rmid]
	case "mbm_total_bytes":
		return e.mon.total[rd{g.rmid, md}]
	case "mbm_local_bytes":
		return e.mon.local[rd{g.rmid, md}]
	}
	return 0
}
