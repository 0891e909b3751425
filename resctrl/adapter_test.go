package resctrl_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
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

// TestAdapterAddressesDomainsByID: colo's domain index i is the mount's i-th domain id
// (amd-genoa: 0,2,…,14), for the mask, the MB value and read-back; ApplyPartition takes
// the kernel's id and refuses one the mount lacks.
func TestAdapterAddressesDomainsByID(t *testing.T) {
	e, err := emu.NewNamed("amd-genoa", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := resctrl.NewAdapter(resctrl.New(e.FS(), resctrl.Options{}), "emu")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(a.DomainIDs()); got != "[0 2 4 6 8 10 12 14]" {
		t.Fatalf("ids %s", got)
	}
	if err := a.CreateGroup("colo.x"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		if err := a.SetSchemata("colo.x", i, uint64(1)<<i, 100+i); err != nil {
			t.Fatalf("index %d: %v", i, err)
		}
	}
	b, _ := e.ReadFile("colo.x/schemata")
	if !strings.Contains(string(b), "L3:0=0001;2=0002;4=0004;6=0008;8=0010;10=0020;12=0040;14=0080") || !strings.Contains(string(b), "MB:0= 100;2= 101;4= 102") {
		t.Fatalf("schemata %q", b)
	}
	if m, mb, err := a.ReadSchemata("colo.x", 7); err != nil || m != 0x80 || mb != 107 {
		t.Fatalf("read back index 7: %#x %d %v", m, mb, err)
	}
	cl := []*resctrl.PartitionClass{{Mask: 0xf, Apps: []string{"a"}, Tasks: map[string][]int{"a": {}}}}
	if _, err := a.ApplyPartition("ucp", 14, 16, cl); err != nil {
		t.Fatal(err)
	}
	if b, _ := e.ReadFile("colo.part-ucp-c1/schemata"); !strings.Contains(string(b), "14=000f") {
		t.Fatalf("partition on id 14: %q", b)
	}
	if _, err := a.ApplyPartition("ucp", 1, 16, cl); err == nil || !strings.Contains(err.Error(), "no L3 domain 1") {
		t.Fatalf("id 1: %v", err)
	}
}

// TestAdapterNeverReadsUnassignedAsZero: on amd-abmc, a group whose counters were taken
// away reads ErrNotCounted (with its occupancy), not 0 B; with its counter back it
// reads the traffic since the assignment.
func TestAdapterNeverReadsUnassignedAsZero(t *testing.T) {
	e, err := emu.NewNamed("amd-abmc", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := resctrl.NewAdapter(resctrl.New(e.FS(), resctrl.Options{}), "emu")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CreateGroup("colo.g"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddTasks("colo.g", []int{42}); err != nil {
		t.Fatal(err)
	}
	e.SetSource(emu.SourceFunc(func(pid, dom int) emu.Sample {
		return emu.Sample{Footprint: 4096, TotalBytes: 1000, LocalBytes: 500, CPU: -1}
	}))
	if err := e.WriteFile("colo.g/mbm_L3_assignments", []byte("mbm_total_bytes:*=_\n")); err != nil {
		t.Fatal(err)
	}
	e.Tick()
	occ, tot, _, err := a.MonData("colo.g")
	if !errors.Is(err, resctrl.ErrNotCounted) || tot != 0 || occ != 8*4096 {
		t.Fatalf("unassigned: occ %d tot %d err %v", occ, tot, err)
	}
	if err := e.WriteFile("colo.g/mbm_L3_assignments", []byte("mbm_total_bytes:*=e\n")); err != nil {
		t.Fatal(err)
	}
	e.Tick()
	if _, tot, loc, err := a.MonData("colo.g"); err != nil || tot != 8*1000 || loc != 2*8*500 {
		t.Fatalf("assigned: tot %d loc %d err %v", tot, loc, err)
	}
}
