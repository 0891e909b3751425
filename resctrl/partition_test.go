package resctrl_test

import (
	"errors"
	"testing"

	"colo/resctrl"
	"colo/resctrl/emu"
)

// A static partition goes in whole or not at all: a class the kernel refuses removes the
// groups created before it; a mount whose masks are not the decision's ways is refused
// before anything is written.
func TestApplyPartition(t *testing.T) {
	e, err := emu.NewNamed("intel", emu.Options{PIDExists: func(p int) bool { return p > 0 && p < 1000 }})
	if err != nil {
		t.Fatal(err)
	}
	a, err := resctrl.NewAdapter(resctrl.New(e.FS(), resctrl.Options{}), "/emu")
	if err != nil {
		t.Fatal(err)
	}
	in, err := a.Client().Info()
	if err != nil {
		t.Fatal(err)
	}
	ways := in.Resource("L3").CBMLen
	tasks := map[string][]int{"a": {11, 12}, "b": {13}, "c": {14}}
	classes := []*resctrl.PartitionClass{{Mask: 0x3, Apps: []string{"a", "b"}, Tasks: tasks}, nil, {Mask: 0xc, Apps: []string{"c"}, Tasks: tasks}}
	if _, err := a.ApplyPartition("lfoc+", 0, ways+1, classes); !errors.Is(err, resctrl.ErrCacheMismatch) {
		t.Fatalf("mismatched ways: %v", err)
	}
	bad := []*resctrl.PartitionClass{classes[0], {Mask: 0x5, Apps: []string{"c"}, Tasks: tasks}} // not contiguous
	if _, err := a.ApplyPartition("lfoc+", 0, ways, bad); err == nil || len(e.State().Groups) != 1 {
		t.Fatalf("a refused class left groups %+v (%v)", e.State().Groups, err)
	}
	done, err := a.ApplyPartition("lfoc+", 0, ways, classes)
	if err != nil || len(done) != 2 || done[0].Group != "colo.part-lfocplus-c1" || done[1].Group != "colo.part-lfocplus-c3" || done[0].Tasks != 3 {
		t.Fatalf("applied %+v %v", done, err)
	}
	if g, _ := e.State().Group("colo.part-lfocplus-c3"); g.Schemata["L3"][0] != 0xc || len(g.Tasks) != 1 {
		t.Fatalf("class 3 holds %+v", g)
	}
}
