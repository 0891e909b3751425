package cbm

import "testing"

func TestRuns(t *testing.T) {
	if Full(11) != 0x7ff || Full(64) != Mask(^uint64(0)) || Run(3, 2) != 0x18 || Run(5, 0) != 0 {
		t.Error("Full/Run")
	}
	for m, want := range map[Mask]bool{0: true, 0x1: true, 0x1e: true, 0x600: true, 0x1d: false, 0xf0f: false} {
		if m.Contiguous() != want {
			t.Errorf("%s.Contiguous() = %v", m, !want)
		}
	}
	if Mask(0b1101_1100).FirstRun() != 0b0001_1100 || Mask(0).FirstRun() != 0 {
		t.Error("FirstRun")
	}
	if Mask(0b110111110011).LongestRun(12) != 0b000111110000 {
		t.Error("LongestRun")
	}
	// ties go to the highest run (system/default keeps the top ways, next to the reserve)
	if m := Mask(0b111000111).LongestRun(12); m != 0b111000000 {
		t.Errorf("LongestRun tie = %#b", m)
	}
	if Mask(0).LongestRun(12) != 0 || Mask(0xfff).LongestRun(8) != 0xff {
		t.Error("LongestRun of an empty or wider mask")
	}
	if Mask(0).Low() != -1 || Mask(0x1c0).Low() != 6 {
		t.Error("Low")
	}
	if m, err := Mask(0x1c0).LowestWays(2); err != nil || m != 0x0c0 {
		t.Errorf("LowestWays(0x1c0, 2) = %s, %v", m, err)
	}
	for _, bad := range []struct {
		m Mask
		n int
	}{{0x1c0, 4}, {0xc03, 2}, {0, 1}, {0x1c0, 0}} {
		if _, err := bad.m.LowestWays(bad.n); err == nil {
			t.Errorf("%s.LowestWays(%d) succeeded", bad.m, bad.n)
		}
	}
}

func TestParseAndString(t *testing.T) {
	for _, s := range []string{"0x600", "600", " 0X600 "} {
		if m, err := Parse(s); err != nil || m != 0x600 || m.String() != "0x600" {
			t.Errorf("Parse(%q) = %s, %v", s, m, err)
		}
	}
	for _, s := range []string{"", "0x", "zz", "-1"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) succeeded", s)
		}
	}
}

// Runs splits a mask into maximal runs of ways whose union is the mask: lowest first,
// none touching the next (a rect per run in colo report).
func TestRunsOfMask(t *testing.T) {
	type run struct{ lo, hi int }
	for m, want := range map[Mask][]run{
		0:                        nil,
		0x1:                      {{0, 1}},
		0xf0f:                    {{0, 4}, {8, 12}},
		0x5:                      {{0, 1}, {2, 3}},
		Mask(^uint64(0)):         {{0, 64}},
		Mask(1 << 63):            {{63, 64}},
		Mask(0xc000000000000003): {{0, 2}, {62, 64}},
	} {
		var got []run
		var union Mask
		for lo, hi := range m.Runs() {
			got = append(got, run{lo, hi})
			union |= Run(lo, hi-lo)
		}
		if len(got) != len(want) || union != m {
			t.Errorf("%s.Runs() = %v, want %v", m, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s.Runs() = %v, want %v", m, got, want)
			}
		}
	}
	for lo := range Mask(0xff).Runs() { // stopping early
		if lo != 0 {
			t.Errorf("first run at %d", lo)
		}
		break
	}
}
