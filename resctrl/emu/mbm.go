// Assignable MBM counters (the kernel's mbm_event mode), bandwidth monitoring event
// configuration (BMEC) and L3 I/O allocation (io_alloc).
//
// Sources (facts only): the kernel's Documentation/filesystems/resctrl.rst (current:
// "mbm_assign_mode", "num_mbm_cntrs", "available_mbm_cntrs", "mbm_assign_on_mkdir",
// "mbm_L3_assignments", "mbm_total_bytes_config", "io_alloc", "io_alloc_cbm") and
// fs/resctrl/monitor.c and ctrlmondata.c. Messages marked "patch" come from the series
// that introduced the feature on the kernel mailing list, not from a released file.

package emu

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"colo/cbm"
)

// mbm events that can hold a counter, in the kernel's order.
var mbmEvents = []string{"mbm_total_bytes", "mbm_local_bytes"}

// bmecDefault is the default event configuration: mbm_total_bytes counts every
// transaction type (0x7f), mbm_local_bytes the local ones (0x15) (resctrl.rst, BMEC).
var bmecDefault = map[string]uint32{"mbm_total_bytes": 0x7f, "mbm_local_bytes": 0x15}

// bmecValid is the mask of valid BMEC bits (seven transaction types).
const bmecValid = 0x7f

// countersOn says whether mbm_event mode is active (counters must be assigned).
func (e *Emulator) countersOn() bool {
	return e.p.Mon != nil && e.p.Mon.Counters > 0 && e.assignMode == "mbm_event"
}

// bmecOn says whether the BMEC configuration files are visible: BMEC hardware and not
// mbm_event mode (which replaces per-domain configuration with counter assignment).
func (e *Emulator) bmecOn() bool {
	return e.p.Mon != nil && e.p.Mon.BMEC && !e.countersOn()
}

// assigned says whether group g's event holds a counter on L3 domain index d (always
// true outside mbm_event mode, where every RMID counts).
func (e *Emulator) assigned(g *group, d int, event string) bool {
	if !e.countersOn() {
		return true
	}
	c := g.cntr[event]
	return c != nil && c[d]
}

// counting says whether traffic of RMID r on domain index d for event is counted.
func (e *Emulator) counting(r, d int, event string) bool {
	if !e.countersOn() {
		return true
	}
	g := e.rmids[r]
	return g != nil && e.assigned(g, d, event)
}

// availableCntrs is the number of free counters on domain index d.
func (e *Emulator) availableCntrs(d int) int {
	used := 0
	for _, g := range e.sortedCtrls() {
		for _, x := range append([]*group{g}, sortedMons(g)...) {
			for _, ev := range mbmEvents {
				if c := x.cntr[ev]; c != nil && c[d] {
					used++
				}
			}
		}
	}
	return e.p.Mon.Counters - used
}

// assign gives (or with on=false takes back) group g's counter for event on domain
// index d. An assignment starts the count at zero. It fails with ENOSPC when no counter
// is free.
func (e *Emulator) assign(g *group, d int, event string, on bool) error {
	if g.cntr == nil {
		g.cntr = map[string][]bool{}
	}
	c := g.cntr[event]
	if c == nil {
		c = make([]bool, e.p.L3.Domains)
		g.cntr[event] = c
	}
	if c[d] == on {
		return nil
	}
	if on {
		if e.availableCntrs(d) <= 0 {
			return syscall.ENOSPC
		}
		n := e.snc()
		for k := 0; k < n; k++ {
			key := rd{g.rmid, d*n + k}
			if event == "mbm_total_bytes" {
				delete(e.mon.total, key)
			} else {
				delete(e.mon.local, key)
			}
		}
	}
	c[d] = on
	return nil
}

// assignOnMkdir gives a new group counters for every event the hardware monitors on
// every domain when mbm_assign_on_mkdir is set; a domain without a free counter stays
// unassigned and mkdir still succeeds (resctrl.rst: "mkdir does not fail").
func (e *Emulator) assignOnMkdir(g *group) {
	if !e.countersOn() || !e.onMkdir {
		return
	}
	for _, ev := range mbmEvents {
		if !contains(e.monFeatures(), ev) {
			continue
		}
		for d := 0; d < e.p.L3.Domains; d++ {
			_ = e.assign(g, d, ev, true) // ENOSPC: left unassigned
		}
	}
}

// perDomain prints "id=v;id=v" over the L3 domains.
func (e *Emulator) perDomain(f func(d int) string) string {
	ids := e.p.L3IDs()
	parts := make([]string, len(ids))
	for d, id := range ids {
		parts[d] = fmt.Sprintf("%d=%s", id, f(d))
	}
	return strings.Join(parts, ";") + "\n"
}

// readAssignMode prints info/L3_MON/mbm_assign_mode: the modes, the active one in [].
func (e *Emulator) readAssignMode() string {
	var b strings.Builder
	for _, m := range []string{"mbm_event", "default"} {
		if m == e.assignMode {
			fmt.Fprintf(&b, "[%s]\n", m)
		} else {
			fmt.Fprintf(&b, "%s\n", m)
		}
	}
	return b.String()
}

// writeAssignMode switches between mbm_event and default. A switch frees every counter
// (groups read Unassigned until assigned again) and resets all MBM counts.
func (e *Emulator) writeAssignMode(buf string) error {
	e.cmd()
	m := strings.TrimSuffix(buf, "\n")
	if m != "mbm_event" && m != "default" {
		e.status("Unsupported assign mode '%s'", m) // patch
		return syscall.EINVAL
	}
	if m == e.assignMode {
		return nil
	}
	e.assignMode = m
	for _, g := range e.sortedCtrls() {
		for _, x := range append([]*group{g}, sortedMons(g)...) {
			x.cntr = nil
		}
	}
	e.mon.total, e.mon.local = map[rd]uint64{}, map[rd]uint64{}
	e.gen++
	return nil
}

func (e *Emulator) writeOnMkdir(buf string) error {
	v, ok := kstrtoul(buf, 10)
	if !ok || v > 1 {
		return syscall.EINVAL
	}
	e.onMkdir = v == 1
	return nil
}

// readAssignments prints a group's mbm_L3_assignments: per event, per domain "e"
// (a counter) or "_" (none).
func (e *Emulator) readAssignments(g *group) string {
	var b strings.Builder
	for _, ev := range mbmEvents {
		if !contains(e.monFeatures(), ev) {
			continue
		}
		b.WriteString(ev + ":")
		b.WriteString(e.perDomain(func(d int) string {
			if e.assigned(g, d, ev) {
				return "e"
			}
			return "_"
		}))
	}
	return b.String()
}

// writeAssignments parses "event:id=e;id=_" lines ("*" for every domain) and applies
// them in order; a failure leaves the earlier assignments in place, as the kernel's
// line-by-line processing does.
func (e *Emulator) writeAssignments(g *group, buf string) error {
	e.cmd()
	if !e.countersOn() {
		e.status("mbm_event counter assignment mode is not enabled") // patch
		return syscall.EINVAL
	}
	for _, line := range strings.Split(strings.TrimSuffix(buf, "\n"), "\n") {
		ev, rest, ok := strings.Cut(line, ":")
		if !ok || !contains(mbmEvents, ev) || !contains(e.monFeatures(), ev) {
			e.status("Invalid event name %s", ev) // patch
			return syscall.EINVAL
		}
		for _, tok := range strings.Split(rest, ";") {
			id, st, ok := strings.Cut(tok, "=")
			if !ok || (st != "e" && st != "_") {
				e.status("Invalid assignment %s", tok) // patch
				return syscall.EINVAL
			}
			var doms []int
			if id == "*" {
				for d := 0; d < e.p.L3.Domains; d++ {
					doms = append(doms, d)
				}
			} else {
				n, err := strconv.Atoi(id)
				d := indexOf(e.p.L3IDs(), n)
				if err != nil || d < 0 {
					e.status("Invalid domain id %s", id) // patch
					return syscall.EINVAL
				}
				doms = []int{d}
			}
			for _, d := range doms {
				if err := e.assign(g, d, ev, st == "e"); err != nil {
					e.status("Failed to allocate counter for %s in domain %d", ev, e.p.L3IDs()[d]) // patch
					return err
				}
			}
		}
	}
	e.gen++
	return nil
}

func indexOf(l []int, x int) int {
	for i, v := range l {
		if v == x {
			return i
		}
	}
	return -1
}

// readBMEC prints info/L3_MON/<event>_config: "id=0xVV" per domain.
func (e *Emulator) readBMEC(event string) string {
	return e.perDomain(func(d int) string { return fmt.Sprintf("0x%02x", e.bmec[event][d]) })
}

// writeBMEC is mon_config_write: "id=val;id=val". A changed value resets the counters
// of every RMID and both events on that domain, and their next read is Unavailable
// (the hardware sets the Unavailable bit, resctrl.rst).
func (e *Emulator) writeBMEC(event, buf string) error {
	e.cmd()
	for _, tok := range strings.Split(strings.TrimSuffix(buf, "\n"), ";") {
		id, val, ok := strings.Cut(tok, "=")
		n, err := strconv.Atoi(strings.TrimSpace(id))
		if !ok || err != nil {
			e.status("Missing '=' or non-numeric domain id")
			return syscall.EINVAL
		}
		d := indexOf(e.p.L3IDs(), n)
		if d < 0 {
			e.status("Invalid domain id %d", n) // the kernel: -EINVAL for an unknown id
			return syscall.EINVAL
		}
		v, ok := kstrtoul(strings.TrimSpace(val), 16)
		if !ok {
			e.status("Non-numeric event configuration value %s", val)
			return syscall.EINVAL
		}
		if v&^bmecValid != 0 {
			e.status("Invalid event configuration: max valid mask is 0x%02x", bmecValid)
			return syscall.EINVAL
		}
		if e.bmec[event][d] == uint32(v) {
			continue
		}
		e.bmec[event][d] = uint32(v)
		n2 := e.snc()
		for r := 0; r < e.p.Mon.NumRMIDs; r++ {
			for _, ev := range mbmEvents {
				e.mon.unavail[unavailKey{r, d, ev}] = true
			}
			for k := 0; k < n2; k++ {
				delete(e.mon.total, rd{r, d*n2 + k})
				delete(e.mon.local, rd{r, d*n2 + k})
			}
		}
	}
	e.gen++
	return nil
}

// ioAllocCLOSID is the CLOSID I/O allocation takes: the highest of the L3 resource
// (halved under CDP, where CODE and DATA share it).
func (e *Emulator) ioAllocCLOSID() int {
	n := e.p.L3.NumCLOSIDs
	if e.p.CDP {
		n /= 2
	}
	return n - 1
}

func (e *Emulator) readIOAlloc() string {
	if e.ioAlloc {
		return "enabled\n"
	}
	return "disabled\n"
}

// writeIOAlloc enables ("1") or disables ("0") I/O allocation. Enabling needs the
// highest CLOSID free and starts io_alloc_cbm at every bit no exclusive group holds.
func (e *Emulator) writeIOAlloc(buf string) error {
	e.cmd()
	v, ok := kstrtoul(buf, 10)
	if !ok || v > 1 {
		return syscall.EINVAL
	}
	on := v == 1
	if on == e.ioAlloc {
		return nil
	}
	if on {
		c := e.ioAllocCLOSID()
		if c < len(e.used) && e.used[c] {
			name := "default"
			if g := e.groupByClosid(c); g != nil && g.name != "" {
				name = g.name
			}
			e.status("CLOSID (ctrl_hw_id) %d for io_alloc is used by %s group", c, name) // patch
			return syscall.ENOSPC
		}
		if c < len(e.used) {
			e.used[c] = true
		}
		full := uint32(cbm.Full(e.p.L3.CBMLen))
		e.ioCBM = make([]uint32, e.p.L3.Domains)
		for d := range e.ioCBM {
			excl := uint32(0)
			for _, s := range e.schemas {
				if s.res != "L3" {
					continue
				}
				for _, g := range e.sortedCtrls() {
					if g.mode == "exclusive" {
						excl |= g.cfg[s.name][d]
					}
				}
			}
			e.ioCBM[d] = full &^ excl
			if e.ioCBM[d] == 0 {
				e.ioCBM[d] = full
			}
		}
	} else {
		if c := e.ioAllocCLOSID(); c < len(e.used) {
			e.used[c] = false
		}
		e.ioCBM = nil
	}
	e.ioAlloc = on
	e.gen++
	return nil
}

func (e *Emulator) readIOAllocCBM() (string, error) {
	if !e.ioAlloc {
		e.cmd()
		e.status("io_alloc is not enabled")
		return "", syscall.EINVAL
	}
	return e.perDomain(func(d int) string {
		if e.p.Padded {
			return fmt.Sprintf("%0*x", (e.p.L3.CBMLen+3)/4, e.ioCBM[d])
		}
		return fmt.Sprintf("%x", e.ioCBM[d])
	}), nil
}

// writeIOAllocCBM sets io_alloc_cbm: "id=mask;…" or "*=mask" for every domain, each
// mask checked like a schemata mask (cbm_validate). Under CDP the value applies to
// both L3CODE and L3DATA (one CLOSID).
func (e *Emulator) writeIOAllocCBM(buf string) error {
	e.cmd()
	if !e.ioAlloc {
		e.status("io_alloc is not enabled")
		return syscall.EINVAL
	}
	s := e.schemas[0] // L3, or L3CODE under CDP
	next := append([]uint32(nil), e.ioCBM...)
	for _, tok := range strings.Split(strings.TrimSuffix(buf, "\n"), ";") {
		id, val, ok := strings.Cut(tok, "=")
		if !ok {
			e.status("Missing '=' or non-numeric domain id")
			return syscall.EINVAL
		}
		v, ok := e.cbmValidate(s, strings.TrimSpace(val))
		if !ok {
			return syscall.EINVAL
		}
		if strings.TrimSpace(id) == "*" {
			for d := range next {
				next[d] = v
			}
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(id))
		d := indexOf(e.p.L3IDs(), n)
		if err != nil || d < 0 {
			e.status("Missing '=' or non-numeric domain id")
			return syscall.EINVAL
		}
		next[d] = v
	}
	e.ioCBM = next
	e.gen++
	return nil
}

// ioBits returns the io_alloc mask of L3 domain index d (0 when disabled).
func (e *Emulator) ioBits(s *schema, d int) uint32 {
	if !e.ioAlloc || s.res != "L3" {
		return 0
	}
	return e.ioCBM[d]
}
