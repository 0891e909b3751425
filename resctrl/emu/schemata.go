// The schemata file: formatting, parsing and validation of cache bit masks and
// bandwidth values, the size file and info/*/bit_usage (fs/resctrl/ctrlmondata.c).

package emu

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"colo/cbm"
)

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

// printOrder is the order of schemata and size lines.
func (e *Emulator) printOrder() []*schema {
	if !e.p.ReverseSchemata {
		return e.schemas
	}
	out := slices.Clone(e.schemas)
	slices.Reverse(out)
	return out
}

func (e *Emulator) formatSchemata(g *group) string {
	var b strings.Builder
	switch g.mode {
	case "pseudo-locksetup": // rdtgroup_schemata_show
		for _, s := range e.printOrder() {
			fmt.Fprintf(&b, "%s:uninitialized\n", s.name)
		}
		return b.String()
	case "pseudo-locked":
		if s := e.schemaByName(g.plr.schema); s != nil {
			fmt.Fprintf(&b, "%s:%d=%x\n", s.name, s.ids[g.plr.domain], g.plr.cbm)
		}
		return b.String()
	}
	for _, s := range e.printOrder() {
		if g.closid >= s.closids {
			continue
		}
		fmt.Fprintf(&b, "%*s:", e.nameW, s.name)
		for d, v := range g.cfg[s.name] {
			if d > 0 {
				b.WriteByte(';')
			}
			fmt.Fprintf(&b, "%d=%s", s.ids[d], e.formatValue(s, v))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (e *Emulator) formatSize(g *group) string {
	var b strings.Builder
	if g.mode == "pseudo-locked" { // rdtgroup_size_show: the region's size only
		s := e.schemaByName(g.plr.schema)
		size := s.cache.SizeBytes / uint64(s.cache.CBMLen) * uint64(bits.OnesCount32(g.plr.cbm))
		fmt.Fprintf(&b, "%*s:%d=%d\n", e.nameW, s.name, s.ids[g.plr.domain], size)
		return b.String()
	}
	for _, s := range e.printOrder() {
		fmt.Fprintf(&b, "%*s:", e.nameW, s.name)
		for d, v := range g.cfg[s.name] {
			if d > 0 {
				b.WriteByte(';')
			}
			size := uint64(v)
			if s.isCache() {
				size = s.cache.SizeBytes / uint64(s.cache.CBMLen) * uint64(bits.OnesCount32(v))
			}
			fmt.Fprintf(&b, "%d=%d", s.ids[d], size)
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
		fmt.Fprintf(&b, "%d=", s.ids[d])
		hw := uint32(s.cache.ShareableBits) | e.ioBits(s, d) // I/O allocation is a hardware user
		var sw, excl, pseudo uint32
		for _, g := range e.sortedCtrls() {
			v := g.cfg[s.name][d]
			switch g.mode {
			case "shareable":
				sw |= v
			case "exclusive":
				excl |= v
			case "pseudo-locked":
				if g.plr.schema == s.name && g.plr.domain == d {
					pseudo |= g.plr.cbm
				}
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
			case pseudo&m != 0:
				b.WriteByte('P')
			default:
				b.WriteByte('0')
			}
		}
	}
	b.WriteByte('\n')
	return b.String()
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
	if g.mode == "pseudo-locked" {
		e.status("Resource group is pseudo-locked")
		return syscall.EINVAL
	}
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
	if g.mode == "pseudo-locksetup" {
		// rdtgroup_pseudo_lock_create: the region is the one cache domain given; the
		// group becomes pseudo-locked and frees its CLOSID (closid_free), which the next
		// mkdir may take; the region's bits stay reserved through g.plr
		for _, x := range st {
			if x.s.isCache() {
				g.plr = &plr{schema: x.s.name, domain: x.d, cbm: x.val}
				g.mode = "pseudo-locked"
				e.used[g.closid] = false
				g.closid = noID
				break
			}
		}
		e.gen++
		return nil
	}
	for _, x := range st {
		g.cfg[x.s.name][x.d] = x.val
	}
	e.gen++
	return nil
}

// lockedIn says whether a pseudo-locked region exists on schema s's domain d (one per
// cache instance), and lockedOverlap whether cbm overlaps one.
func (e *Emulator) lockedIn(s *schema, d int) (found bool, bits uint32) {
	for _, o := range e.sortedCtrls() {
		if o.mode == "pseudo-locked" && o.plr.domain == d && e.schemaByName(o.plr.schema).res == s.res {
			found, bits = true, bits|o.plr.cbm
		}
	}
	return found, bits
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
		d := -1
		if domID <= 1<<30 {
			d = s.index(int(domID))
		}
		if d < 0 {
			return syscall.EINVAL // the kernel leaves no message for an unknown domain
		}
		key := fmt.Sprintf("%s/%d", s.name, d)
		mbaSC := s.res == "MB" && e.p.MBAMBps
		if have[key] && !mbaSC {
			e.status("Duplicate domain %d", domID)
			return syscall.EINVAL
		}
		var v uint32
		setup := g.mode == "pseudo-locksetup"
		if setup && !s.isCache() {
			e.status("Cannot pseudo-lock MBA resource")
			return syscall.EINVAL
		}
		if s.isCache() {
			locked, lbits := e.lockedIn(s, d)
			if setup && locked {
				e.status("Pseudo-locked region in hierarchy")
				return syscall.EINVAL
			}
			if v, ok = e.cbmValidate(s, val); !ok {
				return syscall.EINVAL
			}
			if !setup && v&lbits != 0 {
				e.status("CBM overlaps with pseudo-locked region")
				return syscall.EINVAL
			}
			if e.cbmOverlaps(s, d, v, g.closid, true) {
				e.status("Overlaps with exclusive group")
				return syscall.EINVAL
			}
			if (g.mode == "exclusive" || setup) && e.cbmOverlaps(s, d, v, g.closid, false) {
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
		if setup {
			return nil // parse_line: a pseudo-locked region is one domain; the rest is ignored
		}
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
	rules := cbm.Rules{Width: c.CBMLen, MinBits: c.MinCBMBits, Sparse: c.Sparse}
	switch rules.Validate(cbm.Mask(val)) {
	case cbm.Empty, cbm.Wider:
		e.status("Mask out of range")
		return 0, false
	case cbm.NotContiguous:
		e.status("The mask %x has non-consecutive 1-bits", val)
		return 0, false
	case cbm.TooFew:
		e.status("Need at least %d bits in the mask", c.MinCBMBits)
		return 0, false
	}
	v := uint32(val)
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
