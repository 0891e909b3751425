package sched

import (
	"colo/cbm"
	"colo/machine"
)

// DefaultMask is system/default's L3 mask on one socket when the control groups there
// hold the ways in held: every way no group holds, and on a CPU without sparse-mask
// support (Intel) only the longest contiguous stretch of them (ties: the highest; the
// reserve at the top ways guarantees one exists). Free ways outside that stretch are lost
// to outer fragmentation until a consolidation (seed000.md §6 item 5).
func DefaultMask(m *machine.Profile, held uint64) uint64 {
	free := m.FullMask() &^ held
	if m.CAT.SparseMasks {
		return free
	}
	return uint64(cbm.Mask(free).LongestRun(m.LLC.Ways))
}
