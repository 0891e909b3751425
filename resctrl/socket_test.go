package resctrl_test

import (
	"testing"

	"colo/internal/machinetest"
	"colo/machine"
	"colo/resctrl"
	"colo/resctrl/emu"
)

func TestSocketAllocation(t *testing.T) {
	icx := machinetest.Get(t, "icx-4314-2s")
	epyc := machinetest.Get(t, "epyc-7543")
	if d, err := resctrl.SocketDomains(icx, 1); err != nil || len(d) != 1 || d[0] != 1 {
		t.Fatalf("icx socket 1: %v %v", d, err)
	}
	if d, err := resctrl.SocketDomains(epyc, 0); err != nil || len(d) != 8 || d[7] != 7 {
		t.Fatalf("epyc socket 0: %v %v", d, err)
	}
	if _, err := resctrl.SocketDomains(icx, 2); err == nil {
		t.Fatal("socket 2 of a 2-socket machine accepted")
	}
	// the schemata is accepted by the emulated machine and lands on the right domains
	for _, c := range []struct {
		m      *machine.Profile
		socket int
		mask   uint64
		mb     int
	}{{icx, 1, 0xff0, 50}, {epyc, 0, 0x0f0f, 16}} {
		p, _ := emu.ProfileFromMachine(c.m, "")
		e, _ := emu.New(p, emu.Options{})
		cl := resctrl.New(e.FS(), resctrl.Options{})
		s, err := resctrl.SocketAllocation(c.m, c.socket, c.mask, c.mb)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Apply(resctrl.Change{Group: "colo.j1", Create: true, Schemata: s}); err != nil {
			t.Fatalf("%s: %v", c.m.Name, err)
		}
		g, _ := e.State().Group("colo.j1")
		doms, _ := resctrl.SocketDomains(c.m, c.socket)
		for _, d := range doms {
			if uint64(g.Schemata["L3"][d]) != c.mask || int(g.Schemata["MB"][d]) != c.mb {
				t.Fatalf("%s domain %d: L3 %x MB %d", c.m.Name, d, g.Schemata["L3"][d], g.Schemata["MB"][d])
			}
		}
	}
	if _, err := resctrl.SocketAllocation(icx, 0, 0, 0); err == nil {
		t.Fatal("empty mask on Intel accepted")
	}
	if _, err := resctrl.SocketAllocation(icx, 0, 0x1000, 0); err == nil {
		t.Fatal("13-way mask on a 12-way cache accepted")
	}
	e2378 := machinetest.Get(t, "xeon-e2378")
	if _, err := resctrl.SocketAllocation(e2378, 0, 0xf, 50); err == nil {
		t.Fatal("MB on a machine without MBA accepted")
	}
}
