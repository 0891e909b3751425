package resctrl

import (
	"testing"

	"colo/resctrl/emu"
)

// TestMatchRuncCases: the equivalences container runtimes rely on, as runc's schema
// comparison tests state them (libcontainer/intelrdt/schema_comparison_test.go: order,
// spaces, leading zeros, malformed entries, CDP, unknown lines, empty lines), plus
// colo's own (SMBA decimal, a missing domain, a resource absent from the read).
func TestMatchRuncCases(t *testing.T) {
	for i, c := range []struct {
		want, got string
		match     bool
	}{
		{"MB:0=5000;1=7000", "MB:0=5000;1=7000", true},
		{"MB:1=7000;0=5000", "MB:0=5000;1=7000", true},
		{"L3:0=f0;1=f", "L3:0=f0;1=f", true},
		{"L3:0=f0;1=f;2=e;3=d;4=a", "L3:0=f0;1=f;2=e;3=d;4=a", true},
		{"L3: 0= f0; 1 =   f", "L3:  0 = f0 ;  1 =f", true},
		{"L3:0=f0;1=000f;2=0000", "L3:0=00f0;1=f;2=0", true},
		{"L3: 0= f0; 1 =   000f;", "L3:  0 = 00f0 ;  1 =f;", true},
		{"L3:0=f0;1=f", "L3:  1=f; 0 = 00f0 ;", true},
		{"L3:  =f; 0 = 00f0 ;", "L3:  =f; 0 = 00f0 ;", false},
		{"L3: 1=f; 0 = bar ;", "L3: 1=f; 0 = bar ;", false},
		{"L3: 1=f; 0 = ;", "L3: 1=f; 0 = ;", false},
		{"L3: 1=f=0;", "L3: 1=f=0;", false},
		{"MB:0=5000;1=;", "MB:0=5000;1=;", false},
		{"MB:=5000;1=7000;", "MB:=5000;1=7000;", false},
		{"MB:5000;1=7000", "MB:5000;1=7000", false},
		{"MB:5000=1=7000", "MB:5000=1=7000", false},
		{"L3:0=f0;1=f", "L3:0=f0;1=d", false},
		{"MB:1=7000;0=5000", "MB:1=5000;0=5000", false},
		{"\nMB:0=70;1 = 20\nL3:1=   f ;0 = 00f0;", "L3:1=000f;0= f0\nMB: 0=  70;1=20\n\n", true},
		{"\nMB:0=70;1 = 20\nL3:1=   f ;0 = 00f0;", "L3:1=000e;0= f0\nMB: 0=  70;1=20\n\n", false},
		{"\nMB:0=70;1 = 20\nL3:1=   f ;0 = 00f0;", "L3:1=000f;0= f0\nMB: 0=  50;1=20\n\n", false},
		{"MB:1=7000;0=5000", "L3:0=5000;1=7000", false},
		{"L3DATA:0=e;1=f\nL3CODE:0=f;1=e", "L3DATA:0=e;1=f\nL3CODE:0=f;1=e", true},
		{"L3DATA:0=e;1=f\nL3CODE:0=f;1=e", "L3DATA:0=e;1=f\nL3CODE:0=a;1=e", false},
		{"L3DATA:0=e;1=3\nL3CODE:0=f;1=e", "L3DATA:0=e;1=f\nL3CODE:0=f;1=e", false},
		{"L3:0=f0;1=f", "L2:0=5000;1=7000\nL3:0=f0;1=f", true},
		{"L3: ; ;;", "L3: ;", true},
		{"MB: ; ;;", "MB: ;", true},
		{"L3: ; ;;", "MB: ;", false},
		{" \n;;", "", true},
		{" ", " ", true},
		// colo's own
		{"SMBA:0=16;2=2048", "  SMBA:2=2048;0=16\n    L3:0=ffff;2=ffff", true},
		{"L3:0=f;2=f", "L3:0=f;2=f;4=f", false},
		{"MB:0=10", "    L3:0=ff", false},
	} {
		err := Match(c.want, c.got)
		if (err == nil) != c.match {
			t.Errorf("case %d: Match(%q, %q) = %v, want match=%v", i, c.want, c.got, err, c.match)
		}
	}
}

// TestMatchEmulatorReadBack: what a client writes matches what every emulator profile
// reads back, padded or not, in the kernel's order or reversed, at its domain ids.
func TestMatchEmulatorReadBack(t *testing.T) {
	for _, name := range emu.ProfileNames() {
		e, err := emu.NewNamed(name, emu.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Mkdir("g"); err != nil {
			t.Fatal(err)
		}
		c := New(e.FS(), Options{AllowDefault: true})
		root, err := c.Schemata("")
		if err != nil {
			t.Fatal(err)
		}
		r := root[0]
		var want Schemata
		for _, dv := range r.Values {
			want = want.Set(r.Resource, dv.Domain, 1)
		}
		if err := e.WriteFile("g/schemata", []byte(want.String())); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, _ := e.ReadFile("g/schemata")
		if err := Match(want.String(), string(got)); err != nil {
			t.Fatalf("%s: %v\nwrote %q read %q", name, err, want.String(), got)
		}
		if err := Match(Schemata{}.Set(r.Resource, r.Values[0].Domain, 3).String(), string(got)); err == nil {
			t.Fatalf("%s: a different mask matched", name)
		}
	}
}
