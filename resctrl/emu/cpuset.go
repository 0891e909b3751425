package emu

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"colo/machine"
)

// cpuset is a bitmap of logical CPUs.
type cpuset []uint64

func newCPUSet(n int) cpuset { return make(cpuset, (n+63)/64) }

func (s cpuset) has(i int) bool { return i >= 0 && i/64 < len(s) && s[i/64]&(1<<uint(i%64)) != 0 }
func (s cpuset) set(i int)      { s[i/64] |= 1 << uint(i%64) }

func (s cpuset) clone() cpuset { return append(cpuset(nil), s...) }

func (s cpuset) empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

// andNot returns s &^ o.
func (s cpuset) andNot(o cpuset) cpuset {
	r := s.clone()
	for i := range r {
		if i < len(o) {
			r[i] &^= o[i]
		}
	}
	return r
}

func (s cpuset) orIn(o cpuset) {
	for i := range s {
		if i < len(o) {
			s[i] |= o[i]
		}
	}
}

func (s cpuset) clearIn(o cpuset) {
	for i := range s {
		if i < len(o) {
			s[i] &^= o[i]
		}
	}
}

func (s cpuset) list() []int {
	var out []int
	for wi, w := range s {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			out = append(out, wi*64+b)
			w &^= 1 << uint(b)
		}
	}
	return out
}

// formatMask prints s like the kernel's "%*pb": hex, 32-bit chunks separated by commas,
// the first chunk zero-padded to the width of the remaining bits.
func formatMask(s cpuset, n int) string {
	nchunks := (n + 31) / 32
	var b strings.Builder
	for c := nchunks - 1; c >= 0; c-- {
		var v uint64
		for i := 0; i < 32; i++ {
			if s.has(c*32 + i) {
				v |= 1 << uint(i)
			}
		}
		width := 8
		if c == nchunks-1 {
			rem := n - c*32
			width = (rem + 3) / 4
		}
		fmt.Fprintf(&b, "%0*x", width, v)
		if c > 0 {
			b.WriteByte(',')
		}
	}
	return b.String()
}

// formatList prints s like the kernel's "%*pbl": ranges such as 0-3,8.
func formatList(s cpuset) string {
	l := s.list()
	var parts []string
	for i := 0; i < len(l); {
		j := i
		for j+1 < len(l) && l[j+1] == l[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(l[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", l[i], l[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// parseMask parses a hex CPU mask (bitmap_parse): comma-separated chunks of at most 8
// hex digits, most significant first. Bits at or above n are an error. Trailing commas and
// spaces are skipped as the kernel's bitmap_find_region_reverse does (lib/bitmap-str.c):
// pqos writes "01," to a group's cpus file.
func parseMask(str string, n int) (cpuset, bool) {
	str = strings.TrimRight(strings.TrimSuffix(str, "\n"), ", ")
	s := newCPUSet(n)
	if str == "" {
		return s, true
	}
	chunks := strings.Split(str, ",")
	pos := 0
	for i := len(chunks) - 1; i >= 0; i-- {
		c := chunks[i]
		if c == "" || len(c) > 8 {
			return nil, false
		}
		v, err := strconv.ParseUint(c, 16, 32)
		if err != nil {
			return nil, false
		}
		for b := 0; b < 32; b++ {
			if v&(1<<uint(b)) != 0 {
				if pos+b >= n {
					return nil, false
				}
				s.set(pos + b)
			}
		}
		pos += 32
	}
	return s, true
}

// parseList parses a CPU list (bitmap_parselist): "0-3,5" (machine.ParseCPUList). Numbers
// at or above n fail.
func parseList(str string, n int) (cpuset, bool) {
	cpus, err := machine.ParseCPUList(strings.TrimSuffix(str, "\n"))
	if err != nil {
		return nil, false
	}
	s := newCPUSet(n)
	for _, c := range cpus {
		if c >= n {
			return nil, false
		}
		s.set(c)
	}
	return s, true
}
