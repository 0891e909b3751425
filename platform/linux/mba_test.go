package linux

import (
	"testing"

	"colo/internal/machinetest"
	"colo/machine"
)

// An AMD host keeps AMD's MBA (1/8 GB/s, 2048 = unlimited); an AMD host whose resctrl
// mount has Intel's percentage step (the emulator's intel profile on a VM) gets percent,
// so that "unlimited" is written as 100, which the mount accepts, and not 2048.
func TestPercentMBAOnAnIntelMount(t *testing.T) {
	amd := machinetest.Get(t, "epyc-7543")
	m := *amd
	mba := *amd.MBA
	m.MBA = &mba
	if percentMBA(&m) || m.MBA.Unit != machine.MBAEighthGBps || m.MBA.Max != 2048 {
		t.Fatalf("a real AMD MBA was changed: %+v", m.MBA)
	}
	m.MBA.Min, m.MBA.Gran = 10, 10 // what detection reads from the emulator's info/MB
	if !percentMBA(&m) || m.MBA.Unit != machine.MBAPercent || m.MBA.Max != 100 || m.MBA.Min != 10 {
		t.Fatalf("the intel mount's MBA on an AMD CPU: %+v", m.MBA)
	}
	icx := machinetest.Get(t, "icx-4314-2s")
	if percentMBA(icx) {
		t.Fatal("an Intel machine was changed")
	}
}
