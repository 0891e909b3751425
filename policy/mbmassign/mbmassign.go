// Package mbmassign decides which tenants hold the assignable MBM counters when a
// server has fewer counters than monitored groups (the kernel's mbm_event mode: AMD
// ABMC, recent Intel; resctrl.rst "mbm_assign_mode"). An event without a counter reads
// "Unassigned": it is not zero bandwidth, it is not measured.
//
// The rule, each period:
//
//  1. every priority tenant holds a counter (they are the ones whose bandwidth the
//     controllers act on; more priority tenants than counters is an error);
//  2. of the R counters left, ⌊R/2⌋ go to the heaviest other tenants by their last
//     measured bandwidth (they dominate the memory traffic the controllers budget);
//  3. the remaining R − ⌊R/2⌋ rotate over the other tenants, least recently measured
//     first (ties by name).
//
// With n tenants in step 3's pool and k = R − ⌊R/2⌋ rotating counters, every tenant is
// measured at least once every ⌈n/k⌉ periods (least-recently-measured first: a tenant
// waits behind at most n − 1 others, k served per period). Deterministic: the same
// inputs give the same assignment.
package mbmassign

import (
	"fmt"
	"sort"
)

// Tenant is one monitored group.
type Tenant struct {
	Name     string
	Priority bool
	// Bandwidth is the last measured bandwidth (bytes/s); Measured says whether there is
	// one (an unmeasured tenant is not "0 B/s", it is unknown and not heavy).
	Bandwidth float64
	Measured  bool
}

// Rotor keeps the rotation state: when each tenant last held a counter.
type Rotor struct {
	// Slots is the number of counters the tenants may hold.
	Slots  int
	period int
	last   map[string]int // tenant -> period it last held a counter
}

// NewRotor returns a rotor over slots counters.
func NewRotor(slots int) *Rotor { return &Rotor{Slots: slots, last: map[string]int{}} }

// Assignment is one period's decision.
type Assignment struct {
	Period int
	// Hold are the tenants that hold a counter this period, by name.
	Hold []string
	// Priority, Heavy and Rotating split Hold by the rule that gave the counter.
	Priority, Heavy, Rotating []string
	// Unassigned are the tenants without a counter this period.
	Unassigned []string
	// RotationPeriods is ⌈n/k⌉: within that many periods every rotating tenant is
	// measured once (0 when nothing rotates).
	RotationPeriods int
}

// Next decides the next period's assignment.
func (r *Rotor) Next(ts []Tenant) (Assignment, error) {
	r.period++
	a := Assignment{Period: r.period}
	var rest []Tenant
	seen := map[string]bool{}
	for _, t := range ts {
		if seen[t.Name] {
			return a, fmt.Errorf("mbmassign: tenant %q given twice", t.Name)
		}
		seen[t.Name] = true
		if t.Priority {
			a.Priority = append(a.Priority, t.Name)
		} else {
			rest = append(rest, t)
		}
	}
	sort.Strings(a.Priority)
	if len(a.Priority) > r.Slots {
		return a, fmt.Errorf("mbmassign: %d priority tenants but %d counters: give fewer tenants priority or free counters", len(a.Priority), r.Slots)
	}
	left := r.Slots - len(a.Priority)
	heavyN := min(left/2, len(rest))
	byBW := append([]Tenant(nil), rest...)
	sort.SliceStable(byBW, func(i, j int) bool {
		if byBW[i].Measured != byBW[j].Measured {
			return byBW[i].Measured
		}
		if byBW[i].Bandwidth != byBW[j].Bandwidth {
			return byBW[i].Bandwidth > byBW[j].Bandwidth
		}
		return byBW[i].Name < byBW[j].Name
	})
	heavy := map[string]bool{}
	for _, t := range byBW[:heavyN] {
		if !t.Measured {
			break // unknown is not heavy: leave the counter to the rotation
		}
		heavy[t.Name] = true
		a.Heavy = append(a.Heavy, t.Name)
	}
	k := left - len(a.Heavy)
	var pool []Tenant
	for _, t := range rest {
		if !heavy[t.Name] {
			pool = append(pool, t)
		}
	}
	sort.SliceStable(pool, func(i, j int) bool {
		li, lj := r.last[pool[i].Name], r.last[pool[j].Name]
		if li != lj {
			return li < lj
		}
		return pool[i].Name < pool[j].Name
	})
	for i, t := range pool {
		if i < k {
			a.Rotating = append(a.Rotating, t.Name)
		} else {
			a.Unassigned = append(a.Unassigned, t.Name)
		}
	}
	if k > 0 && len(pool) > 0 {
		a.RotationPeriods = (len(pool) + k - 1) / k
	}
	a.Hold = append(append(append([]string(nil), a.Priority...), a.Heavy...), a.Rotating...)
	for _, n := range a.Hold {
		r.last[n] = r.period
	}
	sort.Strings(a.Hold)
	sort.Strings(a.Heavy)
	sort.Strings(a.Rotating)
	sort.Strings(a.Unassigned)
	return a, nil
}
