package cbm

import "testing"

// The kernel's cbm_validate (fs/resctrl/ctrlmondata.c; anchors.md §4.4): Intel (contiguous,
// min_cbm_bits 1) rejects the empty mask, ways beyond cbm_mask and several runs; AMD
// (sparse_masks, min_cbm_bits 0) accepts sparse and empty masks. min_cbm_bits applies to
// the first run, not to the number of ways.
func TestRulesFollowCbmValidate(t *testing.T) {
	intel := Rules{Width: 11, MinBits: 1}
	amd := Rules{Width: 16, Sparse: true}
	two := Rules{Width: 12, MinBits: 2, Sparse: true}
	for _, c := range []struct {
		r    Rules
		m    Mask
		want Violation
	}{
		{intel, 0x7ff, Valid},
		{intel, 0x600, Valid},
		{intel, 0, Empty},
		{intel, 0x800, Wider},
		{intel, 0x5, NotContiguous},
		{amd, 0x0f0f, Valid},
		{amd, 0, Valid},
		{amd, 0x10000, Wider},
		{two, 0b1011, Valid},  // first run 2 ways
		{two, 0b1101, TooFew}, // 3 ways, but the first run is 1
		{two, 0, Empty},
	} {
		if got := c.r.Validate(c.m); got != c.want {
			t.Errorf("%+v.Validate(%s) = %v, want %v", c.r, c.m, got, c.want)
		}
		if (c.r.Check(c.m) == nil) != (c.want == Valid) {
			t.Errorf("%+v.Check(%s) = %v", c.r, c.m, c.r.Check(c.m))
		}
	}
}
