// The action ladder: episodes and repercussion windows, aggressors, choosing and
// applying an action.

package vp

import (
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"colo/cbm"
)

// control runs the repercussion window, the ladder and the relaxation of kept throttles.
func (c *Controller) control(now time.Duration, d *Decision) {
	// a phase change of a throttle's victim or target changes the conditions it was kept
	// under, and those of a banned action
	for b := range c.banned {
		for _, id := range []string{b[0], b[2]} {
			if w, ok := c.ws[id]; ok && w.newPhase {
				delete(c.banned, b)
			}
		}
	}
	for _, w := range c.ws {
		if w.newPhase {
			clear(c.exhausted) // the ladders that ran out may have new options
			break
		}
	}
	for _, k := range c.kept {
		for _, id := range []string{k.act.Target, k.act.Victim} {
			if w, ok := c.ws[id]; ok && w.newPhase {
				c.unpin(k)
			}
		}
	}
	if p := c.pend; p != nil && p.settle {
		p.left--
		if p.left > 0 {
			return
		}
		c.pend = nil
	} else if p != nil && p.relax != nil {
		if c.relaxWindow(p, d) {
			return
		}
	} else if p != nil {
		c.charge(p, false)
		p.left--
		if p.left > 0 {
			return
		}
		c.pend = nil
		if len(p.charged) > 0 && !(c.wmu() < p.wmu-c.opt.Epsilon) {
			undo := p.act
			undo.Reverted = true
			undo.Repercussions = slices.Sorted(maps.Keys(p.charged))
			if t, ok := c.ws[undo.Target]; ok {
				t.cfg = undo.Before
			}
			c.drop(p.k)
			c.ep.excluded[[2]string{undo.Kind.String(), undo.Target}] = true
			c.banned[[3]string{undo.Victim, undo.Kind.String(), undo.Target}] = true
			d.Undone = append(d.Undone, undo)
			c.history = append(c.history, undo)
		}
	}
	for id := range c.exhausted {
		if w, ok := c.ws[id]; !ok || !w.hurtState {
			delete(c.exhausted, id)
		}
	}
	// Episode: continue while its victim is hurt; otherwise close it and look for a new one.
	if c.ep != nil {
		v, ok := c.ws[c.ep.victim]
		if !ok {
			c.ep = nil
		} else if hk, hurt := c.hurtKind(v); !hurt && len(d.Undone) == 0 {
			c.ep = nil
		} else if hurt {
			c.ep.hurt = hk
		}
	}
	if c.ep == nil {
		var best *workload
		var bestHK HurtKind
		bestD := 0.0
		for _, id := range c.ids {
			w := c.ws[id]
			hk, hurt := c.hurtKind(w)
			if !hurt || c.exhausted[id] {
				continue
			}
			dg := w.cfg.Weight * (1 - 1/w.slowdown())
			if best == nil || dg > bestD {
				best, bestHK, bestD = w, hk, dg
			}
		}
		if best == nil {
			c.relax(now, d)
			return
		}
		c.ep = &episode{victim: best.cfg.ID, hurt: bestHK, excluded: map[[2]string]bool{}}
	}
	act, ok := c.choose(c.ep)
	if !ok {
		// Nothing left on the ladder for this victim: give up on it until its hurt clears,
		// so that other victims are served.
		c.exhausted[c.ep.victim] = true
		c.ep = nil
		return
	}
	act.At = now
	c.ws[act.Target].cfg = act.After
	d.Actions = append(d.Actions, act)
	c.history = append(c.history, act)
	c.acted[act.Target] = true
	p := c.newPending(act)
	if throttle(act.Kind) {
		// a throttle taken again after its relaxation is pinned: the relaxation was premature
		p.k = &kept{act: act, pinned: c.relaxed[keyOf(act)]}
		c.kept = append(c.kept, p.k)
	}
	socks := map[int]bool{act.Before.socket(c.m): true, act.After.socket(c.m): true}
	for _, id := range c.ids {
		if socks[c.ws[id].cfg.socket(c.m)] {
			p.watch[id] = true
		}
	}
	c.pend = p
}

func (c *Controller) newPending(act Action) *pending {
	p := &pending{act: act, left: c.opt.Window, before: map[string]bool{}, rows: map[string]Reuse{},
		wmu: c.wmu(), charged: map[string]bool{}, watch: map[string]bool{}}
	for _, id := range c.ids {
		w := c.ws[id]
		p.before[id] = w.hurtState
		p.rows[id] = w.state.Row()
	}
	return p
}

// charge records the watched workloads that became hurt or moved down a row since the
// window opened. The action's target is never charged, nor its victim unless withVictim.
func (c *Controller) charge(p *pending, withVictim bool) {
	for id := range p.watch {
		w, ok := c.ws[id]
		if !ok || id == p.act.Target || (id == p.act.Victim && !withVictim) || !w.observed {
			continue
		}
		if (w.hurtState && !p.before[id]) || w.state.Row() > p.rows[id] {
			p.charged[id] = true
		}
	}
}

func throttle(k Kind) bool { return k == CATConfine || k == MBAStep || k == CPUQuota }

func keyOf(a Action) [2]string { return [2]string{a.Kind.String(), a.Target} }

// aggressors ranks the candidate aggressors of an episode.
func (c *Controller) aggressors(ep *episode) []*workload {
	v := c.ws[ep.victim]
	var out []*workload
	for _, id := range c.ids {
		w := c.ws[id]
		if id == ep.victim || !w.observed || !w.state.Intensive() || w.cfg.Weight > v.cfg.Weight {
			continue
		}
		if ep.hurt == CacheHurt && w.cfg.domain(c.m) != v.cfg.domain(c.m) {
			continue
		}
		if ep.hurt == BandwidthHurt && w.cfg.socket(c.m) != v.cfg.socket(c.m) {
			continue
		}
		out = append(out, w)
	}
	key := func(w *workload) float64 {
		if ep.hurt == CacheHurt {
			return w.llcRate
		}
		return w.bwRate
	}
	sort.SliceStable(out, func(i, j int) bool { return key(out[i]) > key(out[j]) })
	return out
}

func (c *Controller) ladder(h HurtKind) []Kind {
	all := []Kind{MBAStep, CPUQuota, SocketMove}
	if h == CacheHurt {
		all = []Kind{CATConfine, CPUQuota, CoreMove, SocketMove}
	}
	out := all[:0:0]
	for _, k := range all {
		skip := false
		for _, s := range c.opt.Skip {
			skip = skip || s == k
		}
		if !skip {
			out = append(out, k)
		}
	}
	return out
}

// choose returns the cheapest applicable action of the episode.
func (c *Controller) choose(ep *episode) (Action, bool) {
	ag := c.aggressors(ep)
	for _, k := range c.ladder(ep.hurt) {
		for _, a := range ag {
			if ep.excluded[[2]string{k.String(), a.cfg.ID}] || c.banned[[3]string{ep.victim, k.String(), a.cfg.ID}] {
				continue
			}
			if after, ok := c.apply(k, a, c.ws[ep.victim]); ok {
				return Action{Kind: k, Target: a.cfg.ID, Victim: ep.victim, Hurt: ep.hurt, Before: cloneCfg(a.cfg), After: after}, true
			}
		}
	}
	return Action{}, false
}

func cloneCfg(c Config) Config {
	c.Cores = append([]int(nil), c.Cores...)
	return c
}

// apply computes the configuration of a after rung k, or false if k does not apply.
func (c *Controller) apply(k Kind, a, v *workload) (Config, bool) {
	cfg := cloneCfg(a.cfg)
	ways := c.m.LLC.Ways
	switch k {
	case CATConfine:
		m := uint64(cbm.Run(ways-c.opt.ConfineWays, c.opt.ConfineWays))
		if cfg.Mask == m {
			return cfg, false
		}
		cfg.Mask = m
	case MBAStep:
		if c.m.MBA == nil || cfg.MBA-c.m.MBA.Gran < c.opt.MBAFloor {
			return cfg, false
		}
		cfg.MBA -= c.m.MBA.Gran
	case CPUQuota:
		q := math.Round((cfg.Quota-c.opt.QuotaStep)*1000) / 1000
		if q < c.opt.QuotaFloor-1e-9 {
			return cfg, false
		}
		cfg.Quota = q
	case CoreMove:
		// Only useful when the aggressor runs on SMT siblings of the victim's cores.
		n := c.m.Cores()
		if c.m.ThreadsPerCore < 2 {
			return cfg, false
		}
		vphys := map[int]bool{}
		for _, x := range v.cfg.Cores {
			vphys[x%n] = true
		}
		busy := c.busy()
		dom := cfg.domain(c.m)
		moved := false
		for i, x := range cfg.Cores {
			if !vphys[x%n] {
				continue
			}
			found := false
			for y := 0; y < c.logicalCPUs() && !found; y++ {
				if _, used := busy[y]; used || c.m.DomainOfCore(y%n) != dom || vphys[y%n] {
					continue
				}
				busy[y] = cfg.ID
				cfg.Cores[i] = y
				found, moved = true, true
			}
			if !found {
				return a.cfg, false
			}
		}
		if !moved {
			return cfg, false
		}
		sort.Ints(cfg.Cores)
	case SocketMove:
		busy := c.busy()
		cur := cfg.socket(c.m)
		per := c.m.CoresPerSocket
		best, bestFree := -1, 0
		for s := 0; s < c.m.Sockets; s++ {
			if s == cur {
				continue
			}
			free := 0
			for x := s * per; x < (s+1)*per; x++ {
				if _, used := busy[x]; !used {
					free++
				}
			}
			if free >= len(cfg.Cores) && free > bestFree {
				best, bestFree = s, free
			}
		}
		if best < 0 {
			return cfg, false
		}
		var nc []int
		for x := best * per; x < (best+1)*per && len(nc) < len(cfg.Cores); x++ {
			if _, used := busy[x]; !used {
				nc = append(nc, x)
			}
		}
		cfg.Cores = nc
		cfg.Mask = c.m.FullMask()
	default:
		return cfg, false
	}
	return cfg, true
}
