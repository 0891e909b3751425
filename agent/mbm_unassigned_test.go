package agent

import (
	"errors"
	"testing"

	"colo/resctrl"
	"colo/resctrl/emu"
)

// TestMonDataUnassignedIsNotZero: the agent's counter reader on an ABMC mount says a
// group whose MBM counter is unassigned is not measured (ErrNotCounted), so its tick
// keeps the last reading instead of recording 0 B.
func TestMonDataUnassignedIsNotZero(t *testing.T) {
	e, err := emu.NewNamed("amd-abmc", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewResctrl(resctrl.New(e.FS(), resctrl.Options{Prefix: GroupPrefix("t"), AllowDefault: true}), "emu", false)
	if err != nil {
		t.Fatal(err)
	}
	g := GroupPrefix("t") + "a"
	if err := r.CreateGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := r.MonData(g); err != nil {
		t.Fatalf("assigned on mkdir: %v", err)
	}
	if err := e.WriteFile(g+"/mbm_L3_assignments", []byte("mbm_local_bytes:*=_\n")); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := r.MonData(g); !errors.Is(err, resctrl.ErrNotCounted) {
		t.Fatalf("unassigned local counter read as %v, want ErrNotCounted", err)
	}
}
