// Holding a job's requested memory bandwidth (mba_mbps) with the MB/s loop (policy/mbps).

package bench

import (
	"fmt"

	"colo/platform"
	"colo/policy/mbps"
	"colo/sched"
)

// holdBandwidth runs the MB/s loop of every running job that asks for a bandwidth
// (mba_mbps), whatever the scheduler: each fresh collector sample's MBM bandwidth goes to
// the job's controller, and its MBA value (and CPU quota, where the platform has one)
// overrides what the scheduler decided for the job this tick. A job in system/default gets
// a group of its own with system/default's ways (which keeps them: the groups overlap).
// The controller's state is an event ("bandwidth") whenever it changes.
func (r *runner) holdBandwidth(d *sched.Decisions) {
	for _, j := range r.live {
		if j.spec.MBAMBps <= 0 || j.lastSamp == nil || j.lastSamp == j.bwSeen {
			continue
		}
		j.bwSeen = j.lastSamp
		if j.bw == nil {
			if r.m.MBA == nil {
				if !r.bwWarned {
					r.warnf("job %s asks for %.0f MB/s but %s has no MBA; not held", j.spec.Name, j.spec.MBAMBps, r.m.Name)
					r.bwWarned = true
				}
				continue
			}
			o := mbps.DefaultOptions()
			_, quota := r.pf.(platform.QuotaSetter)
			o.Quota = quota && platform.CPUQuotaUnavailable(r.pf) == ""
			c, err := mbps.New(*r.m.MBA, o)
			if err != nil {
				r.warnf("job %s: mba_mbps: %v", j.spec.Name, err)
				continue
			}
			c.Request(j.spec.MBAMBps)
			j.bw, j.bwQuota = c, 1
		}
		dec := j.bw.Observe(j.lastSamp.MemBandwidthMBps)
		if dec.State != j.bwState || dec.Changed {
			r.event("bandwidth", j.spec.ID, fmt.Sprintf("%s: requested %.0f MB/s, achieved %.0f; MBA %d, quota %.2f",
				dec.State, dec.Requested, dec.Achieved, dec.Value, dec.Quota))
			j.bwState = dec.State
		}
		set := false
		for i := range d.Allocate {
			if a := &d.Allocate[i]; a.Job == j.spec.ID {
				if a.Mask == 0 {
					a.Mask = r.defMask[j.socket]
					r.keepDefault(d, j.socket)
				}
				a.MBA, set = dec.Value, true
			}
		}
		if !set && (dec.Changed || j.mba != dec.Value) {
			mask := j.reserved
			if mask == 0 {
				mask = r.defMask[j.socket]
				r.keepDefault(d, j.socket)
			}
			d.Allocate = append(d.Allocate, sched.Allocation{Job: j.spec.ID, Socket: j.socket, Mask: mask, MBA: dec.Value, Reason: "mba_mbps"})
		}
		if dec.Quota != j.bwQuota {
			d.Quota = append(d.Quota, sched.QuotaChange{Job: j.spec.ID, Quota: dec.Quota})
			j.bwQuota = dec.Quota
		}
	}
}

// keepDefault keeps system/default's mask on socket s this tick (a job's MBA-only group
// holds the same ways).
func (r *runner) keepDefault(d *sched.Decisions, s int) {
	if _, ok := d.DefaultMask[s]; ok {
		return
	}
	if d.DefaultMask == nil {
		d.DefaultMask = map[int]uint64{}
	}
	d.DefaultMask[s] = r.defMask[s]
}
