package machine

import (
	"strings"
	"testing"
)

// The built-in profiles carry the papers' testbeds: dCat's Xeon E5-2697 v4 has 18 cores
// and a 20-way 45 MB LLC of 2.25 MB ways (seed003.md, headline results); the thesis's
// dual-socket Xeon Silver 4314 has 16 cores per socket and a 12-way L3 (default mask fff,
// seed000.md §4.1); PBBCache's Skylake-SP data set has an 11-way LLC (pbbcache-skylake
// PROVENANCE.md).
func TestBuiltinProfilesMatchThePapers(t *testing.T) {
	for _, c := range []struct {
		name                 string
		sockets, cores, ways int
		bytesPerWay          int64
		fullMask             uint64
	}{
		{"bdw-2697v4", 1, 18, 20, 2304 << 10, 0xfffff},
		{"icx-4314-2s", 2, 16, 12, 2 << 20, 0xfff},
		{"skx-6138", 1, 20, 11, 2560 << 10, 0x7ff},
	} {
		p, err := Get(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if p.Sockets != c.sockets || p.CoresPerSocket != c.cores || p.LLC.Ways != c.ways || p.BytesPerWay() != c.bytesPerWay || p.FullMask() != c.fullMask {
			t.Errorf("%s: %d×%d cores, %d ways of %d bytes, full mask %#x; want %d×%d, %d ways of %d, %#x",
				c.name, p.Sockets, p.CoresPerSocket, p.LLC.Ways, p.BytesPerWay(), p.FullMask(), c.sockets, c.cores, c.ways, c.bytesPerWay, c.fullMask)
		}
	}
	for _, n := range Names() {
		p, err := Get(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", n, err)
		}
		if p.SocketOfCore(p.Cores()-1) != p.Sockets-1 || p.DomainOfCore(p.Cores()-1) != p.LLCDomains()-1 {
			t.Errorf("%s: the last core is not on the last socket/domain", n)
		}
	}
	if _, err := Get("no-such-machine"); err == nil || !strings.Contains(err.Error(), "icx-4314-2s") {
		t.Errorf("an unknown name must list the known ones, got %v", err)
	}
}

// resctrl semantics (anchors.md): Intel rejects bits beyond cbm_mask, fewer than
// min_cbm_bits (1) and non-contiguous masks; AMD accepts sparse masks and, with
// min_cbm_bits 0, the empty mask.
func TestCheckMask(t *testing.T) {
	icx, _ := Get("icx-4314-2s")
	amd, _ := Get("epyc-7543")
	for _, c := range []struct {
		p    *Profile
		mask uint64
		want string
	}{
		{icx, 0xfff, ""},
		{icx, 0x600, ""},
		{icx, 0x1000, "wider"},
		{icx, 0, "min_cbm_bits=1"},
		{icx, 0xf0f, "not contiguous"},
		{amd, 0xf0f, ""},
		{amd, 0, ""},
		{amd, 0x10000, "wider"},
	} {
		err := c.p.CheckMask(c.mask)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s mask %#x: %v, want %q", c.p.Name, c.mask, err, c.want)
		}
	}
}
