package alloc_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"colo/machine"
	"colo/resctrl"
	"colo/resctrl/alloc"
	"colo/resctrl/emu"
	"colo/resctrl/plan"
)

const prefix = "colo.t."

// checked wraps the emulated mount: at every ApplyPlan it checks the write-ahead order —
// every group about to be made is already in the journal, every group about to be
// removed still is — and after it, that the journal names every group of the instance.
type checked struct {
	*resctrl.Adapter
	t   *testing.T
	e   *emu.Emulator
	jr  *alloc.Memory
	ops int
}

func (c *checked) ApplyPlan(ops []plan.Op) error {
	c.t.Helper()
	for _, o := range ops {
		if (o.Kind == plan.Mkdir || o.Kind == plan.Rmdir) && !slices.Contains(c.jr.Groups(), o.Group) {
			c.t.Errorf("%v: %s is not in the journal (%v)", o.Kind, o.Group, c.jr.Groups())
		}
	}
	c.ops += len(ops)
	err := c.Adapter.ApplyPlan(ops)
	for _, g := range c.e.State().Groups {
		if strings.HasPrefix(g.Path, prefix) && !slices.Contains(c.jr.Groups(), g.Path) {
			c.t.Errorf("group %s exists but is not in the journal", g.Path)
		}
	}
	return err
}

func setup(t *testing.T, rmids int) (*alloc.Allocator, *checked, *machine.Profile) {
	t.Helper()
	m, err := machine.Get("icx-4314-2s")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := emu.ProfileFromMachine(m, "")
	if err != nil {
		t.Fatal(err)
	}
	if rmids > 0 {
		ep.Mon.NumRMIDs = rmids
	}
	e, err := emu.New(ep, emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ad, err := resctrl.NewAdapter(resctrl.New(e.FS(), resctrl.Options{Prefix: prefix, AllowForeign: true}), "emu:test")
	if err != nil {
		t.Fatal(err)
	}
	c := &checked{Adapter: ad, t: t, e: e, jr: &alloc.Memory{}}
	return alloc.New(alloc.Options{Machine: m, Mount: c, Prefix: prefix, Journal: c.jr}), c, m
}

func TestApplyJournalsBeforeMkdirAndAfterRmdir(t *testing.T) {
	a, c, _ := setup(t, 0)
	for i := range 4 {
		a.Set(plan.Want{Tenant: fmt.Sprintf("t%d", i), Socket: i % 2, Monitor: true})
	}
	if _, err := a.Apply(); err != nil {
		t.Fatal(err)
	}
	a.Update("t0", func(w *plan.Want) { w.Mask = 0x3 })
	a.Update("t1", func(w *plan.Want) { w.Mask = 0x3 << 2 })
	out, err := a.Apply()
	if err != nil || out.Err() != nil {
		t.Fatal(err, out.Err())
	}
	if pl := a.Placement("t0"); pl.Group == "" || pl.Mask != 0x3 || pl.Mon == "" {
		t.Errorf("t0 placed %+v, want a control group with mask 0x3 and a monitoring group", pl)
	}
	if len(c.jr.Groups()) == 0 || c.ops == 0 {
		t.Fatalf("journal %v after %d ops", c.jr.Groups(), c.ops)
	}
	for _, ten := range a.Wants() {
		a.Forget(ten)
	}
	if _, err := a.Apply(); err != nil {
		t.Fatal(err)
	}
	if g := c.jr.Groups(); len(g) != 0 {
		t.Errorf("journal %v after every tenant left, want empty", g)
	}
}

func TestRefusalsAreTypedAndFallBack(t *testing.T) {
	a, _, m := setup(t, 0)
	n := m.LLC.Ways // more distinct masks on one socket than there are CLOSIDs
	for i := range n {
		a.Set(plan.Want{Tenant: fmt.Sprintf("t%02d", i), Socket: 0, Mask: 1 << i, Monitor: true})
	}
	a.Set(plan.Want{Tenant: "bad", Socket: 9, Mask: 0x1})
	out, err := a.Apply()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[plan.RefusalKind]int{}
	for _, r := range out.Refused {
		kinds[r.Kind]++
		w, _ := a.Want(r.Tenant)
		if pl := a.Placement(r.Tenant); w.Mask != pl.Mask {
			t.Errorf("refused %s wants %#x, placed %#x: a refused wish must fall back to its placement", r.Tenant, w.Mask, pl.Mask)
		}
	}
	if kinds[plan.RefusedRules] != 1 || kinds[plan.RefusedCLOSID] == 0 {
		t.Errorf("refusals by kind %v (%v), want one rules refusal and CLOSID refusals", kinds, out.Refused)
	}
	if out.Err() == nil {
		t.Error("Outcome.Err is nil with refusals")
	}
}

// With the RMIDs all held by monitoring groups, a tenant asking for a control group gives
// up its own monitoring group and gets the control group (which then monitors it).
func TestRMIDExhaustionTradesMonitoringForIsolation(t *testing.T) {
	const rmids = 4 // system/default holds one
	a, _, _ := setup(t, rmids)
	for i := range rmids - 1 {
		a.Set(plan.Want{Tenant: fmt.Sprintf("t%d", i), Socket: 0, Monitor: true})
	}
	if out, err := a.Apply(); err != nil || out.Err() != nil {
		t.Fatal(err, out.Err())
	}
	a.Update("t0", func(w *plan.Want) { w.Mask = 0xf })
	out, err := a.Apply()
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Refused) != 0 || !slices.Equal(out.Unmonitored, []string{"t0"}) {
		t.Fatalf("refused %v, unmonitored %v; want t0 to trade its monitoring group", out.Refused, out.Unmonitored)
	}
	if pl := a.Placement("t0"); pl.Group == "" || pl.Mask != 0xf || pl.Mon != "" {
		t.Errorf("t0 placed %+v, want its own control group with 0xf and no monitoring group", pl)
	}
}
