package sched

import (
	"fmt"
	"maps"
	"slices"
)

func init() {
	f := func(env Env) (Scheduler, error) {
		if len(env.Config.Options) > 0 {
			keys := slices.Sorted(maps.Keys(env.Config.Options))
			return nil, fmt.Errorf("least-loaded takes no scheduler.options; remove %v", keys)
		}
		return &LeastLoaded{machine: env}, nil
	}
	Register("least-loaded", f)
	// "default" is the thesis's name for its baseline implementation (Listing 4.1).
	Register("default", f)
}

// LeastLoaded is the thesis baseline (Algorithm 4, seed000.md §2.4): strict FIFO without
// backfilling and without priority distinction; the head job goes to the socket with the
// fewest committed cores among those where it fits; no RDT (everything stays in
// system/default).
type LeastLoaded struct {
	machine Env
}

// Name implements Scheduler.
func (l *LeastLoaded) Name() string { return "least-loaded" }

// Tick implements Scheduler.
func (l *LeastLoaded) Tick(obs *Observation) Decisions {
	var d Decisions
	free := CopyFree(obs.FreeCPUs)
	for _, j := range obs.Queue {
		if why := NeverFits(j, l.machine.Machine); why != "" {
			d.Reject = append(d.Reject, Rejection{Job: j.ID, Reason: why})
			continue
		}
		best := -1
		for s := range free {
			if !Fits(j, s, free) {
				continue
			}
			// committed cores = cores per socket − free cores
			if best < 0 || len(free[s]) > len(free[best]) {
				best = s
			}
		}
		if best < 0 {
			break // strict FIFO: wait for the next tick
		}
		Take(j, best, free)
		d.Place = append(d.Place, Placement{Job: j.ID, Socket: best})
	}
	return d
}
