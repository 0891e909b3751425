package linux

import (
	"testing"

	"colo/internal/machinetest"
	"colo/resctrl"
	"colo/resctrl/emu"
)

// Issue #26 item 7: an administrator's exclusive group on the top ways. Asking
// system/default for every way leaves out the exclusive ways (before: the kernel
// refused the write, "overlaps with exclusive group", retried every tick, and
// system/default kept what it had); asking only for exclusive ways gives it what nobody
// holds exclusively.
func TestDefaultMaskAroundExclusiveGroup(t *testing.T) {
	e := newEnv(t)
	em, err := emu.NewNamed("intel", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := resctrl.New(em.FS(), resctrl.Options{AllowDefault: true, AllowForeign: true})
	spec := func(s string) resctrl.Schemata {
		sc, err := resctrl.ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	if err := c.SetSchemata("", spec("L3:0=0ff;1=0ff")); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(resctrl.Change{Group: "excl", Create: true, Schemata: spec("L3:0=f00;1=f00"), ExclusiveAfter: true}); err != nil {
		t.Fatal(err)
	}
	ad, err := resctrl.NewAdapter(resctrl.New(em.FS(), resctrl.Options{AllowDefault: true}), "emu:intel")
	if err != nil {
		t.Fatal(err)
	}
	if x, err := ad.ExclusiveWays(0); err != nil || x != 0xf00 {
		t.Fatalf("ExclusiveWays = %#x, %v; want 0xf00", x, err)
	}
	o := e.options(ad)
	o.Machine = machinetest.Get(t, "icx-4314-2s") // 12 ways, as the emulator's intel profile
	pf := newPlatform(t, parseBench(t, smokeYAML), o)
	defer pf.Close()
	full := pf.m.FullMask()
	for _, c := range []struct{ ask, want uint64 }{{full, full &^ 0xf00}, {0xf00, full &^ 0xf00}, {0x0f0, 0x0f0}} {
		if err := pf.SetDefaultMask(0, c.ask); err != nil {
			t.Fatalf("SetDefaultMask(%#x): %v", c.ask, err)
		}
		if m, _, err := ad.ReadSchemata("", 0); err != nil || m != c.want {
			t.Errorf("asked %#x: system/default %#x (%v), want %#x", c.ask, m, err, c.want)
		}
	}
}
