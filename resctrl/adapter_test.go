package resctrl_test

import (
	"reflect"
	"testing"

	"colo/resctrl"
	"colo/resctrl/emu"
)

func TestAdapter(t *testing.T) {
	for _, prof := range []string{"intel", "intel-cdp", "amd"} {
		e, err := emu.NewNamed(prof, emu.Options{PIDExists: func(p int) bool { return p > 0 && p < 1000 }})
		if err != nil {
			t.Fatal(err)
		}
		a, err := resctrl.NewAdapter(resctrl.New(e.FS(), resctrl.Options{AllowDefault: true}), "/emu")
		if err != nil {
			t.Fatal(err)
		}
		g := a.Prefix() + "j1"
		if err := a.CreateGroup(g); err != nil {
			t.Fatal(err)
		}
		if err := a.CreateGroup(a.MonPath(g, g)); err != nil {
			t.Fatal(err)
		}
		mb := 30
		if prof == "amd" {
			mb = 16
		}
		if err := a.SetSchemata(g, 1, 0x0f0, mb); err != nil {
			t.Fatalf("%s: %v", prof, err)
		}
		mask, gotMB, err := a.ReadSchemata(g, 1)
		if err != nil || mask != 0x0f0 || gotMB != mb {
			t.Fatalf("%s: read back %x %d %v", prof, mask, gotMB, err)
		}
		st, _ := e.State().Group(g)
		if prof == "intel-cdp" && (st.Schemata["L3CODE"][1] != 0x0f0 || st.Schemata["L3DATA"][1] != 0x0f0) {
			t.Fatalf("CDP halves %+v", st.Schemata)
		}
		// system/default may be shrunk; its MB is left alone with mba 0
		if err := a.SetSchemata("", 1, 0xf00, 0); err != nil {
			t.Fatalf("%s: default group: %v", prof, err)
		}
		if m, dmb, _ := a.ReadSchemata("", 1); m != 0xf00 || dmb != map[string]int{"intel": 100, "intel-cdp": 100, "amd": 2048}[prof] {
			t.Fatalf("%s: default %x %d", prof, m, dmb)
		}
		// exited threads are skipped and counted
		gone, err := a.AddTasks(g, []int{5, 5000, 6})
		if err != nil || gone != 1 {
			t.Fatalf("%s: AddTasks gone=%d %v", prof, gone, err)
		}
		if ts, _ := a.Tasks(g); !reflect.DeepEqual(ts, []int{5, 6}) {
			t.Fatalf("%s: tasks %v", prof, ts)
		}
		if _, err := a.AddTasks(a.MonPath(g, g), []int{6}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.AddTasks("", []int{5}); err != nil {
			t.Fatalf("back to system/default: %v", err)
		}
		if occ, tot, loc, err := a.MonData(a.MonPath(g, g)); err != nil || occ != 0 || tot != 0 || loc != 0 {
			t.Fatalf("MonData %d %d %d %v", occ, tot, loc, err)
		}
		// other agents' groups stay off limits
		if err := e.Mkdir("theirs"); err != nil {
			t.Fatal(err)
		}
		if err := a.SetSchemata("theirs", 0, 1, 0); err == nil {
			t.Fatal("adapter wrote another agent's group")
		}
		removed, err := a.Reconcile()
		if err != nil || !reflect.DeepEqual(removed, []string{g, a.MonPath(g, g)}) || !a.Exists("theirs") {
			t.Fatalf("%s: reconcile %v %v", prof, removed, err)
		}
	}
}
