package emu

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Sample is what the machine reports about one task on one L3 domain at a Tick.
type Sample struct {
	// Footprint is the task's cache footprint on the domain now, in bytes: what its
	// llc_occupancy would read if it had had its own RMID forever.
	Footprint uint64
	// TotalBytes and LocalBytes are the memory traffic the task generated on the domain
	// since the previous Tick (mbm_total_bytes and mbm_local_bytes increments).
	TotalBytes, LocalBytes uint64
	// CPU is the CPU the task ran on (for the CPU-group precedence of tasks that are in
	// the default group); -1 when unknown.
	CPU int
}

// Source supplies monitoring data: the simulated machine (through the orchestrator) or
// a test. It is called under the emulator's lock from Tick and must not call back.
type Source interface {
	Sample(pid, dom int) Sample
}

// SourceFunc adapts a function to Source.
type SourceFunc func(pid, dom int) Sample

// Sample implements Source.
func (f SourceFunc) Sample(pid, dom int) Sample { return f(pid, dom) }

type rd struct{ rmid, dom int }

// monState holds the counters per RMID and domain, and per task the cache lines it
// holds tagged with each RMID (a task that moves keeps its old lines under the old RMID
// until its own traffic refills them: occupancy decays rather than jumps).
//
// Monitoring domains are L3 domain indices, or under SNC index*SNC+node.
type monState struct {
	held  map[int]map[int]map[int]uint64 // pid -> monitoring domain -> rmid -> bytes
	total map[rd]uint64
	local map[rd]uint64
	// unavail marks (RMID, L3 domain index, event) whose next read is "Unavailable"
	// (a BMEC configuration change reset the domain's counters).
	unavail map[unavailKey]bool
	// seeded: captured occupancy is held by pseudo-tasks (LoadTree) until the first
	// Tick with a source.
	seeded bool
}

type unavailKey struct {
	rmid, dom int
	event     string
}

func (m *monState) init() {
	m.held = map[int]map[int]map[int]uint64{}
	m.total = map[rd]uint64{}
	m.local = map[rd]uint64{}
	m.unavail = map[unavailKey]bool{}
}

func (m *monState) resetMBM(rmid int) {
	for k := range m.total {
		if k.rmid == rmid {
			delete(m.total, k)
		}
	}
	for k := range m.local {
		if k.rmid == rmid {
			delete(m.local, k)
		}
	}
}

func (m *monState) occupancy(rmid, dom int) uint64 {
	var s uint64
	for _, doms := range m.held {
		s += doms[dom][rmid]
	}
	return s
}

func (m *monState) maxOccupancy(rmid int) uint64 {
	per := map[int]uint64{}
	for _, doms := range m.held {
		for d, rm := range doms {
			per[d] += rm[rmid]
		}
	}
	var mx uint64
	for _, v := range per {
		mx = max(mx, v)
	}
	return mx
}

// SetSource installs (or, with nil, removes) the monitoring source.
func (e *Emulator) SetSource(s Source) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.opts.Source = s
}

// Declare tells the emulator that tasks exist in the default group, so that they are
// listed in its tasks file and sampled by Tick before anything moves them.
func (e *Emulator) Declare(pids ...int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range pids {
		if _, ok := e.tasks[p]; !ok && p > 0 {
			e.tasks[p] = &task{}
		}
	}
}

// Forget removes exited tasks; lines they held stay with their RMIDs until Tick sees
// them refilled (they are dropped, the model has no other owner for them).
func (e *Emulator) Forget(pids ...int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range pids {
		delete(e.tasks, p)
		delete(e.mon.held, p)
	}
	e.gen++
}

// effectiveRMID applies the kernel's precedence: the task's own RMID when it has one,
// else the RMID of the CPU it runs on, else the default group's.
func (e *Emulator) effectiveRMID(t *task, cpu int) int {
	if t.rmid != 0 {
		return t.rmid
	}
	if cpu >= 0 && cpu < e.p.CPUs {
		_, r := e.cpuOwner(cpu)
		return r
	}
	return 0
}

// snc is the number of monitoring sub-domains per L3 domain (1 without SNC).
func (e *Emulator) snc() int { return max(e.p.SNC, 1) }

// subOf is the SNC node (0..snc-1) within L3 domain d that CPU cpu belongs to: the
// domain's CPUs split into snc equal runs (CPUs are spread evenly over L3 domains).
func (e *Emulator) subOf(d, cpu int) int {
	n := e.snc()
	per := e.p.CPUs / e.p.L3.Domains
	if n == 1 || cpu < 0 || per < n {
		return -1
	}
	off := cpu - d*per
	if off < 0 || off >= per {
		return -1
	}
	return off / (per / n)
}

// Tick pulls one sample per task and L3 domain from the source and advances the
// counters: traffic is credited to the task's effective RMID (mbm_* are cumulative),
// and cache lines move between RMIDs as described by retag. Under SNC a sample goes to
// the node of the CPU it names, or is split evenly over the nodes (remainder to the
// first) when the CPU is unknown. With assignable counters, traffic is counted only
// for an (RMID, event, domain) that holds a counter.
func (e *Emulator) Tick() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.p.Mon == nil || e.opts.Source == nil {
		return
	}
	if e.mon.seeded {
		for pid := range e.mon.held {
			if pid < 0 {
				delete(e.mon.held, pid)
			}
		}
		e.mon.seeded = false
	}
	n := e.snc()
	pids := slices.Sorted(maps.Keys(e.tasks))
	for _, pid := range pids {
		t := e.tasks[pid]
		for d := 0; d < e.p.L3.Domains; d++ {
			s := e.opts.Source.Sample(pid, d)
			r := e.effectiveRMID(t, s.CPU)
			k := e.subOf(d, s.CPU)
			for sub := 0; sub < n; sub++ {
				part := func(v uint64) uint64 {
					if k >= 0 {
						if sub == k {
							return v
						}
						return 0
					}
					x := v / uint64(n)
					if sub == 0 {
						x += v % uint64(n)
					}
					return x
				}
				md := d*n + sub
				if e.counting(r, d, "mbm_total_bytes") {
					e.mon.total[rd{r, md}] += part(s.TotalBytes)
				}
				if e.counting(r, d, "mbm_local_bytes") {
					e.mon.local[rd{r, md}] += part(s.LocalBytes)
				}
				doms := e.mon.held[pid]
				if doms == nil {
					doms = map[int]map[int]uint64{}
					e.mon.held[pid] = doms
				}
				if doms[md] == nil {
					doms[md] = map[int]uint64{}
				}
				retag(doms[md], r, part(s.Footprint), part(s.TotalBytes))
			}
		}
	}
	e.checkLimbo()
}

// retag updates the lines one task holds on one domain, by RMID, after an interval:
//
//	moved  = min(old, traffic)            lines refilled under the current RMID cur
//	old'   = old - moved                  (taken from the other RMIDs in proportion)
//	held[cur] = footprint - old'          (clamped: if old' > footprint the old RMIDs
//	                                       shrink in proportion and held[cur] = 0)
//
// where old is what the other RMIDs hold and traffic the task's memory traffic in the
// interval: each miss fills one line tagged with the current RMID (the kernel's
// observation that a moved task's occupancy stays with the old group until evicted,
// anchors.md §4.3).
func retag(h map[int]uint64, cur int, footprint, traffic uint64) {
	var old uint64
	others := make([]int, 0, len(h))
	for r, v := range h {
		if r != cur {
			old += v
			others = append(others, r)
		}
	}
	sort.Ints(others)
	scale := func(target uint64) {
		if old == 0 {
			return
		}
		var sum uint64
		for i, r := range others {
			var nv uint64
			if i == len(others)-1 {
				nv = target - sum
			} else {
				nv = uint64(float64(h[r]) * float64(target) / float64(old))
				if nv > target-sum {
					nv = target - sum
				}
			}
			sum += nv
			if nv == 0 {
				delete(h, r)
			} else {
				h[r] = nv
			}
		}
		old = target
	}
	scale(old - min(old, traffic))
	if old > footprint {
		scale(footprint)
		delete(h, cur)
		return
	}
	if footprint-old == 0 {
		delete(h, cur)
	} else {
		h[cur] = footprint - old
	}
}

// readMon prints a mon_data counter of L3 domain index dom (sub: the SNC node within
// it, or -1 for the whole domain: the sum of its nodes). A CTRL_MON group reads the sum
// over its own RMID and its MON groups' RMIDs; with assignable counters only the RMIDs
// whose event holds a counter count, and "Unassigned" is printed when none does (the
// kernel's mon_event_count keeps a read that succeeded for any of them). A counter
// reset by a BMEC change reads "Unavailable" once.
func (e *Emulator) readMon(g *group, dom, sub int, event string) string {
	members := []*group{g}
	if g.ctrl {
		members = append(members, sortedMons(g)...)
	}
	n := e.snc()
	subs := []int{sub}
	if sub < 0 {
		subs = subs[:0]
		for k := 0; k < n; k++ {
			subs = append(subs, k)
		}
	}
	var v uint64
	ok, unavailable := false, false
	for _, m := range members {
		r := m.rmid
		if r == noID {
			continue
		}
		if event != "llc_occupancy" && !e.assigned(m, dom, event) {
			continue
		}
		if event != "llc_occupancy" && e.mon.unavail[unavailKey{r, dom, event}] {
			delete(e.mon.unavail, unavailKey{r, dom, event})
			unavailable = true
			continue
		}
		ok = true
		for _, k := range subs {
			md := dom*n + k
			switch event {
			case "llc_occupancy":
				v += e.mon.occupancy(r, md)
			case "mbm_total_bytes":
				v += e.mon.total[rd{r, md}]
			case "mbm_local_bytes":
				v += e.mon.local[rd{r, md}]
			}
		}
	}
	switch {
	case ok:
		return fmt.Sprintf("%d\n", v)
	case unavailable:
		return "Unavailable\n"
	default:
		return "Unassigned\n"
	}
}
