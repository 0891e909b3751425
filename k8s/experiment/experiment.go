// Package experiment is the pure part of the cluster-scale placement experiment: a seeded
// trace of pods with Bubble-Up profiles, the metrics of a placement (predicted slowdown per
// tenant, priority tenants over target), and colo's own simulation of where its scheduler
// profile puts each pod. The kwok run (cmd/colo-kube experiment) is the ground truth for
// the real scheduler's decisions; this simulator predicts them.
package experiment

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"colo/k8s/placement"
)

// Pod is one pod of the trace, in arrival order.
type Pod struct {
	Name     string  `json:"name"`
	Profile  string  `json:"profile"`
	Class    string  `json:"class"`
	Target   float64 `json:"target,omitempty"`
	MilliCPU int64   `json:"milliCPU"`
}

// Trace is the experiment's input: nodes of equal capacity and pods in arrival order.
type Trace struct {
	Seed         uint64   `json:"seed"`
	Nodes        []string `json:"nodes"`
	NodeMilliCPU int64    `json:"nodeMilliCPU"`
	Pods         []Pod    `json:"pods"`
}

// Shares of the classes in a generated trace, and the target of priority pods.
const (
	PriorityShare   = 0.25
	BestEffortShare = 0.25
	PriorityTarget  = 0.8
)

// Generate makes a trace of nPods pods over nNodes nodes of 4 CPUs; each pod asks for one
// CPU and gets a profile drawn uniformly from profiles and a class (25 % priority with
// target 0.8, 50 % batch, 25 % best-effort), all from the seed.
func Generate(seed uint64, nNodes, nPods int, profiles []string) Trace {
	r := rand.New(rand.NewPCG(seed, 0x636f6c6f))
	t := Trace{Seed: seed, NodeMilliCPU: 4000}
	for i := range nNodes {
		t.Nodes = append(t.Nodes, fmt.Sprintf("kwok-node-%04d", i))
	}
	for i := range nPods {
		p := Pod{Name: fmt.Sprintf("tenant-%04d", i), Profile: profiles[r.IntN(len(profiles))], Class: "batch", MilliCPU: 1000}
		switch u := r.Float64(); {
		case u < PriorityShare:
			p.Class, p.Target = "priority", PriorityTarget
		case u < PriorityShare+BestEffortShare:
			p.Class = "best-effort"
		}
		t.Pods = append(t.Pods, p)
	}
	return t
}

// Result is the outcome of one placement of the trace.
type Result struct {
	PodsPlaced         int     `json:"pods_placed"`
	MeanPredSlowdown   float64 `json:"mean_pred_slowdown"`
	P90PredSlowdown    float64 `json:"p90_pred_slowdown"`
	WorstPredSlowdown  float64 `json:"worst_pred_slowdown"`
	PriorityOverTarget int     `json:"priority_over_target"`
}

// Evaluate computes the metrics of a placement (pod name → node; pods missing or with ""
// were not placed). Each placed pod's predicted slowdown is 1/P̂ next to all the other
// pods on its node (placement.NodePerfs: Bubble-Up with Govindan's reduction); a priority
// pod is over target when P̂ < its target. P90 is the nearest-rank percentile.
func Evaluate(t Trace, lib *placement.Library, where map[string]string) Result {
	byNode := map[string][]int{}
	for i, p := range t.Pods {
		if n := where[p.Name]; n != "" {
			byNode[n] = append(byNode[n], i)
		}
	}
	var slow []float64
	res := Result{}
	nodes := slices.Sorted(maps.Keys(byNode))
	for _, n := range nodes {
		idx := byNode[n]
		ts := make([]placement.Tenant, len(idx))
		for k, i := range idx {
			p := t.Pods[i]
			ts[k] = lib.Tenant(p.Name, p.Class, p.Target, p.Profile)
		}
		for k, perf := range placement.NodePerfs(ts) {
			slow = append(slow, 1/perf)
			if ts[k].Class == "priority" && ts[k].Target > 0 && perf < ts[k].Target {
				res.PriorityOverTarget++
			}
		}
	}
	res.PodsPlaced = len(slow)
	if len(slow) == 0 {
		return res
	}
	sort.Float64s(slow)
	sum := 0.0
	for _, s := range slow {
		sum += s
	}
	res.MeanPredSlowdown = round(sum / float64(len(slow)))
	res.P90PredSlowdown = round(slow[int(math.Ceil(0.9*float64(len(slow))))-1])
	res.WorstPredSlowdown = round(slow[len(slow)-1])
	return res
}

func round(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// SimulateColo places the trace in arrival order the way colo's scheduler profile does: a
// node is feasible when the pod's CPU fits and no priority tenant would go below its
// target (placement.Evaluate's violation); among feasible nodes the lowest cost wins, ties
// broken by placement.Rank with the trace's seed. Pods with no feasible node stay pending.
func SimulateColo(t Trace, lib *placement.Library) map[string]string {
	where := map[string]string{}
	free := map[string]int64{}
	res := map[string][]placement.Tenant{}
	for _, n := range t.Nodes {
		free[n] = t.NodeMilliCPU
	}
	for _, p := range t.Pods {
		pt := lib.Tenant(p.Name, p.Class, p.Target, p.Profile)
		var names []string
		var costs []float64
		for _, n := range t.Nodes {
			if free[n] < p.MilliCPU {
				continue
			}
			e := placement.Evaluate(res[n], pt)
			if e.Violation != "" {
				continue
			}
			names, costs = append(names, n), append(costs, e.Cost)
		}
		if len(names) == 0 {
			continue
		}
		best := names[placement.Rank(names, costs, t.Seed)[0]]
		where[p.Name] = best
		free[best] -= p.MilliCPU
		res[best] = append(res[best], pt)
	}
	return where
}

// SimulateSpread places the trace the way the default scheduler's resource scoring does
// on identical nodes (least allocated first), ties broken by a seeded random draw: a model
// of the 'default' arm, used only to check the experiment's setup without a cluster.
func SimulateSpread(t Trace) map[string]string {
	r := rand.New(rand.NewPCG(t.Seed, 1))
	where := map[string]string{}
	free := map[string]int64{}
	for _, n := range t.Nodes {
		free[n] = t.NodeMilliCPU
	}
	for _, p := range t.Pods {
		var best []string
		var most int64 = -1
		for _, n := range t.Nodes {
			switch f := free[n]; {
			case f < p.MilliCPU:
			case f > most:
				most, best = f, []string{n}
			case f == most:
				best = append(best, n)
			}
		}
		if len(best) == 0 {
			continue
		}
		n := best[r.IntN(len(best))]
		where[p.Name] = n
		free[n] -= p.MilliCPU
	}
	return where
}
