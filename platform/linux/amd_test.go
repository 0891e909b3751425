package linux

import (
	"testing"

	"colo/internal/machinetest"
	"colo/resctrl"
	"colo/resctrl/emu"
)

// TestAMDSocketWritesEveryCCX runs the platform on the AMD emulator profile (EPYC 7543:
// one socket, 8 CCXs, each its own L3 domain) through the resctrl client in process. A
// per-socket decision must land on all 8 domains of the socket, not only on domain
// "socket number", and Close must restore system/default on all of them.
func TestAMDSocketWritesEveryCCX(t *testing.T) {
	e := newEnv(t)
	m := machinetest.Get(t, "epyc-7543")
	em, err := emu.NewNamed("amd", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ad, err := resctrl.NewAdapter(resctrl.New(em.FS(), resctrl.Options{AllowDefault: true}), "emu:amd")
	if err != nil {
		t.Fatal(err)
	}
	doms, _ := resctrl.SocketDomains(m, 0)
	if len(doms) != 8 {
		t.Fatalf("epyc-7543 socket 0 has domains %v, want 8", doms)
	}
	full := em.State().Groups[0].Schemata["L3"][doms[7]]
	bm := parseBench(t, smokeYAML)
	o := e.options(ad)
	o.Machine = m
	pf := newPlatform(t, bm, o)
	defer pf.Close()
	js := bm.Jobs[0]
	startAllocated(t, pf, js, 0, 0x0ff0, 16, 0x000f)
	st := em.State()
	class := pf.placement(js.ID).Group
	g, ok := st.Group(class)
	if !ok || class == "" {
		t.Fatalf("no control group %q: %+v", class, st.Groups)
	}
	def, _ := st.Group("")
	for _, d := range doms {
		if g.Schemata["L3"][d] != 0x0ff0 || g.Schemata["MB"][d] != 16 {
			t.Errorf("%s domain %d: L3 %#x MB %d, want 0xff0 and 16 on every CCX", class, d, g.Schemata["L3"][d], g.Schemata["MB"][d])
		}
		if def.Schemata["L3"][d] != 0x000f {
			t.Errorf("system/default domain %d: L3 %#x, want 0xf", d, def.Schemata["L3"][d])
		}
	}
	if a, err := pf.ReadAllocation(js.ID); err != nil || a.Mask != 0x0ff0 || a.MBA != 16 {
		t.Errorf("read back %+v %v", a, err)
	}
	// An invalid mask (beyond the 16 ways) is refused and changes no domain.
	if err := pf.SetAllocation(js.ID, 0, 1<<20, 16); err == nil {
		t.Error("a 21-bit mask on a 16-way cache accepted")
	}
	if a, err := pf.ReadAllocation(js.ID); err != nil || a.Mask != 0x0ff0 {
		t.Errorf("after a refused write: %+v %v", a, err)
	}
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	def, _ = em.State().Group("")
	for _, d := range doms {
		if def.Schemata["L3"][d] != full {
			t.Errorf("system/default domain %d not restored: %#x, want %#x", d, def.Schemata["L3"][d], full)
		}
	}
}
