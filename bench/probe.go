// The allocation probe's driver: segments of the sweep inside the reserved buffer,
// their 50 ms samples and the result handed back to the scheduler.

package bench

import (
	"fmt"
	"math"
	"math/bits"
	"time"

	"colo/cbm"
	"colo/counter"
	"colo/metric"
	"colo/probe"
	"colo/sched"
)

type activeProbe struct {
	req      sched.ProbeRequest
	sweep    *probe.Sweep
	combo    probe.Combo
	mask     uint64
	segStart time.Duration
	segEnd   time.Duration
	next     time.Duration
	last     counter.Reading
	lastT    time.Duration
	samples  []float64
	ipcSum   float64
	ipcN     int
}

// startProbe begins an allocation probe inside the reserved buffer.
func (r *runner) startProbe(req sched.ProbeRequest, now time.Duration) {
	j := r.byID[req.Job]
	if j == nil || j.state != StateRunning {
		r.results = append(r.results, sched.ProbeResult{Job: req.Job, Result: probe.Result{Err: "job is not running"}})
		return
	}
	r.res.Probes++
	if j.probes++; j.probes > 1 {
		r.res.Reprobes++
	}
	p := &activeProbe{req: req, sweep: probe.NewSweep(req.Config, j.spec.IPCETarget)}
	j.probe = p
	r.event("probe-start", j.spec.ID, fmt.Sprintf("buffer %#x up to %d%% MBA on socket %d", req.Buffer, req.MaxMBA, req.Socket))
	if j.reserved != req.Buffer || req.Socket != j.socket {
		p.sweep.Fail(fmt.Sprintf("its probe buffer %#x on socket %d was not applied", req.Buffer, req.Socket))
		r.endProbe(j)
		return
	}
	r.beginSegment(j, now)
}

func (r *runner) beginSegment(j *rjob, now time.Duration) {
	p := j.probe
	c, ok := p.sweep.Current()
	if !ok {
		r.endProbe(j)
		return
	}
	lowest, err := cbm.Mask(p.req.Buffer).LowestWays(c.Ways)
	mask := uint64(lowest)
	if err == nil && c.MBA > p.req.MaxMBA {
		err = fmt.Errorf("%d%% MBA exceeds the probe's %d%%", c.MBA, p.req.MaxMBA)
	}
	if err == nil {
		err = r.setAlloc(j, mask, c.MBA)
	}
	if err != nil {
		p.sweep.Fail(fmt.Sprintf("enforcing %d ways/%d%% MBA: %v", c.Ways, c.MBA, err))
		r.endProbe(j)
		return
	}
	cnt, err := r.pf.Read(j.spec.ID)
	if err != nil {
		p.sweep.Fail("reading counters: " + err.Error())
		r.endProbe(j)
		return
	}
	now = max(now, r.pf.Now()) // the segment starts once its allocation is in place
	p.combo, p.mask = c, mask
	p.segStart, p.segEnd = now, now+p.req.Config.SegmentTime()
	p.next = now + p.req.Config.Frequency
	p.last, p.lastT = cnt, now
	p.samples, p.ipcSum, p.ipcN = p.samples[:0], 0, 0
}

// stepProbe takes the probe's 50 ms samples and closes segments.
func (r *runner) stepProbe(j *rjob, now time.Duration) {
	p := j.probe
	if p.next <= now && now > p.lastT {
		c, err := r.pf.Read(j.spec.ID)
		if err == nil {
			p.samples = append(p.samples, metric.IPCE(c.StallsTotal-p.last.StallsTotal, c.Cycles-p.last.Cycles))
			if ipc := metric.IPC(c.Instructions-p.last.Instructions, c.Cycles-p.last.Cycles); !math.IsNaN(ipc) {
				p.ipcSum += ipc
				p.ipcN++
			}
			p.last, p.lastT = c, max(now, r.pf.Now()) // timestamped when read
		}
		for p.next <= now {
			p.next += p.req.Config.Frequency
		}
	}
	if p.segEnd <= now {
		p.sweep.Finish(p.samples)
		seg := ProbeRecord{Job: j.spec.ID, Start: p.segStart, End: now, Kind: "allocation", Socket: j.socket,
			Ways: p.combo.Ways, Mask: p.mask, MBA: float64(p.combo.MBA), IPC: math.NaN(),
			IPCE: probe.TrimmedMean(p.samples, p.req.Config.DropOutliers), Result: "measured"}
		if p.ipcN > 0 {
			seg.IPC = p.ipcSum / float64(p.ipcN)
		}
		if p.sweep.Done() {
			seg.Result = "break"
		}
		r.fail(r.rec.Probe(seg))
		if p.sweep.Done() {
			r.endProbe(j)
		} else {
			r.beginSegment(j, now)
		}
	}
}

func (r *runner) endProbe(j *rjob) {
	p := j.probe
	j.probe = nil
	if !p.sweep.Done() {
		p.sweep.Fail("ended early")
	}
	res := p.sweep.Result(bits.OnesCount64(p.req.Buffer), p.req.MaxMBA)
	if res.Err != "" {
		r.res.ProbesFailed++
		r.event("probe-failed", j.spec.ID, res.Err)
	} else {
		r.event("probe-result", j.spec.ID, fmt.Sprintf("%d ways %d%% MBA, IPCE %.1f%% (threshold %.1f%%, met %v)", res.Ways, res.MBA, 100*res.IPCE, 100*res.Target, res.Met))
	}
	r.results = append(r.results, sched.ProbeResult{Job: j.spec.ID, Result: res})
}
