package core

import (
	"fmt"
	"math/bits"

	"colo/sched"
)

// Static requests (colo.io/llc-ways, colo.io/mba) take a container out of the policy's
// hands: the core allocates it as asked with the same accountant the schedulers use
// (sched.Accountant: a best-fit contiguous run of exclusive ways below system/default's
// reserve, MBA from the socket's budget), on the socket with the most free ways, and
// tells the policy those ways are taken (Observation.CLOS: foreign to it, as other
// agents' ways are), so neither hands out the other's ways. The policies pack their
// allocations from way 0 up, so static runs are fitted from the top down (just below
// system/default's reserve): the static accountant counts ways in reverse order
// (rev), with the reserve passed as claimed ways. An MBA-only request throttles
// the container in a control group holding system/default's ways (shared, not exclusive).
// A request that does not fit waits, in system/default, until ways are free.

// StateStatic is a container allocated by its labels, not by the policy.
const StateStatic = "static"

func isStatic(r Request) bool { return r.Ways > 0 || r.MBA > 0 }

// SetForeign gives the core the ways other agents' groups claim per socket
// (plan.Budgets): neither the policy nor a static request gets them.
func (c *Core) SetForeign(f []uint64) { c.foreign = append([]uint64(nil), f...) }

// policyMasks is the union of the policy's allocations on socket s.
func (c *Core) policyMasks(s int) uint64 {
	var m uint64
	for _, mb := range c.byID {
		if mb.State == StateRunning && mb.Socket == s {
			m |= mb.Mask
		}
	}
	return m
}

// allocateStatic gives the waiting static requests their ways (ways other agents claim
// and the policy's are not free).
func (c *Core) allocateStatic(logf func(string, ...any)) {
	for _, mb := range c.Members() {
		if mb.State != StateStatic || mb.Req.Ways == 0 || mb.Mask != 0 {
			continue
		}
		best, free := -1, -1
		for s := 0; s < c.m.Sockets; s++ {
			var foreign uint64
			if s < len(c.foreign) {
				foreign = c.foreign[s]
			}
			c.static.Limit(s, sched.CLOSBudget{Foreign: c.rev(foreign | c.policyMasks(s) | c.reserve)})
			if fit, _ := c.static.Fit(s, mb.Req.Ways, mb.Req.MBA); fit && c.static.FreeWays(s) > free {
				best, free = s, c.static.FreeWays(s)
			}
		}
		if best < 0 {
			why := fmt.Sprintf("waiting for %d free contiguous ways", mb.Req.Ways)
			if mb.Reason != why {
				mb.Reason = why
				logf("%s: static request of %d ways (MBA %d) does not fit now; it waits in system/default", mb.Name, mb.Req.Ways, mb.Req.MBA)
			}
			continue
		}
		g, err := c.static.Allocate(mb.ID, best, mb.Req.Ways, mb.Req.MBA)
		if err != nil {
			mb.Reason = err.Error()
			continue
		}
		mb.Socket, mb.Mask, mb.MBA, mb.Reason = g.Socket, c.rev(g.Mask), g.MBA, ""
		c.dirty = true
		// the mask the container's group gets (the accountant counts ways from the top)
		logf("%s: static request: %d ways %#x on socket %d, MBA %d", mb.Name, bits.OnesCount64(mb.Mask), mb.Mask, g.Socket, g.MBA)
	}
}

// rev reverses a mask over the machine's ways (way i ↔ way ways−1−i).
func (c *Core) rev(m uint64) uint64 {
	return bits.Reverse64(m) >> (64 - c.m.LLC.Ways)
}

// policyBudget is what the policy is told of the mount: the ways other agents and the
// static requests hold are not its to give (CLOSID scarcity is left to the group planner,
// which degrades: see apply.go), so the budget of control groups is unlimited.
func (c *Core) policyBudget() []sched.CLOSBudget {
	out := make([]sched.CLOSBudget, c.m.Sockets)
	held := false
	for s := range out {
		if s < len(c.foreign) {
			out[s].Foreign = c.foreign[s]
		}
		for _, mb := range c.byID {
			if mb.State == StateStatic && mb.Req.Ways > 0 && mb.Socket == s {
				out[s].Foreign |= mb.Mask
			}
		}
		held = held || out[s].Foreign != 0
	}
	if !held {
		return nil // nothing held elsewhere: the policy's own view, as before
	}
	return out
}

// staticTarget is where a static container goes: its ways and MBA, or for an MBA-only
// request system/default's mask with its MBA.
func (c *Core) staticTarget(mb *Member) Target {
	t := Target{Socket: mb.Socket, Mask: mb.Mask, MBA: mb.MBA}
	if mb.Req.Ways == 0 && mb.Req.MBA > 0 {
		t.Mask, t.MBA = c.def[mb.Socket], mb.Req.MBA
	}
	return t
}
