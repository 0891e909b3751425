package resctrl_test

import (
	"testing"

	"colo/internal/emutest"
	"colo/resctrl"
	"colo/resctrl/emu"
)

// overFUSE mounts a fresh emulator and gives a client on the mount (plain OS files).
func overFUSE(t *testing.T, profile string) world {
	e, dir := emutest.MountNamed(t, profile, emu.Options{PIDExists: func(p int) bool { return p > 0 && p < 100000 }})
	fs := resctrl.OSFS{Root: dir}
	return world{c: resctrl.New(fs, resctrl.Options{}), e: e, fs: fs}
}

func TestClientFUSE(t *testing.T) {
	emutest.NeedFUSE(t)
	for _, ct := range clientTests {
		t.Run(ct.name, func(t *testing.T) { ct.run(t, overFUSE) })
	}
}
