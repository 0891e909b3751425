// Package cbm is capacity-bitmask arithmetic, the one place colo computes with L3 way
// masks: a Mask is a set of cache ways (bit i = way i), as resctrl's schemata carry it.
// One file per concept: the mask itself (this file), runs of ways (run.go), placing n
// ways in the free ones (fit.go) and the kernel's validity rules (rules.go). It imports
// nothing of colo, so that the pure core (sched, policy, probe, …) and the I/O edges
// (the resctrl client, the emulator, the platforms) share it.
package cbm

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Mask is a capacity bitmask: bit i set means way i.
type Mask uint64

// Ones is the number of ways of m.
func (m Mask) Ones() int { return bits.OnesCount64(uint64(m)) }

// Low is the lowest way of m (−1 for an empty mask).
func (m Mask) Low() int {
	if m == 0 {
		return -1
	}
	return bits.TrailingZeros64(uint64(m))
}

// String prints m as resctrl and PBBCache do: lower-case hex with 0x.
func (m Mask) String() string { return fmt.Sprintf("%#x", uint64(m)) }

// Parse reads a mask in hex, with or without 0x ("0x600" or "600").
func Parse(s string) (Mask, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0x"), "0X")
	v, err := strconv.ParseUint(t, 16, 64)
	if err != nil || t == "" {
		return 0, fmt.Errorf("mask %q is not a hex bitmask (e.g. 0x600)", s)
	}
	return Mask(v), nil
}
