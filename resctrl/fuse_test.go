package resctrl_test

import (
	"testing"

	"colo/internal/testenv"
	"colo/resctrl"
	"colo/resctrl/emu"
)

// overFUSE mounts a fresh emulator and gives a client on the mount (plain OS files).
func overFUSE(t *testing.T, profile string) world {
	testenv.Need(t, "FUSE (/dev/fuse and a mount as root; apt-get install fuse3)", emu.FUSEAvailable())
	e, err := emu.NewNamed(profile, emu.Options{PIDExists: func(p int) bool { return p > 0 && p < 100000 }})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m, err := emu.Mount(e, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	fs := resctrl.OSFS{Root: dir}
	return world{c: resctrl.New(fs, resctrl.Options{}), e: e, fs: fs}
}

func TestClientFUSE(t *testing.T) {
	testenv.Need(t, "FUSE (/dev/fuse and a mount as root; apt-get install fuse3)", emu.FUSEAvailable())
	for _, ct := range clientTests {
		t.Run(ct.name, func(t *testing.T) { ct.run(t, overFUSE) })
	}
}
