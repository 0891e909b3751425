// Package extender serves colo's placement logic as a kube-scheduler extender (HTTP,
// k8s.io/kube-scheduler/extender/v1) for clusters that cannot replace their scheduler:
// POST /filter drops nodes where the pod would push a priority tenant below its target,
// POST /prioritize scores nodes by predicted slowdown. The decisions are package scoring's,
// exactly as in the scheduler plugin; the difference is that the extender sees the pods
// on a node through its own pod informer, so a pod the scheduler has assumed but not yet
// bound is invisible to it for a moment.
package extender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"colo/k8s/placement"
	"colo/k8s/scoring"
)

// PodsOn lists the pods bound to a node.
type PodsOn func(node string) []*corev1.Pod

// NodeIndex is the pod-informer index by spec.nodeName.
const NodeIndex = "colo.io/node"

// IndexPodsByNode adds NodeIndex to a pod informer and returns the lookup.
func IndexPodsByNode(inf cache.SharedIndexInformer) (PodsOn, error) {
	err := inf.AddIndexers(cache.Indexers{NodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}})
	if err != nil {
		return nil, err
	}
	return func(node string) []*corev1.Pod {
		objs, _ := inf.GetIndexer().ByIndex(NodeIndex, node)
		out := make([]*corev1.Pod, 0, len(objs))
		for _, o := range objs {
			out = append(out, o.(*corev1.Pod))
		}
		return out
	}, nil
}

// Server is the extender's HTTP handler.
type Server struct {
	Scorer *scoring.Scorer
	Pods   PodsOn
}

// MaxBody bounds a request body (an ExtenderArgs with a full NodeList can be large).
const MaxBody = 64 << 20

func (s *Server) nodes(a *extenderv1.ExtenderArgs) []string {
	if a.NodeNames != nil {
		return *a.NodeNames
	}
	var out []string
	if a.Nodes != nil {
		for _, n := range a.Nodes.Items {
			out = append(out, n.Name)
		}
	}
	return out
}

func (s *Server) views(names []string) []scoring.NodeView {
	v := make([]scoring.NodeView, len(names))
	for i, n := range names {
		v[i] = scoring.NodeView{Name: n, Pods: s.Pods(n)}
	}
	return v
}

func decode(w http.ResponseWriter, r *http.Request) (*extenderv1.ExtenderArgs, bool) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an ExtenderArgs", http.StatusMethodNotAllowed)
		return nil, false
	}
	var a extenderv1.ExtenderArgs
	if err := json.NewDecoder(io.LimitReader(r.Body, MaxBody)).Decode(&a); err != nil || a.Pod == nil {
		http.Error(w, fmt.Sprintf("bad ExtenderArgs: %v (pod present: %v)", err, err == nil && a.Pod != nil), http.StatusBadRequest)
		return nil, false
	}
	return &a, true
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Filter handles POST /filter.
func (s *Server) Filter(w http.ResponseWriter, r *http.Request) {
	a, ok := decode(w, r)
	if !ok {
		return
	}
	res := extenderv1.ExtenderFilterResult{FailedNodes: extenderv1.FailedNodesMap{}}
	keep := map[string]bool{}
	for _, v := range s.views(s.nodes(a)) {
		if why := s.Scorer.Filter(a.Pod, v); why != "" {
			res.FailedNodes[v.Name] = why
		} else {
			keep[v.Name] = true
		}
	}
	if a.NodeNames != nil {
		names := []string{}
		for _, n := range *a.NodeNames {
			if keep[n] {
				names = append(names, n)
			}
		}
		res.NodeNames = &names
	} else if a.Nodes != nil {
		list := &corev1.NodeList{}
		for _, n := range a.Nodes.Items {
			if keep[n.Name] {
				list.Items = append(list.Items, n)
			}
		}
		res.Nodes = list
	}
	reply(w, res)
}

// Prioritize handles POST /prioritize: scores in [0, MaxExtenderPriority], the plugin's
// [0, 100] scaled down (a pod without a profile gets the neutral middle everywhere).
func (s *Server) Prioritize(w http.ResponseWriter, r *http.Request) {
	a, ok := decode(w, r)
	if !ok {
		return
	}
	names := s.nodes(a)
	sc, _ := s.Scorer.Scores(a.Pod, s.views(names))
	out := make(extenderv1.HostPriorityList, len(names))
	for i, n := range names {
		out[i] = extenderv1.HostPriority{Host: n, Score: Scale(sc[i])}
	}
	reply(w, out)
}

// Scale maps a plugin score in [0, placement.MaxScore] to [0, MaxExtenderPriority].
func Scale(score int64) int64 {
	return (score*extenderv1.MaxExtenderPriority + placement.MaxScore/2) / placement.MaxScore
}

// Handler routes /filter, /prioritize and /healthz.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/filter", s.Filter)
	mux.HandleFunc("/prioritize", s.Prioritize)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	return mux
}

// Start wires a scorer to informers on nodes, pods and NodeInterference objects and
// returns the HTTP server once the node and pod caches are synced.
func Start(ctx context.Context, cs kubernetes.Interface, dc dynamic.Interface, s *scoring.Scorer, logf func(string, ...any)) (*Server, error) {
	f := informers.NewSharedInformerFactory(cs, 0)
	nodes, pods := f.Core().V1().Nodes().Informer(), f.Core().V1().Pods().Informer()
	if err := scoring.WatchNodes(nodes, s.States); err != nil {
		return nil, err
	}
	podsOn, err := IndexPodsByNode(pods)
	if err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced, pods.HasSynced) {
		return nil, errors.New("node and pod caches did not sync")
	}
	if err := scoring.WatchObjects(ctx, cs.Discovery(), dc, s.States, 10*time.Second, logf); err != nil {
		return nil, err
	}
	return &Server{Scorer: s, Pods: podsOn}, nil
}
