package emu

import (
	"errors"
	"syscall"
	"testing"

	"colo/cbm"
)

// FuzzSchemataWrite drives the kernel-order schemata parser with arbitrary writes on an
// Intel and an AMD profile: no panics, a rejected write is EINVAL and changes nothing,
// an accepted one leaves a schemata file that parses back to valid masks.
func FuzzSchemataWrite(f *testing.F) {
	for _, s := range []string{"L3:0=f\n", "L3:0=f7\n", "L3:0=1;0=1\n", "MB:0=15\n", "L3:0=3\nMB:0=5\n", "L3:\n", "\n", "L3:0=0x3;1=fff\n", "MB:0= 50 \n", "SMBA:0=16\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, prof := range []string{"intel", "amd-smba", "intel-cdp"} {
			e, err := NewNamed(prof, Options{})
			if err != nil {
				t.Fatal(err)
			}
			fs := e.FS()
			if err := fs.Mkdir("g"); err != nil {
				t.Fatal(err)
			}
			before, _ := fs.ReadFile("g/schemata")
			err = fs.WriteFile("g/schemata", []byte(s))
			after, _ := fs.ReadFile("g/schemata")
			if err != nil {
				if !errors.Is(err, syscall.EINVAL) && !(len(s) > pageSize && errors.Is(err, syscall.E2BIG)) {
					t.Fatalf("%s: %q: errno %v", prof, s, err)
				}
				if string(before) != string(after) {
					t.Fatalf("%s: rejected %q changed schemata %q -> %q", prof, s, before, after)
				}
				continue
			}
			st := e.State()
			g, _ := st.Group("g")
			p := e.Profile()
			for name, vals := range g.Schemata {
				for _, v := range vals {
					if (name == "L3" || name == "L3CODE" || name == "L3DATA") && uint64(v) > uint64(1)<<uint(p.L3.CBMLen)-1 {
						t.Fatalf("%s: %q stored mask %x beyond cbm_mask", prof, s, v)
					}
					if (name == "L3" || name == "L3CODE" || name == "L3DATA") && !p.L3.Sparse && !cbm.Mask(v).Contiguous() {
						t.Fatalf("%s: %q stored non-contiguous %x", prof, s, v)
					}
				}
			}
		}
	})
}

// FuzzCPUMask: the cpus/cpus_list parsers never panic and never set a CPU beyond n.
func FuzzCPUMask(f *testing.F) {
	for _, s := range []string{"f\n", "ffffffff,ffffffff", "0-3,5\n", "", ",", "1-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range []int{4, 32, 40} {
			if m, ok := parseMask(s, n); ok {
				for _, c := range m.list() {
					if c >= n {
						t.Fatalf("mask %q set CPU %d of %d", s, c, n)
					}
				}
				if again, ok := parseMask(formatMask(m, n), n); !ok || formatMask(again, n) != formatMask(m, n) {
					t.Fatalf("mask %q: %q does not round trip", s, formatMask(m, n))
				}
			}
			if m, ok := parseList(s, n); ok {
				if again, ok := parseList(formatList(m), n); !ok || formatList(again) != formatList(m) {
					t.Fatalf("list %q: %q does not round trip", s, formatList(m))
				}
			}
		}
	})
}
