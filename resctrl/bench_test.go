package resctrl_test

import (
	"testing"

	"colo/internal/testenv"
	"colo/resctrl"
	"colo/resctrl/emu"
)

// benchRoundTrip writes one schemata line and reads the schemata back.
func benchRoundTrip(b *testing.B, c *resctrl.Client) {
	if err := c.CreateGroup("colo.b"); err != nil {
		b.Fatal(err)
	}
	masks := []uint64{0x00f, 0x0f0, 0xf00}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := masks[i%3]
		if err := c.SetSchemata("colo.b", resctrl.Schemata{}.Set("L3", 0, m)); err != nil {
			b.Fatal(err)
		}
		s, err := c.Schemata("colo.b")
		if err != nil {
			b.Fatal(err)
		}
		if v, _ := s.Get("L3", 0); v != m {
			b.Fatalf("read back %x want %x", v, m)
		}
	}
}

func BenchmarkRoundTripInProcess(b *testing.B) {
	e, _ := emu.NewNamed("intel", emu.Options{})
	benchRoundTrip(b, resctrl.New(e.FS(), resctrl.Options{}))
}

func BenchmarkRoundTripFUSE(b *testing.B) {
	testenv.Need(b, "FUSE (/dev/fuse and a mount as root; apt-get install fuse3)", emu.FUSEAvailable())
	e, _ := emu.NewNamed("intel", emu.Options{})
	dir := b.TempDir()
	m, err := emu.Mount(e, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Unmount()
	benchRoundTrip(b, resctrl.Open(dir, resctrl.Options{}))
}
