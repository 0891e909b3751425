package journal

import (
	"slices"
	"testing"

	"colo/machine"
	"colo/resctrl"
	"colo/resctrl/plan"
)

// Groups of a colo from before journals (colo.jN): never removed by Reconcile, counted as
// another agent's by the planner, and removed by RemoveLegacy only when they hold no task.
func TestLegacyGroups(t *testing.T) {
	e, c := mount(t)
	for _, g := range []string{"colo.j3", "colo.j3/mon_groups/colo.j3", "colo.j4", "colo.web", "mon_groups/colo.j5", "colo.j6x"} {
		if err := c.CreateGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SetSchemata("colo.j4", spec(t, "L3:0=3")); err != nil {
		t.Fatal(err)
	}
	if err := c.AddTasks("colo.j4", 5); err != nil {
		t.Fatal(err)
	}
	got, err := Legacy(e.FS())
	if want := []string{"mon_groups/colo.j5", "colo.j3", "colo.j3/mon_groups/colo.j3", "colo.j4"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("Legacy = %v %v, want %v", got, err, want)
	}
	if u, err := Reconcile(e.FS(), t.TempDir(), "/mnt/x", nil); err != nil || len(u) != 0 || !c.Exists("colo.j3") || !c.Exists("colo.j4") {
		t.Fatalf("Reconcile without records did %v %v", u, err)
	}
	// the planner of a current instance sees colo.j4's ways as another agent's
	m, err := machine.Get("icx-4314-2s")
	if err != nil {
		t.Fatal(err)
	}
	var in plan.Input
	ad, err := resctrl.NewAdapter(c, "/mnt/x")
	if err == nil {
		in, err = plan.Read(ad, m, "colo.1-1.", nil, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	if b := plan.Budgets(in); b[0].Foreign&0x3 != 0x3 {
		t.Fatalf("budget %+v: colo.j4's ways 0x3 are not foreign", b)
	}
	removed, kept, err := RemoveLegacy(e.FS())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"colo.j3/mon_groups/colo.j3", "colo.j3", "mon_groups/colo.j5"}; !slices.Equal(removed, want) || kept["colo.j4"] != 1 || len(kept) != 1 {
		t.Fatalf("removed %v kept %v, want %v and colo.j4 (1 task) kept", removed, kept, want)
	}
	if !c.Exists("colo.j4") || !c.Exists("colo.web") || !c.Exists("colo.j6x") || c.Exists("colo.j3") {
		t.Fatal("RemoveLegacy touched the wrong groups")
	}
}
