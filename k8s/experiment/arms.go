package experiment

import (
	"math/rand/v2"

	"colo/k8s/placement"
	"colo/k8s/twin"
)

// simNode is a node as the simulated schedulers track it.
type simNode struct {
	name  string
	free  int64
	pods  map[string]int // pod → index in ts
	ts    []placement.Tenant
	socks []int
	milli []int64
	model *placement.NodeModel // nil: rebuild
}

type simCluster struct {
	nodes   []*simNode
	where   map[string]*simNode
	pending []ChurnPod
}

func newSimCluster(tr ChurnTrace) *simCluster {
	c := &simCluster{where: map[string]*simNode{}}
	for _, n := range tr.Nodes {
		c.nodes = append(c.nodes, &simNode{name: n, free: tr.NodeMilliCPU, pods: map[string]int{}})
	}
	return c
}

// next returns the pods to try this tick: the ones left pending, then the arrivals.
func (c *simCluster) next(arriving []ChurnPod, finished []string) []ChurnPod {
	for _, name := range finished {
		n := c.where[name]
		if n == nil {
			continue
		}
		i := n.pods[name]
		last := len(n.ts) - 1
		n.free += n.milli[i]
		n.ts[i], n.socks[i], n.milli[i] = n.ts[last], n.socks[last], n.milli[last]
		n.ts, n.socks, n.milli = n.ts[:last], n.socks[:last], n.milli[:last]
		for k, v := range n.pods {
			if v == last {
				n.pods[k] = i
			}
		}
		delete(n.pods, name)
		delete(c.where, name)
		n.model = nil
	}
	q := append(c.pending, arriving...)
	c.pending = nil
	return q
}

func (c *simCluster) bind(n *simNode, p ChurnPod, t placement.Tenant, socket int) {
	n.pods[p.Name] = len(n.ts)
	n.ts, n.socks, n.milli = append(n.ts, t), append(n.socks, socket), append(n.milli, p.MilliCPU)
	n.free -= p.MilliCPU
	n.model = nil
	c.where[p.Name] = n
}

// ColoSim places pods the way colo's scheduler profile does (ColoInterference as the only
// scorer): among the nodes with the pod's CPU free, each node's best socket
// (placement.NodeModel.Best: room on the socket, no priority tenant below its target,
// least cost); the node of least cost wins, ties broken by placement.Tiebreak with the
// seed. Pods with no such node stay pending and are tried again the next tick, before the
// new arrivals.
type ColoSim struct {
	Lib     *placement.Library
	Seed    uint64
	Sockets int // sockets per node (twin.Sockets)
	c       *simCluster
	milli   int64
}

// NewColoSim returns colo's simulated scheduler for the trace.
func NewColoSim(tr ChurnTrace, lib *placement.Library) *ColoSim {
	return &ColoSim{Lib: lib, Seed: tr.Seed, Sockets: twin.Sockets, c: newSimCluster(tr), milli: tr.NodeMilliCPU}
}

// Schedule implements Scheduler.
func (s *ColoSim) Schedule(_ int, arriving []ChurnPod, finished []string) (map[string]Binding, error) {
	out := map[string]Binding{}
	for _, p := range s.c.next(arriving, finished) {
		pt := s.Lib.Tenant(p.Name, p.Class, p.Target, p.Profile)
		var best *simNode
		bestSock, bestCost := -1, 0.0
		for _, n := range s.c.nodes {
			if n.free < p.MilliCPU {
				continue
			}
			if n.model == nil {
				n.model = placement.NewNodeModel(s.Sockets, s.milli/int64(s.Sockets), n.ts, n.socks, n.milli)
			}
			sock, cost, ok := n.model.Best(pt, p.MilliCPU)
			if !ok {
				continue
			}
			if best == nil || cost < bestCost || cost == bestCost && placement.Less(s.Seed, n.name, best.name) {
				best, bestSock, bestCost = n, sock, cost
			}
		}
		if best == nil {
			s.c.pending = append(s.c.pending, p)
			continue
		}
		s.c.bind(best, p, pt, bestSock)
		out[p.Name] = Binding{Node: best.name, Socket: bestSock}
	}
	return out, nil
}

// SpreadSim is a model of the stock scheduler on identical nodes: the least allocated node
// (most CPU free), ties broken by a seeded random draw; no socket choice.
type SpreadSim struct {
	c *simCluster
	r *rand.Rand
}

// NewSpreadSim returns the stock scheduler's model for the trace.
func NewSpreadSim(tr ChurnTrace) *SpreadSim {
	return &SpreadSim{c: newSimCluster(tr), r: rand.New(rand.NewPCG(tr.Seed, 1))}
}

// Schedule implements Scheduler.
func (s *SpreadSim) Schedule(_ int, arriving []ChurnPod, finished []string) (map[string]Binding, error) {
	out := map[string]Binding{}
	var best []*simNode
	for _, p := range s.c.next(arriving, finished) {
		best = best[:0]
		var most int64 = -1
		for _, n := range s.c.nodes {
			switch {
			case n.free < p.MilliCPU:
			case n.free > most:
				most, best = n.free, append(best[:0], n)
			case n.free == most:
				best = append(best, n)
			}
		}
		if len(best) == 0 {
			s.c.pending = append(s.c.pending, p)
			continue
		}
		n := best[s.r.IntN(len(best))]
		s.c.bind(n, p, placement.Tenant{Name: p.Name}, -1)
		out[p.Name] = Binding{Node: n.name, Socket: -1}
	}
	return out, nil
}
