package resctrl_test

import (
	"testing"

	"colo/internal/emutest"
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
	_, dir := emutest.MountNamed(b, "intel", emu.Options{})
	benchRoundTrip(b, resctrl.Open(dir, resctrl.Options{}))
}
