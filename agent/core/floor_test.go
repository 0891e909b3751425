package core

import (
	"fmt"
	"math/bits"
	"testing"
	"time"

	"colo/machine"
	"colo/sched"
)

// The floor's arithmetic: a fifth of 12 ways is 3 (at least 2), a number is taken as
// given, and the floor sits at the top of the administrator's default.
func TestParseFloorAndHostReserve(t *testing.T) {
	m, _ := machine.Get("icx-4314-2s")
	ways := m.LLC.Ways
	for _, c := range []struct {
		spec string
		want int
	}{{"20%", max(2, (ways+4)/5)}, {"1%", 2}, {"3", 3}} {
		if n, err := ParseFloor(c.spec, ways); err != nil || n != c.want {
			t.Errorf("ParseFloor(%q, %d) = %d, %v; want %d", c.spec, ways, n, err, c.want)
		}
	}
	for _, bad := range []string{"0", fmt.Sprint(ways), "100%", "x", "-1"} {
		if _, err := ParseFloor(bad, ways); err == nil {
			t.Errorf("ParseFloor(%q) accepted", bad)
		}
	}
	admin := m.FullMask() >> 4 // the administrator keeps the top 4 ways out of system/default
	region, reserve := HostReserve(m, admin, 3)
	if region != admin&^(admin>>3) || reserve != 4+3 {
		t.Fatalf("HostReserve(%#x, 3) = %#x, %d; want the top 3 ways of the default and reserve 7", admin, region, reserve)
	}
}

// Issue #26 item 11: with containers allocated, system/default keeps the floor (the
// top ways of the administrator's default) and never a way the administrator excluded;
// with none it is the administrator's default as it was. Before, any allocation left
// system/default one way (the policy's reserve of 1), and with no container the agent
// wrote the whole cache over the administrator's narrower default.
func TestSystemDefaultKeepsTheFloor(t *testing.T) {
	m, _ := machine.Get("icx-4314-2s")
	admin := m.FullMask() >> 2
	floor, _ := ParseFloor(DefaultFloor, m.LLC.Ways)
	hostWays, reserve := HostReserve(m, admin, floor)
	cfg := sched.DefaultConfig()
	cfg.RDT = true
	cfg.ReserveWays = max(cfg.ReserveWays, reserve)
	s, err := sched.New("static-cat", sched.Env{Machine: m, Config: cfg, IPCEUnavailable: "test: no PMU"})
	if err != nil {
		t.Fatal(err)
	}
	c := New(m, s)
	c.SetHost(admin, reserve)
	p := c.Tick(time.Second)
	for sock, d := range p.Default {
		if d != admin {
			t.Errorf("socket %d: no container, system/default %#x, want the administrator's %#x", sock, d, admin)
		}
	}
	for i := 0; i < 6; i++ {
		c.Add(Container{ID: fmt.Sprint(i), Name: fmt.Sprint("prio", i), Labels: map[string]string{LabelClass: "priority"}}, 0)
	}
	c.Add(Container{ID: "s", Name: "static", Labels: map[string]string{LabelLLCWays: "4"}}, 0)
	allocated := 0
	for i := 2; i <= 5; i++ {
		p = c.Tick(time.Duration(i) * time.Second)
	}
	for _, tg := range p.Targets {
		if tg.Mask != 0 {
			allocated++
			if d := p.Default[tg.Socket]; d&tg.Mask != 0 && tg.Mask&hostWays != 0 {
				t.Errorf("a container's mask %#x holds floor ways %#x", tg.Mask, hostWays)
			}
		}
	}
	if allocated == 0 {
		t.Fatalf("nothing allocated: %+v (log %v)", p.Targets, p.Log)
	}
	for sock, d := range p.Default {
		if bits.OnesCount64(d) < floor || d&^admin != 0 || d&hostWays != hostWays {
			t.Errorf("socket %d: system/default %#x with %d containers allocated: want at least the floor %#x (%d ways) inside the administrator's %#x",
				sock, d, allocated, hostWays, floor, admin)
		}
	}
}
