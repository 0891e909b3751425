package cbm

import "fmt"

// Rules are a cache's mask rules as resctrl's info/<resource> directory gives them.
type Rules struct {
	Width   int  // cbm_mask's number of bits (the cache's ways)
	MinBits int  // min_cbm_bits
	Sparse  bool // sparse_masks: non-contiguous ways accepted
}

// Violation is why the kernel rejects a mask, in the order it checks.
type Violation int

const (
	Valid Violation = iota
	// Empty: no way set while min_cbm_bits > 0 ("Mask out of range").
	Empty
	// Wider: ways beyond cbm_mask ("Mask out of range").
	Wider
	// NotContiguous: several runs without sparse_masks ("has non-consecutive 1-bits").
	NotContiguous
	// TooFew: the first run is shorter than min_cbm_bits ("Need at least %d bits").
	TooFew
)

// Validate applies the kernel's cbm_validate (fs/resctrl/ctrlmondata.c) to m, in its
// order: out of range (empty while min_cbm_bits > 0, or beyond cbm_mask), then
// non-consecutive ways without sparse_masks, then a first run shorter than min_cbm_bits.
// With min_cbm_bits 0 the empty mask is valid (AMD; anchors.md §4.4).
func (r Rules) Validate(m Mask) Violation {
	switch {
	case r.MinBits > 0 && m == 0:
		return Empty
	case m&^Full(r.Width) != 0:
		return Wider
	case !r.Sparse && !m.Contiguous():
		return NotContiguous
	case m.FirstRun().Ones() < r.MinBits:
		return TooFew
	}
	return Valid
}

// Check is Validate as an error saying why (nil for a valid mask).
func (r Rules) Check(m Mask) error {
	switch r.Validate(m) {
	case Empty:
		return fmt.Errorf("mask %s has no way set; the cache needs at least min_cbm_bits=%d", m, r.MinBits)
	case Wider:
		return fmt.Errorf("mask %s is wider than the %d-way cache (cbm_mask %s)", m, r.Width, Full(r.Width))
	case NotContiguous:
		return fmt.Errorf("mask %s is not contiguous: the cache accepts only one run of ones", m)
	case TooFew:
		return fmt.Errorf("mask %s has a first run of %d ways; the cache needs at least min_cbm_bits=%d", m, m.FirstRun().Ones(), r.MinBits)
	}
	return nil
}
