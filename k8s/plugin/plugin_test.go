package plugin

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"colo/k8s/nodestate"
	"colo/k8s/placement"
	"colo/k8s/scoring"
)

func pod(name, class, profile string, socket int) *corev1.Pod {
	ann := map[string]string{nodestate.ClassAnnotation: class, nodestate.ProfileAnnotation: profile}
	if class == "priority" {
		ann[nodestate.TargetAnnotation] = "0.8"
	}
	if socket >= 0 {
		ann[nodestate.SocketAnnotation] = fmt.Sprint(socket)
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Annotations: ann},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
}

// cluster publishes n two-socket nodes with perSocket pods per socket (profiles drawn
// round-robin, classes rotating) and returns their NodeInfos.
func cluster(t testing.TB, s *scoring.Scorer, lib *placement.Library, n, perSocket int, now time.Time) []fwk.NodeInfo {
	names := lib.Names()
	classes := []string{"batch", "priority", "best-effort"}
	out := make([]fwk.NodeInfo, n)
	k := 0
	for i := range out {
		name := fmt.Sprintf("node-%04d", i)
		b, err := nodestate.Marshal(nodestate.State{FormatVersion: 1, Node: name, Updated: now, DialsMB: lib.Dials,
			Sockets: []nodestate.Socket{{ID: 0, FreeWays: 11, FreeMBA: 100, CLOSIDsLeft: 15}, {ID: 1, FreeWays: 11, FreeMBA: 100, CLOSIDsLeft: 15}}})
		if err != nil {
			t.Fatal(err)
		}
		s.States.SetAnnotation(name, string(b), true)
		var pods []*corev1.Pod
		for sock := range 2 {
			for range perSocket {
				pods = append(pods, pod(fmt.Sprintf("p%d", k), classes[k%3], names[(7*k)%len(names)], sock))
				k++
			}
		}
		ni := framework.NewNodeInfo(pods...)
		rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourcePods: resource.MustParse("110")}
		ni.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: rl, Capacity: rl}})
		out[i] = ni
	}
	return out
}

// cycle runs one scheduling cycle of the plugin for p: PreFilter, Filter on every node,
// PreScore, Score on the feasible ones, NormalizeScore; it returns the scores.
func cycle(pl *Plugin, p *corev1.Pod, nodes []fwk.NodeInfo, list fwk.NodeScoreList) (fwk.NodeScoreList, fwk.CycleState) {
	ctx := context.Background()
	st := framework.NewCycleState()
	if _, s := pl.PreFilter(ctx, st, p, nodes); !s.IsSuccess() {
		return list, st
	}
	list = list[:0]
	for _, ni := range nodes {
		if s := pl.Filter(ctx, st, p, ni); s.IsSuccess() {
			list = append(list, fwk.NodeScore{Name: ni.Node().Name})
		}
	}
	pl.PreScore(ctx, st, p, nodes)
	k := 0
	for _, ni := range nodes {
		if k < len(list) && list[k].Name == ni.Node().Name {
			list[k].Score, _ = pl.Score(ctx, st, p, ni)
			k++
		}
	}
	pl.NormalizeScore(ctx, st, p, list)
	return list, st
}

// The plugin's cached, per-socket path agrees with the scorer's uncached one (the
// extender's): same feasible nodes, same best node; Reserve records the best socket;
// Filter and Score allocate nothing per node once the nodes' models are built.
func TestPluginMatchesScorer(t *testing.T) {
	lib, err := placement.LoadLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s := scoring.New(lib, scoring.Config{Seed: 3, MaxAge: time.Hour})
	nodes := cluster(t, s, lib, 40, 3, now)
	pl := NewWithScorer(s, 3)
	for i, prof := range lib.Names() {
		p := pod(fmt.Sprintf("new%d", i), "priority", prof, -1)
		list, st := cycle(pl, p, nodes, nil)
		var views []scoring.NodeView
		feasible := map[string]bool{}
		for _, ni := range nodes {
			v := view(ni)
			if s.Filter(p, v) == "" {
				views = append(views, v)
				feasible[v.Name] = true
			}
		}
		if len(list) != len(views) {
			t.Fatalf("%s: plugin feasible on %d nodes, scorer on %d", prof, len(list), len(views))
		}
		if len(views) == 0 {
			continue
		}
		sc, _ := s.Scores(p, views)
		want := ""
		for k, v := range views {
			if sc[k] == placement.MaxScore {
				want = v.Name
			}
		}
		got := ""
		for _, ns := range list {
			if !feasible[ns.Name] {
				t.Fatalf("%s: plugin kept infeasible %s", prof, ns.Name)
			}
			if ns.Score == placement.MaxScore {
				got = ns.Name
			}
		}
		if got != want {
			t.Fatalf("%s: plugin picks %s, scorer %s", prof, got, want)
		}
		pl.Reserve(context.Background(), st, p, got)
		sock, ok := s.Reserved(p.UID)
		var m *scoring.Model
		for _, ni := range nodes {
			if ni.Node().Name == got {
				m = s.BuildModel(view(ni))
			}
		}
		if best, _, _ := m.Best(s.PodTenant(p), 1000); !ok || sock != best {
			t.Fatalf("%s: reserved socket %d %v, best %d", prof, sock, ok, best)
		}
	}
	p := pod("alloc", "batch", lib.Names()[0], -1)
	list := make(fwk.NodeScoreList, 0, len(nodes))
	cycle(pl, p, nodes, list)
	// a cycle allocates a few objects (cycle state, its entry, statuses); none per node
	a := testing.AllocsPerRun(20, func() { cycle(pl, p, nodes, list) })
	if a > 8 {
		t.Fatalf("%v allocations per cycle over %d nodes", a, len(nodes))
	}
}

// One pod's Filter + Score over every node (PreFilter, Filter, PreScore, Score,
// NormalizeScore), with 8 pods per node on two sockets; nodes' models cached (the
// scheduler's steady state: a node's model is rebuilt only when its pods or state change).
// A batch pod passes every node; a priority pod is refused where a target would break
// (each refusal carries its reason: one status and one message). cpu-ns/node is the
// process's CPU time (getrusage), which the machine's load does not inflate.
func benchmarkCycle(b *testing.B, n int, class string) {
	lib, err := placement.LoadLibrary("")
	if err != nil {
		b.Fatal(err)
	}
	s := scoring.New(lib, scoring.Config{Seed: 1, MaxAge: time.Hour})
	nodes := cluster(b, s, lib, n, 4, time.Now())
	pl := NewWithScorer(s, 1)
	p := pod("new", class, "620.omnetpp_s", -1)
	list := make(fwk.NodeScoreList, 0, n)
	cycle(pl, p, nodes, list)
	cpu0 := cpuTime()
	for b.Loop() {
		list, _ = cycle(pl, p, nodes, list)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/node")
	b.ReportMetric(float64(len(list))/float64(n), "feasible-share")
	b.ReportMetric(testing.AllocsPerRun(5, func() { cycle(pl, p, nodes, list) })/float64(n), "allocs/node")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkFilterScore1000Nodes(b *testing.B)         { benchmarkCycle(b, 1000, "batch") }
func BenchmarkFilterScore5000Nodes(b *testing.B)         { benchmarkCycle(b, 5000, "batch") }
func BenchmarkFilterScorePriority1000Nodes(b *testing.B) { benchmarkCycle(b, 1000, "priority") }
