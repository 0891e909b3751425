package sched

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"colo/cbm"
)

func icxAccountant(t *testing.T) *Accountant {
	t.Helper()
	a, err := NewAccountant(2, 12, DefaultReserveWays, DefaultReserveMBA)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAccountantThesisCapacity(t *testing.T) {
	a := icxAccountant(t)
	// 11 allocatable ways per socket: 22 on the two sockets (seed000.md §1.4)
	if got := a.FreeWays(0) + a.FreeWays(1); got != 22 {
		t.Fatalf("allocatable ways = %d, want 22", got)
	}
	if a.DefaultMask(0) != 0xfff || a.FreeMBA(1) != 90 {
		t.Fatalf("fresh socket: default %#x, free MBA %d", a.DefaultMask(0), a.FreeMBA(1))
	}
	g, err := a.Allocate("p", 0, 6, 20)
	if err != nil || g.Mask != 0x03f {
		t.Fatalf("6 ways: %#x %v", g.Mask, err)
	}
	// thesis Fig. 4.14: exclusive 03f, system/default fc0
	if a.DefaultMask(0) != 0xfc0 {
		t.Fatalf("default mask %#x, want 0xfc0", a.DefaultMask(0))
	}
	if _, err := a.Allocate("q", 0, 6, 10); err == nil {
		t.Fatal("allocated 6 more ways with only 5 allocatable left")
	}
	if _, err := a.Allocate("q", 0, 5, 71); err == nil {
		t.Fatal("MBA budget 90 over-committed: 20 + 71")
	}
	if _, err := a.Allocate("q", 0, 5, 70); err != nil {
		t.Fatal(err)
	}
	if a.FreeWays(0) != 0 || a.FreeMBA(0) != 0 || a.DefaultMask(0) != 0x800 {
		t.Fatalf("full socket: free %d ways %d%%, default %#x", a.FreeWays(0), a.FreeMBA(0), a.DefaultMask(0))
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestConsolidateHandMade(t *testing.T) {
	a := icxAccountant(t)
	for i, w := range []int{2, 3, 2, 4} { // a:0x003 b:0x01c c:0x060 d:0x780
		if _, err := a.Allocate(fmt.Sprint("g", i), 0, w, 10); err != nil {
			t.Fatal(err)
		}
	}
	a.Release("g0") // free ways 0-1
	a.Release("g2") // free ways 5-6: 4 free ways, largest run 2
	if now, after := a.Fit(0, 3, 10); now || !after {
		t.Fatalf("Fit(3 ways) = %v,%v; want not now, after consolidation", now, after)
	}
	moves := a.Consolidate(0)
	want := []Move{
		{Name: "g1", Socket: 0, From: 0x01c, To: 0x007, LostWays: 2},
		{Name: "g3", Socket: 0, From: 0x780, To: 0x078, LostWays: 4}, // ways 7-10 -> 3-6: no overlap
	}
	if fmt.Sprint(moves) != fmt.Sprint(want) {
		t.Fatalf("moves %+v\nwant  %+v", moves, want)
	}
	if a.FreeMask(0) != 0x780 {
		t.Fatalf("free after consolidation %#x, want 0x780", a.FreeMask(0))
	}
	if g, err := a.Allocate("new", 0, 4, 10); err != nil || g.Mask != 0x780 {
		t.Fatalf("after consolidation: %#x %v", g.Mask, err)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	// already packed: nothing moves
	if m := a.Consolidate(0); len(m) != 0 {
		t.Fatalf("packed socket moved %v", m)
	}
}

// TestConsolidateMovesNeverOverlap replays the moves one by one against the other
// groups' masks: exclusive masks must stay disjoint at every step.
func TestConsolidateMovesNeverOverlap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for it := 0; it < 2000; it++ {
		a := icxAccountant(t)
		for i := 0; i < 8; i++ {
			a.Allocate(fmt.Sprint(i), 0, 1+r.IntN(3), 0)
		}
		for i := 0; i < 8; i++ {
			if r.IntN(2) == 0 {
				a.Release(fmt.Sprint(i))
			}
		}
		cur := map[string]uint64{}
		for _, g := range a.Groups(0) {
			cur[g.Name] = g.Mask
		}
		for _, mv := range a.Consolidate(0) {
			cur[mv.Name] = mv.To
			var seen uint64
			for _, m := range cur {
				if seen&m != 0 {
					t.Fatalf("iteration %d: overlap after moving %s", it, mv.Name)
				}
				seen |= m
			}
		}
		if cbm.Mask(a.FreeMask(0)).LongestRun(12).Ones() != a.FreeWays(0) {
			t.Fatalf("free ways not one run after consolidation: %#x", a.FreeMask(0))
		}
	}
}

// TestAccountantNeverOverCommits is the property test: any sequence of allocations,
// shrinks, releases and consolidations keeps every group contiguous, disjoint, out of
// the reserve, and the MBA within budget; failed calls change nothing.
func TestAccountantNeverOverCommits(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 1))
	for run := 0; run < 300; run++ {
		sockets, ways := 1+r.IntN(3), 4+r.IntN(17)
		a, err := NewAccountant(sockets, ways, r.IntN(3), 10*r.IntN(3))
		if err != nil {
			t.Fatal(err)
		}
		names := []string{}
		for step := 0; step < 200; step++ {
			before := fmt.Sprint(a.sockets, len(a.groups))
			switch op := r.IntN(10); {
			case op < 5:
				n := fmt.Sprint("g", step)
				if _, err := a.Allocate(n, r.IntN(sockets), r.IntN(6), 10*r.IntN(6)); err == nil {
					names = append(names, n)
				} else if fmt.Sprint(a.sockets, len(a.groups)) != before {
					t.Fatalf("failed Allocate changed state: %v", err)
				}
			case op < 7 && len(names) > 0:
				a.Release(names[r.IntN(len(names))])
			case op < 9 && len(names) > 0:
				if _, err := a.Shrink(names[r.IntN(len(names))], r.IntN(6), 10*r.IntN(6)); err != nil && fmt.Sprint(a.sockets, len(a.groups)) != before {
					t.Fatalf("failed Shrink changed state: %v", err)
				}
			default:
				a.Consolidate(r.IntN(sockets))
			}
			if err := a.Check(); err != nil {
				t.Fatalf("run %d step %d: %v", run, step, err)
			}
			for s := 0; s < sockets; s++ {
				if a.FreeMBA(s) < 0 || a.DefaultMask(s) == 0 && a.reserveWays > 0 {
					t.Fatalf("socket %d over-committed", s)
				}
			}
		}
	}
}

// The platform's resctrl budget: at most Limit groups per socket (CLOSIDs), and ways
// another agent claims are never free.
func TestAccountantCLOSBudget(t *testing.T) {
	a, err := NewAccountant(2, 12, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	a.Limit(0, GroupBudget(2, 0x3))
	if a.FreeMask(0) != 0x7fc || a.FreeMask(1) != 0x7ff {
		t.Fatalf("free masks %#x %#x", a.FreeMask(0), a.FreeMask(1))
	}
	for i, name := range []string{"a", "b"} {
		g, err := a.Allocate(name, 0, 1, 0)
		if err != nil || g.Mask&0x3 != 0 {
			t.Fatalf("group %d: %+v %v", i, g, err)
		}
	}
	if now, later := a.Fit(0, 1, 0); now || later {
		t.Fatal("a third group fits where the mount leaves two")
	}
	if _, err := a.Allocate("c", 0, 1, 0); err == nil || !strings.Contains(err.Error(), "CLOSID") {
		t.Fatalf("third group: %v", err)
	}
	if _, err := a.Allocate("c", 1, 1, 0); err != nil { // the other socket has its own budget
		t.Fatal(err)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}
