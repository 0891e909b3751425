package experiment

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"colo/k8s/placement"
	"colo/k8s/twin"
)

// ChurnPod is a pod of the churn trace: it arrives at tick Arrive and has Work seconds of
// work (as long as it would run alone on an idle node).
type ChurnPod struct {
	Pod
	Arrive int     `json:"arrive"`
	Work   float64 `json:"work"`
}

// ChurnTrace is the twin experiment's input: twin nodes (twin.NodeMilliCPU each) and pods
// in arrival order.
type ChurnTrace struct {
	Seed         uint64     `json:"seed"`
	Nodes        []string   `json:"nodes"`
	NodeMilliCPU int64      `json:"nodeMilliCPU"`
	Pods         []ChurnPod `json:"pods"`
}

// Churn trace shape: arrivals spread uniformly over ArrivalTicks ticks, work uniform in
// [WorkMin, WorkMax] seconds. With 10 pods per node that keeps about 40 % of the pod cores
// busy at the peak.
const (
	ArrivalTicks = 150
	WorkMin      = 30
	WorkMax      = 150
)

// GenerateChurn makes a churn trace of nPods one-CPU pods over nNodes twin nodes: each pod
// gets an app drawn uniformly from apps, a class (25 % priority with target 0.8, 50 %
// batch, 25 % best-effort), an arrival tick and its work, all from the seed.
func GenerateChurn(seed uint64, nNodes, nPods int, apps []string) ChurnTrace {
	r := rand.New(rand.NewPCG(seed, 0x636f6c6f))
	t := ChurnTrace{Seed: seed, NodeMilliCPU: twin.NodeMilliCPU}
	for i := range nNodes {
		t.Nodes = append(t.Nodes, fmt.Sprintf("kwok-node-%04d", i))
	}
	for i := range nPods {
		p := ChurnPod{Pod: Pod{Name: fmt.Sprintf("tenant-%05d", i), Profile: apps[r.IntN(len(apps))], Class: "batch", MilliCPU: 1000}}
		switch u := r.Float64(); {
		case u < PriorityShare:
			p.Class, p.Target = "priority", PriorityTarget
		case u < PriorityShare+BestEffortShare:
			p.Class = "best-effort"
		}
		p.Arrive = r.IntN(ArrivalTicks)
		p.Work = float64(WorkMin + r.IntN(WorkMax-WorkMin+1))
		t.Pods = append(t.Pods, p)
	}
	sort.SliceStable(t.Pods, func(a, b int) bool { return t.Pods[a].Arrive < t.Pods[b].Arrive })
	return t
}

// Binding is where a scheduler put a pod: a node and, if it chose one, a socket (-1: the
// twin puts the pod on the node's least busy socket).
type Binding struct {
	Node   string
	Socket int
}

// Scheduler is one arm of the twin experiment. Schedule is called once per tick with the
// pods arriving in it (trace order) and the pods that finished in the previous tick; it
// returns the pods it bound in this tick (a pod left pending may be bound on a later tick).
type Scheduler interface {
	Schedule(tick int, arriving []ChurnPod, finished []string) (map[string]Binding, error)
}

// Observer is a Scheduler that looks at the twin after every tick (e.g. to serve its
// measured utilisation to a load-aware scheduler).
type Observer interface {
	Observe(c *twin.Cluster)
}

// Outcome is what the twin measured for one arm (slowdowns are measured lifetimes over
// solo work, twin.Running.Slowdown; percentiles nearest-rank over finished pods).
type Outcome struct {
	PodsPlaced  int `json:"pods_placed"`
	PodsPending int `json:"pods_never_placed"`
	// TwinP50/P90/P99Slowdown are over every finished pod.
	TwinP50Slowdown float64 `json:"twin_p50_slowdown"`
	TwinP90Slowdown float64 `json:"twin_p90_slowdown"`
	TwinP99Slowdown float64 `json:"twin_p99_slowdown"`
	// TwinPriorityMetShare is the share of the trace's priority pods that ran and never
	// dropped below their target in any tick after their first (cold cache).
	TwinPriorityMetShare float64 `json:"twin_priority_met_share"`
	// TwinBEThroughput is the best-effort pods' work over their lifetimes: Σ work / Σ time
	// lived (1: as fast as alone).
	TwinBEThroughput float64 `json:"twin_be_throughput"`
	// NodesUsed is the mean number of nodes running at least one pod, over the ticks in
	// which any pod ran.
	NodesUsed float64 `json:"nodes_used"`
	// PredP90Slowdown is the P90 of the predicted slowdowns (each pod's mean over its
	// life of 1/P̂ next to the pods on its socket, Bubble-Up with the twin's profiles), and
	// PredictorMAE the mean absolute difference between predicted and measured slowdown.
	PredP90Slowdown float64 `json:"pred_p90_slowdown"`
	PredictorMAE    float64 `json:"predictor_mae"`
	Ticks           int     `json:"ticks"`
	// Placements is pod → node/socket ("node/socket"), for comparing arms and runs.
	Placements map[string]string `json:"-"`
}

// RunChurn plays the trace on twin nodes with the scheduler: every tick the pods arriving
// are offered to it, its bindings start on the twin, the twin steps one twin.Tick and the
// pods done leave. It ends when every pod has finished, or when nothing runs, nothing is
// left to arrive and the scheduler bound nothing in the tick (pods left pending count as
// never placed). lib predicts each pod's slowdown for the predictor's error.
func RunChurn(tr ChurnTrace, s Scheduler, lib *placement.Library) (Outcome, error) {
	c, err := twin.NewCluster(tr.Nodes, tr.Seed)
	if err != nil {
		return Outcome{}, err
	}
	byName := map[string]ChurnPod{}
	for _, p := range tr.Pods {
		byName[p.Name] = p
	}
	type life struct {
		pred  float64 // Σ 1/P̂ over ticks
		ticks int
	}
	lives := map[string]*life{}
	tenants := map[string]placement.Tenant{}
	var finished []*twin.Running
	var last []string
	o := Outcome{Placements: map[string]string{}}
	next, usedSum, usedTicks := 0, 0, 0
	for tick := 0; ; tick++ {
		var arriving []ChurnPod
		for next < len(tr.Pods) && tr.Pods[next].Arrive <= tick {
			arriving = append(arriving, tr.Pods[next])
			next++
		}
		b, err := s.Schedule(tick, arriving, last)
		if err != nil {
			return o, fmt.Errorf("tick %d: %w", tick, err)
		}
		for _, name := range slices.Sorted(maps.Keys(b)) {
			p, ok := byName[name]
			if !ok {
				return o, fmt.Errorf("tick %d: scheduler bound unknown pod %s", tick, name)
			}
			r, err := c.Place(twin.Pod{Name: p.Name, App: p.Profile, Class: p.Class, Target: p.Target, Work: p.Work}, b[name].Node, b[name].Socket)
			if err != nil {
				return o, fmt.Errorf("tick %d: %w", tick, err)
			}
			o.Placements[name] = fmt.Sprintf("%s/%d", r.Node, r.Socket)
			tenants[name] = lib.Tenant(p.Name, p.Class, p.Target, p.Profile)
			lives[name] = &life{}
		}
		if c.Running() == 0 && next == len(tr.Pods) && len(b) == 0 {
			o.Ticks = tick
			break
		}
		// the predictor's view of this tick: every pod next to the others on its socket
		used := 0
		for _, n := range tr.Nodes {
			rs := c.Pods(n)
			if len(rs) == 0 {
				continue
			}
			used++
			for sock := range twin.Sockets {
				var ts []placement.Tenant
				var names []string
				for _, r := range rs {
					if r.Socket == sock {
						ts, names = append(ts, tenants[r.Name]), append(names, r.Name)
					}
				}
				for k, perf := range placement.NodePerfs(ts) {
					l := lives[names[k]]
					l.pred += 1 / perf
					l.ticks++
				}
			}
		}
		if used > 0 {
			usedSum += used
			usedTicks++
		}
		done := c.Step()
		if ob, ok := s.(Observer); ok {
			ob.Observe(c)
		}
		last = last[:0]
		for _, r := range done {
			last = append(last, r.Name)
		}
		finished = append(finished, done...)
	}
	o.PodsPlaced = len(o.Placements)
	o.PodsPending = len(tr.Pods) - o.PodsPlaced
	var slow, pred []float64
	var mae, beWork, beTime float64
	met, prio := 0, 0
	for _, p := range tr.Pods {
		if p.Class == "priority" {
			prio++
		}
	}
	for _, r := range finished {
		s := r.Slowdown()
		slow = append(slow, s)
		l := lives[r.Name]
		ps := l.pred / float64(max(1, l.ticks))
		pred = append(pred, ps)
		mae += math.Abs(ps - s)
		switch r.Class {
		case "priority":
			if r.MinPerf >= r.Target {
				met++
			}
		case "best-effort":
			beWork += r.Work
			beTime += r.Elapsed
		}
	}
	if n := len(slow); n > 0 {
		sort.Float64s(slow)
		sort.Float64s(pred)
		o.TwinP50Slowdown, o.TwinP90Slowdown, o.TwinP99Slowdown = round(rank(slow, 0.5)), round(rank(slow, 0.9)), round(rank(slow, 0.99))
		o.PredP90Slowdown = round(rank(pred, 0.9))
		o.PredictorMAE = round(mae / float64(n))
	}
	if prio > 0 {
		o.TwinPriorityMetShare = round(float64(met) / float64(prio))
	}
	if beTime > 0 {
		o.TwinBEThroughput = round(beWork / beTime)
	}
	if usedTicks > 0 {
		o.NodesUsed = math.Round(10*float64(usedSum)/float64(usedTicks)) / 10
	}
	return o, nil
}

// rank is the nearest-rank percentile of sorted values.
func rank(sorted []float64, q float64) float64 {
	return sorted[max(0, int(math.Ceil(q*float64(len(sorted))))-1)]
}
