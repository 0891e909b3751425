package sched

import (
	"fmt"
	"math/bits"
	"sort"

	"colo/cbm"
)

// Thesis accountant defaults: system/default keeps 1 way and 10 % memory bandwidth per
// socket (seed000.md §1.4, [repo] systemDefaultReserveWays/systemDefaultReserveMem),
// leaving 11 ways × 2 sockets = 22 allocatable ways on icx-4314-2s.
const (
	DefaultReserveWays = 1
	DefaultReserveMBA  = 10
)

// Group is one exclusive RDT allocation held in the accountant: a contiguous way mask
// on one socket and an MBA share of that socket's budget.
type Group struct {
	Name   string
	Socket int
	Mask   uint64
	MBA    int
}

// Move is one group repacked by consolidation. Its cached lines in the From ways are lost
// to it (seed000.md §2.3 "Consolidation"): LostWays counts the ways it no longer holds.
type Move struct {
	Name     string
	Socket   int
	From, To uint64
	LostWays int
}

// Accountant keeps, per socket, the exclusive cache ways and the additive MBA budget
// committed to groups (thesis RDTAccountant, Listings 4.24–4.25, generalised from two
// sockets to any number). The top ReserveWays ways and ReserveMBA percent of every socket
// stay with system/default. MBA is accounted as an exclusive additive budget
// ([repo] a request fails if used + req > 100 − reserve), as the thesis does, although
// the hardware enforces it only as a throttle. The accountant is pure bookkeeping: it
// never touches resctrl.
type Accountant struct {
	totalWays   int
	reserveWays int
	reserveMBA  int
	sockets     []socketState
	groups      map[string]*Group
}

type socketState struct {
	allocated uint64
	mbaUsed   int
	clos      CLOSBudget // control groups and foreign ways the platform leaves (Limit)
}

// NewAccountant makes an accountant for sockets × totalWays with the given reserve.
func NewAccountant(sockets, totalWays, reserveWays, reserveMBA int) (*Accountant, error) {
	if sockets < 1 || totalWays < 1 || totalWays > 64 {
		return nil, fmt.Errorf("accountant: %d sockets × %d ways is not a machine", sockets, totalWays)
	}
	if reserveWays < 0 || reserveWays >= totalWays {
		return nil, fmt.Errorf("accountant: reserve of %d ways must leave at least one of %d ways allocatable", reserveWays, totalWays)
	}
	if reserveMBA < 0 || reserveMBA >= 100 {
		return nil, fmt.Errorf("accountant: MBA reserve %d%% must be in 0..99", reserveMBA)
	}
	return &Accountant{totalWays: totalWays, reserveWays: reserveWays, reserveMBA: reserveMBA,
		sockets: make([]socketState, sockets), groups: map[string]*Group{}}, nil
}

// Sockets is the number of sockets.
func (a *Accountant) Sockets() int { return len(a.sockets) }

// TotalWays is the number of LLC ways per socket.
func (a *Accountant) TotalWays() int { return a.totalWays }

// AllocatableMask is the ways groups may use on every socket (all but the reserve, which
// is kept at the top ways as in thesis Fig. 4.14: exclusive 0x03f, default 0xfc0).
func (a *Accountant) AllocatableMask() uint64 {
	return uint64(cbm.Full(a.totalWays - a.reserveWays))
}

// MBABudget is the MBA percentage groups may commit per socket.
func (a *Accountant) MBABudget() int { return 100 - a.reserveMBA }

// FreeMask is the allocatable ways of socket s not held by any group nor claimed by
// another agent (Limit).
func (a *Accountant) FreeMask(s int) uint64 {
	return a.AllocatableMask() &^ a.sockets[s].allocated &^ a.sockets[s].clos.Foreign
}

// Limit records what the platform's resctrl mount leaves on socket s (its CLOSBudget):
// at most b.Groups exclusive allocations when the budget is known (each needs a control
// group of its own, CLOSIDs being few; b.Allows) and the ways other agents' groups claim,
// which are never free. Groups already held are kept.
func (a *Accountant) Limit(s int, b CLOSBudget) {
	if s < 0 || s >= len(a.sockets) {
		return
	}
	a.sockets[s].clos = b
}

// groupsLeft says whether socket s can take one more group.
func (a *Accountant) groupsLeft(s int) bool {
	n := 0
	for _, g := range a.groups {
		if g.Socket == s {
			n++
		}
	}
	return a.sockets[s].clos.Allows(n + 1)
}

// AllocatedMask is the union of the groups' ways on socket s.
func (a *Accountant) AllocatedMask(s int) uint64 { return a.sockets[s].allocated }

// FreeWays is the number of free allocatable ways on socket s.
func (a *Accountant) FreeWays(s int) int { return bits.OnesCount64(a.FreeMask(s)) }

// FreeMBA is the uncommitted MBA budget on socket s.
func (a *Accountant) FreeMBA(s int) int { return a.MBABudget() - a.sockets[s].mbaUsed }

// DefaultMask is the mask system/default keeps on socket s: every way no group holds.
func (a *Accountant) DefaultMask(s int) uint64 {
	return uint64(cbm.Full(a.totalWays)) &^ a.sockets[s].allocated
}

// Group returns a copy of the named group.
func (a *Accountant) Group(name string) (Group, bool) {
	g, ok := a.groups[name]
	if !ok {
		return Group{}, false
	}
	return *g, true
}

// Groups returns the groups of socket s ordered by their lowest way.
func (a *Accountant) Groups(s int) []Group {
	var out []Group
	for _, g := range a.groups {
		if g.Socket == s {
			out = append(out, *g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return cbm.Mask(out[i].Mask).Low() < cbm.Mask(out[j].Mask).Low() })
	return out
}

// Fit says whether ways/mba could be allocated on socket s now (contiguous) and after a
// consolidation (enough ways in total).
func (a *Accountant) Fit(s, ways, mba int) (now, afterConsolidation bool) {
	if s < 0 || s >= len(a.sockets) || ways < 1 || mba < 0 || mba > a.FreeMBA(s) || !a.groupsLeft(s) {
		return false, false
	}
	free := a.FreeMask(s)
	_, now = cbm.BestFit(cbm.Mask(free), a.totalWays, ways)
	return now, bits.OnesCount64(free) >= ways
}

// Allocate commits a best-fit contiguous run of ways and mba percent on socket s to a
// new group. Nothing changes on error.
func (a *Accountant) Allocate(name string, s, ways, mba int) (Group, error) {
	if _, dup := a.groups[name]; dup {
		return Group{}, fmt.Errorf("accountant: group %q already holds an allocation", name)
	}
	if s < 0 || s >= len(a.sockets) {
		return Group{}, fmt.Errorf("accountant: socket %d does not exist (0..%d)", s, len(a.sockets)-1)
	}
	if ways < 1 {
		return Group{}, fmt.Errorf("accountant: %q asks for %d ways; at least 1 is needed", name, ways)
	}
	if mba < 0 || mba > a.FreeMBA(s) {
		return Group{}, fmt.Errorf("accountant: %q asks for %d%% MBA on socket %d, %d%% uncommitted", name, mba, s, a.FreeMBA(s))
	}
	if !a.groupsLeft(s) {
		return Group{}, fmt.Errorf("accountant: socket %d holds %d groups, every control group (CLOSID) the platform leaves", s, a.sockets[s].clos.Groups)
	}
	fit, ok := cbm.BestFit(cbm.Mask(a.FreeMask(s)), a.totalWays, ways)
	m := uint64(fit)
	if !ok {
		return Group{}, fmt.Errorf("accountant: no contiguous %d cache ways available on socket %d (free %#x)", ways, s, a.FreeMask(s))
	}
	g := &Group{Name: name, Socket: s, Mask: m, MBA: mba}
	a.groups[name] = g
	a.sockets[s].allocated |= m
	a.sockets[s].mbaUsed += mba
	return *g, nil
}

// Shrink reduces a group in place to its lowest `ways` ways and `mba` percent (a probe
// buffer narrowed to the probe's result). Growing is not allowed.
func (a *Accountant) Shrink(name string, ways, mba int) (Group, error) {
	g, ok := a.groups[name]
	if !ok {
		return Group{}, fmt.Errorf("accountant: no group %q", name)
	}
	if ways < 1 || ways > bits.OnesCount64(g.Mask) || mba < 0 || mba > g.MBA {
		return Group{}, fmt.Errorf("accountant: cannot shrink %q (%d ways, %d%%) to %d ways, %d%%", name, bits.OnesCount64(g.Mask), g.MBA, ways, mba)
	}
	lowest, _ := cbm.Mask(g.Mask).LowestWays(ways)
	nm := uint64(lowest)
	st := &a.sockets[g.Socket]
	st.allocated = st.allocated&^g.Mask | nm
	st.mbaUsed += mba - g.MBA
	g.Mask, g.MBA = nm, mba
	return *g, nil
}

// Release frees a group's ways and bandwidth; releasing an unknown group is a no-op.
func (a *Accountant) Release(name string) {
	g, ok := a.groups[name]
	if !ok {
		return
	}
	st := &a.sockets[g.Socket]
	st.allocated &^= g.Mask
	st.mbaUsed -= g.MBA
	delete(a.groups, name)
}

// Consolidate repacks the groups of socket s towards way 0 in the order of their lowest
// way, so that all free ways form one run below the reserve (defragmentation, thesis
// §3.4 "Consolidate"; outer fragmentation, seed000.md §6 item 5). Groups are returned in
// the order the moves must be applied: each target range is free when its turn comes,
// so exclusive masks never overlap in between. Groups already in place do not move, and
// no group moves onto ways another agent claims (Limit).
func (a *Accountant) Consolidate(s int) []Move {
	var moves []Move
	next := 0
	foreign := a.sockets[s].clos.Foreign
	for _, g := range a.Groups(s) {
		w := bits.OnesCount64(g.Mask)
		to := uint64(cbm.Run(next, w))
		for to&foreign != 0 && next+w < a.totalWays { // skip another agent's ways
			next++
			to = uint64(cbm.Run(next, w))
		}
		if to&foreign != 0 || to&^a.AllocatableMask() != 0 { // no room: it stays
			next = bits.Len64(g.Mask)
			continue
		}
		next += w
		if to == g.Mask {
			continue
		}
		cur := a.groups[g.Name]
		st := &a.sockets[s]
		st.allocated = st.allocated&^cur.Mask | to
		moves = append(moves, Move{Name: g.Name, Socket: s, From: cur.Mask, To: to, LostWays: bits.OnesCount64(cur.Mask &^ to)})
		cur.Mask = to
	}
	return moves
}

// Check verifies the accountant's invariants: every group contiguous, inside the
// allocatable ways, no two groups sharing a way, per-socket masks and MBA sums equal to
// the groups', MBA within budget. Tests and the run loop's self-check use it.
func (a *Accountant) Check() error {
	alloc := make([]uint64, len(a.sockets))
	mba := make([]int, len(a.sockets))
	for _, g := range a.groups {
		if g.Mask == 0 {
			return fmt.Errorf("group %q has no ways", g.Name)
		}
		if !cbm.Mask(g.Mask).Contiguous() {
			return fmt.Errorf("group %q mask %#x not contiguous", g.Name, g.Mask)
		}
		if g.Mask&^a.AllocatableMask() != 0 {
			return fmt.Errorf("group %q mask %#x reaches into the system/default reserve", g.Name, g.Mask)
		}
		if alloc[g.Socket]&g.Mask != 0 {
			return fmt.Errorf("group %q mask %#x overlaps another group on socket %d", g.Name, g.Mask, g.Socket)
		}
		alloc[g.Socket] |= g.Mask
		mba[g.Socket] += g.MBA
	}
	for s := range a.sockets {
		if alloc[s] != a.sockets[s].allocated || mba[s] != a.sockets[s].mbaUsed {
			return fmt.Errorf("socket %d bookkeeping drifted: %#x/%d%% vs groups %#x/%d%%", s, a.sockets[s].allocated, a.sockets[s].mbaUsed, alloc[s], mba[s])
		}
		if mba[s] > a.MBABudget() {
			return fmt.Errorf("socket %d MBA over-committed: %d%% > %d%%", s, mba[s], a.MBABudget())
		}
	}
	return nil
}
