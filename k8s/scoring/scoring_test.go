package scoring

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"colo/k8s/nodestate"
	"colo/k8s/placement"
)

func tenantPod(name, class, target, profile string) *corev1.Pod {
	ann := map[string]string{nodestate.ClassAnnotation: class, nodestate.ProfileAnnotation: profile}
	if target != "" {
		ann[nodestate.TargetAnnotation] = target
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Annotations: ann}}
}

// cluster publishes n node states (annotation path) and returns views with three pods each
// drawn round-robin from the library.
func cluster(t testing.TB, s *Scorer, lib *placement.Library, n int, now time.Time) []NodeView {
	names := lib.Names()
	views := make([]NodeView, n)
	for i := range views {
		node := fmt.Sprintf("node-%04d", i)
		b, err := nodestate.Marshal(nodestate.State{FormatVersion: 1, Node: node, Updated: now, DialsMB: lib.Dials})
		if err != nil {
			t.Fatal(err)
		}
		s.States.SetAnnotation(node, string(b), true)
		views[i].Name = node
		for k := range 3 {
			views[i].Pods = append(views[i].Pods, tenantPod(fmt.Sprintf("p%d-%d", i, k), "batch", "", names[(3*i+k)%len(names)]))
		}
	}
	return views
}

func TestScoresFollowPredictionAndNeutralCases(t *testing.T) {
	lib, err := placement.LoadLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	s := New(lib, Config{Seed: 1, MaxAge: time.Minute, Now: func() time.Time { return now }})
	views := cluster(t, s, lib, 6, now)
	p := tenantPod("new", "priority", "0.8", "620.omnetpp_s")
	sc, known := s.Scores(p, views)
	if !known {
		t.Fatal("known profile reported unknown")
	}
	// The best-scored node is the one placement.Evaluate predicts cheapest.
	best, bestCost := -1, 0.0
	for i, v := range views {
		ts, _, _, _, ok := s.NodeTenants(v)
		if !ok {
			t.Fatalf("%s has no state", v.Name)
		}
		// one published socket: the node is one domain, Evaluate on all its tenants
		if c := placement.Evaluate(ts, s.PodTenant(p)).Cost; best < 0 || c < bestCost {
			best, bestCost = i, c
		}
	}
	if sc[best] != placement.MaxScore {
		t.Fatalf("scores %v, cheapest node %d", sc, best)
	}
	// Stale state: neutral.
	s.cfg.Now = func() time.Time { return now.Add(2 * time.Minute) }
	if sc, _ := s.Scores(p, views); sc[0] != placement.NeutralScore {
		t.Fatalf("stale: %v", sc)
	}
	s.cfg.Now = func() time.Time { return now }
	// Unknown version and no state: neutral, and pass the filter.
	s.States.SetAnnotation(views[1].Name, `{"formatVersion":9}`, true)
	s.States.SetAnnotation(views[2].Name, "", false)
	sc, _ = s.Scores(p, views)
	if sc[1] != placement.NeutralScore || sc[2] != placement.NeutralScore || s.Filter(p, views[1]) != "" {
		t.Fatalf("unknown version / missing: %v", sc)
	}
	// Unprofiled pod: neutral everywhere and marked once.
	marked := 0
	s.cfg.MarkForProfiling = func(*corev1.Pod) { marked++ }
	u := tenantPod("u", "batch", "", "")
	for range 3 {
		if _, known := s.Scores(u, views); known {
			t.Fatal("unprofiled pod reported known")
		}
	}
	if marked != 1 {
		t.Fatalf("marked %d times", marked)
	}
}

// Score latency per pod: PreScore's work for every node (the plugin's Score is then a
// map lookup). Reported per node with b.ReportMetric.
func benchmarkScores(b *testing.B, n int) {
	lib, err := placement.LoadLibrary("")
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	s := New(lib, Config{Seed: 1, Now: func() time.Time { return now }})
	views := cluster(b, s, lib, n, now)
	p := tenantPod("new", "priority", "0.8", "620.omnetpp_s")
	for b.Loop() {
		s.Scores(p, views)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
}

func BenchmarkScores100Nodes(b *testing.B)  { benchmarkScores(b, 100) }
func BenchmarkScores1000Nodes(b *testing.B) { benchmarkScores(b, 1000) }

func BenchmarkFilter1000Nodes(b *testing.B) {
	lib, _ := placement.LoadLibrary("")
	now := time.Now()
	s := New(lib, Config{Now: func() time.Time { return now }})
	views := cluster(b, s, lib, 1000, now)
	p := tenantPod("new", "priority", "0.8", "620.omnetpp_s")
	for b.Loop() {
		for _, v := range views {
			s.Filter(p, v)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/node")
}
