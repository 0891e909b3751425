// Applying the scheduler's allocations and system/default's masks to the platform.

package bench

import (
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"

	"colo/sched"
)

// setAlloc applies mask/mba to j through resctrl (mask 0: back to system/default) and
// records the change in the allocation timeline.
func (r *runner) setAlloc(j *rjob, mask uint64, mba int) error {
	if err := r.pf.SetAllocation(j.spec.ID, j.socket, mask, mba); err != nil {
		return err
	}
	r.applied(j, mask, mba)
	return nil
}

// applied notes that j's class of service (CLOS "job-ID" on its socket) now holds
// mask/mba and records every change, so that the allocation timeline is exact: a probe
// segment's sub-mask, a consolidation move, and the removal of the class (mask 0, MBA
// NaN, no members — store.Allocation) when the job leaves it, stops or migrates.
func (r *runner) applied(j *rjob, mask uint64, mba int) {
	if mask == 0 {
		mba = 0
	}
	if mask == j.appliedMask && mba == j.appliedMBA {
		return
	}
	rec := AllocationRecord{T: r.pf.Now(), Socket: j.socket, CLOS: fmt.Sprintf("job-%d", j.spec.ID), Mask: mask,
		MBA: float64(mba), Members: []int{j.spec.ID}, Source: "sched"}
	if mask == 0 {
		rec.MBA, rec.Members = math.NaN(), []int{}
	}
	r.fail(r.rec.Allocation(rec))
	j.appliedMask, j.appliedMBA = mask, mba
}

// applyAllocations applies the tick's allocations: system/default first gives up the ways
// about to become exclusive, then the groups change in order, then system/default takes
// every way no group holds (or the scheduler's explicit DefaultMask).
func (r *runner) applyAllocations(d sched.Decisions) {
	if len(d.Allocate) == 0 && len(d.DefaultMask) == 0 {
		return
	}
	target := map[int]uint64{}
	for _, a := range d.Allocate {
		if j := r.byID[a.Job]; j != nil && j.state == StateRunning {
			target[a.Job] = a.Mask
		}
	}
	newDef := r.defaults(target, d.DefaultMask)
	for _, s := range slices.Sorted(maps.Keys(newDef)) {
		m := newDef[s]
		// shrink first to the part it keeps; when the old and new runs are disjoint
		// (system/default moves to another stretch of free ways) go there directly
		if inter := r.defMask[s] & m; inter == 0 {
			r.setDefault(s, m)
		} else if inter != r.defMask[s] {
			r.setDefault(s, inter)
		}
	}
	for _, a := range d.Allocate {
		j := r.byID[a.Job]
		if j == nil || j.state != StateRunning {
			continue
		}
		if j.probe != nil && a.Reason != "probe-buffer" {
			if a.Mask != 0 && bits.OnesCount64(a.Mask) == bits.OnesCount64(j.probe.req.Buffer) {
				// consolidation moved the probe's buffer: follow it and restart the
				// current segment (the job lost its cached lines)
				j.probe.req.Buffer = a.Mask
				j.reserved, j.mba = a.Mask, a.MBA
				r.beginSegment(j, r.pf.Now())
				r.event("probe-moved", a.Job, fmt.Sprintf("%s: buffer now %#x", a.Reason, a.Mask))
				continue
			}
			j.probe.sweep.Fail("allocation changed during the probe (" + a.Reason + ")")
			r.endProbe(j)
		}
		if err := r.setAlloc(j, a.Mask, a.MBA); err != nil {
			r.res.AllocationErrors++
			r.warnf("job %s: allocation %#x/%d%% failed: %v; it stays in system/default", j.spec.Name, a.Mask, a.MBA, err)
			r.event("allocation-failed", a.Job, err.Error())
			r.setAlloc(j, 0, 0)
			j.reserved, j.mba = 0, 0
			continue
		}
		j.reserved, j.mba = a.Mask, a.MBA
		r.event("allocate", a.Job, fmt.Sprintf("%s: %#x + %d%% MBA on socket %d", a.Reason, a.Mask, a.MBA, j.socket))
	}
	r.updateDefaults(d.DefaultMask)
}

func (r *runner) defaults(override map[int]uint64, explicit map[int]uint64) map[int]uint64 {
	m := r.m
	held := map[int]uint64{}
	for _, j := range r.live {
		mask := j.reserved
		if o, ok := override[j.spec.ID]; ok {
			mask = o
		}
		if j.socket >= 0 {
			held[j.socket] |= mask
		}
	}
	out := map[int]uint64{}
	for s := 0; s < m.Sockets; s++ {
		out[s] = sched.DefaultMask(m, held[s])
	}
	for s, v := range explicit {
		out[s] = v
	}
	return out
}

func (r *runner) updateDefaults(explicit map[int]uint64) {
	def := r.defaults(nil, explicit)
	for _, s := range slices.Sorted(maps.Keys(def)) {
		if m := def[s]; m != r.defMask[s] {
			r.setDefault(s, m)
		}
	}
}

func (r *runner) setDefault(s int, m uint64) {
	if m == 0 {
		r.warnf("system/default would lose every way on socket %d; keeping %#x", s, r.defMask[s])
		return
	}
	if err := r.pf.SetDefaultMask(s, m); err != nil {
		r.res.AllocationErrors++
		r.warnf("system/default mask %#x on socket %d: %v", m, s, err)
		return
	}
	r.defMask[s] = m
	r.fail(r.rec.Allocation(AllocationRecord{T: r.pf.Now(), Socket: s, CLOS: "system/default", Mask: m, MBA: 100, Source: "sched"}))
}
