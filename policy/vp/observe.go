// Observation: phases and references, hurt, socket bandwidth and saturation, unfairness.

package vp

import (
	"math"
	"time"

	"colo/metric"
)

func (c *Controller) observe(w *workload, now time.Duration) {
	s := w.acc
	dt := (now - w.since).Seconds()
	if s.Interval > 0 {
		dt = s.Interval.Seconds()
	}
	w.acc = Sample{ID: w.cfg.ID}
	w.since = now
	w.newPhase = false
	if s.Instructions <= 0 || s.Cycles <= 0 || dt <= 0 {
		w.observed = false
		return
	}
	w.observed = true
	w.ipc = metric.IPC(s.Instructions, s.Cycles)
	w.l3mpki = L3MPKI(s.LLCMisses, s.Instructions)
	w.mf = MemoryFactor(s.LLCMisses, s.L2Misses)
	w.llcRate = s.LLCMisses / dt
	w.bwRate = s.MemBytes / dt
	w.state = c.opt.Classify(w.l3mpki, w.mf)
	l2 := L3MPKI(s.L2Misses, s.Instructions) // same formula: misses per kilo-instruction
	if !w.hasRef || math.Abs(l2-w.phaseL2) > c.opt.PhaseThreshold*math.Max(w.phaseL2, 1e-9) {
		w.newPhase = w.hasRef
		w.hasRef, w.refIPC, w.refState, w.phaseL2, w.refMF = true, w.ipc, w.state, l2, w.mf
	} else {
		if w.ipc > w.refIPC {
			w.refIPC = w.ipc
		}
		if w.state.Row() < w.refState.Row() {
			w.refState = w.state
		}
		w.refMF = math.Min(w.refMF, w.mf)
	}
	w.hurtState = w.slowdown() > 1+c.opt.HurtThreshold
	if w.hurtState {
		w.quiet = 0
	} else {
		w.quiet++
	}
}

func (c *Controller) socketBW(sock int) float64 {
	bw := 0.0
	for _, w := range c.ws {
		if w.observed && w.cfg.socket(c.m) == sock {
			bw += w.bwRate
		}
	}
	return bw
}

func (c *Controller) saturated(sock int) bool {
	return c.socketBW(sock) > c.opt.Saturation*c.m.MemBWPerSocketMBps*1e6
}

// hurtKind says what hurts w, or false when it is not hurt (or the hurt has no cause this
// controller can act on).
func (c *Controller) hurtKind(w *workload) (HurtKind, bool) {
	if !w.observed || !w.hurtState {
		return 0, false
	}
	// a workload of the last row (S6–S8) reuses nothing: it cannot lose cache (§2.3)
	if w.state.Row() > w.refState.Row() || (w.refState.Row() < HighMF && w.mf > w.refMF+c.opt.MFRise) {
		return CacheHurt, true
	}
	sock := w.cfg.socket(c.m)
	if c.saturated(sock) {
		return BandwidthHurt, true
	}
	// hysteresis: the open bandwidth episode of this victim goes on below the threshold
	if c.ep != nil && c.ep.victim == w.cfg.ID && c.ep.hurt == BandwidthHurt &&
		c.socketBW(sock) > c.opt.SaturationExit*c.opt.Saturation*c.m.MemBWPerSocketMBps*1e6 {
		return BandwidthHurt, true
	}
	return 0, false
}

func (c *Controller) wmu() float64 {
	var s, wt []float64
	for _, id := range c.ids {
		w := c.ws[id]
		if w.observed {
			s = append(s, w.slowdown())
			wt = append(wt, w.cfg.Weight)
		}
	}
	if len(s) == 0 {
		return 0
	}
	return metric.WeightedMaxUnfairness(s, wt)
}
