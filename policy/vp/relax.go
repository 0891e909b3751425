// Relaxation of kept throttles (most recent first, one step, pinned after a
// repercussion).

package vp

import (
	"maps"
	"math"
	"slices"
	"time"
)

func (c *Controller) unpin(k *kept) {
	k.pinned = false
	delete(c.relaxed, keyOf(k.act))
}

// drop forgets a kept throttle.
func (c *Controller) drop(k *kept) {
	for i, x := range c.kept {
		if x == k {
			c.kept = append(c.kept[:i], c.kept[i+1:]...)
			return
		}
	}
}

// relaxWindow runs one period of a relaxation's window; it reports whether the period ends
// here (window still open, or the relaxation just reverted).
func (c *Controller) relaxWindow(p *pending, d *Decision) bool {
	c.charge(p, true)
	p.left--
	if len(p.charged) > 0 {
		// the hurt is back: restore the throttle at once and keep it until conditions change
		c.pend = nil
		undo := p.act
		undo.Reverted = true
		undo.Repercussions = slices.Sorted(maps.Keys(p.charged))
		if t, ok := c.ws[undo.Target]; ok {
			setRung(undo.Kind, &t.cfg, undo.Before)
		}
		// every step of this throttle is needed: the older steps of the same rung on the
		// same target are pinned too (else the next relaxation would step the same setting)
		for _, k := range c.kept {
			if keyOf(k.act) == keyOf(undo) {
				k.pinned = true
			}
		}
		d.Undone = append(d.Undone, undo)
		c.history = append(c.history, undo)
		// the restored throttle takes a window to act (lines refill) before the ladder may
		// read the victim's hurt as a new episode
		c.pend = &pending{act: undo, left: c.opt.Window, settle: true}
		return true
	}
	if p.left > 0 {
		return true
	}
	c.pend = nil
	c.drop(p.relax)
	c.relaxed[keyOf(p.act)] = true
	return false
}

// setRung copies the setting of rung k from src into dst.
func setRung(k Kind, dst *Config, src Config) {
	switch k {
	case CATConfine:
		dst.Mask = src.Mask
	case MBAStep:
		dst.MBA = src.MBA
	case CPUQuota:
		dst.Quota = src.Quota
	}
}

// relax steps back the most recent kept throttle that is not pinned and whose victim and
// target socket have been calm for RelaxAfter periods, and opens its window.
func (c *Controller) relax(now time.Duration, d *Decision) {
	if c.opt.RelaxAfter == 0 || c.pend != nil {
		return
	}
	for i := len(c.kept) - 1; i >= 0; i-- {
		k := c.kept[i]
		t, ok := c.ws[k.act.Target]
		if !ok || k.pinned || !c.calm(k, t) {
			continue
		}
		after, ok := c.stepBack(k, t)
		if !ok { // nothing left to relax (e.g. a move reset the mask)
			c.drop(k)
			continue
		}
		act := Action{At: now, Kind: k.act.Kind, Target: t.cfg.ID, Victim: k.act.Victim, Hurt: k.act.Hurt,
			Relax: true, Before: cloneCfg(t.cfg), After: after}
		t.cfg = after
		d.Actions = append(d.Actions, act)
		c.history = append(c.history, act)
		p := c.newPending(act)
		p.relax = k
		sock := t.cfg.socket(c.m)
		for _, id := range c.ids {
			if c.ws[id].cfg.socket(c.m) == sock || id == k.act.Victim {
				p.watch[id] = true
			}
		}
		c.pend = p
		return
	}
}

// calm: the throttle's victim and every workload of its target's socket have gone
// RelaxAfter periods without hurt. Workloads the controller acted on are left out: their
// hurt is its own doing (a throttled target is slower than its best by design).
func (c *Controller) calm(k *kept, t *workload) bool {
	sock := t.cfg.socket(c.m)
	for _, id := range c.ids {
		w := c.ws[id]
		if id != k.act.Victim && (w.cfg.socket(c.m) != sock || c.acted[id]) {
			continue
		}
		if w.observed && w.quiet < c.opt.RelaxAfter {
			return false
		}
	}
	return true
}

// stepBack is the target's configuration with the throttle k stepped back one step.
func (c *Controller) stepBack(k *kept, t *workload) (Config, bool) {
	cfg := cloneCfg(t.cfg)
	switch k.act.Kind {
	case CATConfine:
		if cfg.Mask != k.act.After.Mask {
			return cfg, false
		}
		cfg.Mask = k.act.Before.Mask
	case MBAStep:
		if c.m.MBA == nil || cfg.MBA >= c.m.MBA.Max {
			return cfg, false
		}
		cfg.MBA = min(c.m.MBA.Max, cfg.MBA+c.m.MBA.Gran)
	case CPUQuota:
		if cfg.Quota >= 1 {
			return cfg, false
		}
		cfg.Quota = math.Min(1, math.Round((cfg.Quota+c.opt.QuotaStep)*1000)/1000)
	default:
		return cfg, false
	}
	return cfg, true
}
