package placement

import "fmt"

// SocketModel is one socket (one LLC and memory-bus domain) of a node as the scheduler
// sees it: its tenants, the sum of their contentiousness scores, each tenant's predicted
// slowdown before any new pod (1/P̂), and the pod CPU it has left. Built once per node
// change, it evaluates a pod with one curve lookup per tenant and no allocation.
type SocketModel struct {
	ID        int
	FreeMilli int64
	sum       float64
	ts        []Tenant
	before    []float64
}

func newSocket(id int, free int64, ts []Tenant) SocketModel {
	s := SocketModel{ID: id, FreeMilli: free, ts: ts, before: make([]float64, len(ts))}
	for _, t := range ts {
		s.sum += t.score()
	}
	for i, t := range ts {
		s.before[i] = 1 / t.PerfNextTo(s.sum-t.score())
	}
	return s
}

// Tenants returns the socket's tenants.
func (s *SocketModel) Tenants() []Tenant { return s.ts }

// eval is Evaluate on the socket's tenants: Eval's cost formula, with the residents'
// slowdowns before the pod precomputed. The violation message is built only when explain
// is set (ok says whether there is one), so that the scheduler's hot path allocates nothing.
func (s *SocketModel) eval(p Tenant, explain bool) (e Eval, ok bool) {
	e.PodPerf = p.PerfNextTo(s.sum)
	if p.Known {
		e.Cost += Weight(p.Class) * (1/e.PodPerf - 1)
	}
	ok = true
	if p.Class == "priority" && p.Target > 0 && e.PodPerf < p.Target {
		ok = false
		if explain {
			e.Violation = fmt.Sprintf("%s (priority) would run at %.3f of isolated performance, below its target %.3g", p.Name, e.PodPerf, p.Target)
		}
	}
	ps := p.score()
	if ps == 0 {
		return e, ok // the residents see no new pressure
	}
	for i, r := range s.ts {
		if !r.Known {
			continue
		}
		after := 1 / r.PerfNextTo(s.sum-r.score()+ps)
		e.Cost += Weight(r.Class) * (after - s.before[i])
		if ok && r.Class == "priority" && r.Target > 0 && 1/after < r.Target && after > s.before[i] {
			ok = false
			if explain {
				e.Violation = fmt.Sprintf("resident %s (priority) would drop to %.3f of isolated performance, below its target %.3g", r.Name, 1/after, r.Target)
			}
		}
	}
	return e, ok
}

// NodeModel is a node's sockets. A tenant whose socket is unknown (-1) is counted on every
// socket (it may share any of them).
type NodeModel struct {
	Sockets []SocketModel
}

// NewNodeModel builds the model of a node with nSockets sockets of socketMilli pod CPU
// each; tenant i is on sockets[i] (-1: unknown) and uses milli[i] CPU.
func NewNodeModel(nSockets int, socketMilli int64, ts []Tenant, sockets []int, milli []int64) *NodeModel {
	nSockets = max(1, nSockets)
	per := make([][]Tenant, nSockets)
	free := make([]int64, nSockets)
	for s := range free {
		free[s] = socketMilli
	}
	for i, t := range ts {
		s := sockets[i]
		if s < 0 || s >= nSockets {
			for k := range per {
				per[k] = append(per[k], t)
			}
			continue
		}
		per[s] = append(per[s], t)
		free[s] -= milli[i]
	}
	m := &NodeModel{Sockets: make([]SocketModel, nSockets)}
	for s := range per {
		m.Sockets[s] = newSocket(s, free[s], per[s])
	}
	return m
}

// Best returns the socket where placing p (milli CPU) costs least among the sockets with
// room where no priority tenant would fall below its target (ties: the lower socket id),
// and that placement's cost; ok is false when no socket qualifies. No allocation.
func (m *NodeModel) Best(p Tenant, milli int64) (socket int, cost float64, ok bool) {
	socket = -1
	for i := range m.Sockets {
		s := &m.Sockets[i]
		if s.FreeMilli < milli {
			continue
		}
		e, fine := s.eval(p, false)
		if fine && (socket < 0 || e.Cost < cost) {
			socket, cost = s.ID, e.Cost
		}
	}
	return socket, cost, socket >= 0
}

// Cheapest returns the least cost of placing p on any socket, with room or not, targets
// or not (how bad the node is, for a caller that scores nodes the filter refused).
func (m *NodeModel) Cheapest(p Tenant, milli int64) float64 {
	best, found := 0.0, false
	for pass := range 2 {
		for i := range m.Sockets {
			s := &m.Sockets[i]
			if pass == 0 && s.FreeMilli < milli {
				continue
			}
			if e, _ := s.eval(p, false); !found || e.Cost < best {
				best, found = e.Cost, true
			}
		}
		if found {
			break
		}
	}
	return best
}

// Why explains why no socket of the node takes p (Best returned ok false).
func (m *NodeModel) Why(p Tenant, milli int64) string {
	for i := range m.Sockets {
		s := &m.Sockets[i]
		if s.FreeMilli < milli {
			continue
		}
		if e, _ := s.eval(p, true); e.Violation != "" {
			return e.Violation
		}
	}
	return fmt.Sprintf("no socket has %dm CPU left for %s", milli, p.Name)
}
