// Package plugin is colo's kube-scheduler framework plugin "ColoInterference": Filter
// rejects a node where the pod would push a priority tenant below its target, PreScore
// predicts the cost of the pod on every candidate node and Score returns it mapped to
// [0, 100] (package scoring, package placement). A pod without a profile skips scoring
// (every node is equal for this plugin) and is annotated colo.io/needs-profile.
//
// Build it into a scheduler with app.NewSchedulerCommand(app.WithPlugin(plugin.Name,
// plugin.New)) (cmd/colo-kube-scheduler) and enable it in a profile of the
// KubeSchedulerConfiguration (deploy/).
package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/yaml"

	"colo/k8s/nodestate"
	"colo/k8s/placement"
	"colo/k8s/profilecrd"
	"colo/k8s/scoring"
	"colo/k8s/twin"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "ColoInterference"

// Args are the plugin's arguments (pluginConfig[].args).
type Args struct {
	// Profiles is a `colo predict` data directory; "" is the embedded SPEC CPU2017 set,
	// "twin" the twin's apps profiled on the twin (k8s/twin, the kwok experiment).
	Profiles string `json:"profiles,omitempty"`
	// MaxAgeSeconds: node state older than this scores neutrally (0: never stale).
	MaxAgeSeconds int `json:"maxAgeSeconds,omitempty"`
	// Seed orders nodes of equal cost.
	Seed uint64 `json:"seed,omitempty"`
	// MarkUnprofiled annotates pods without a known profile with colo.io/needs-profile.
	MarkUnprofiled bool `json:"markUnprofiled,omitempty"`
}

// DecodeArgs reads the plugin's arguments as the scheduler hands them over (an
// out-of-tree plugin gets *runtime.Unknown holding JSON); unknown fields are an error.
func DecodeArgs(obj runtime.Object) (Args, error) {
	a := Args{MaxAgeSeconds: 300}
	u, ok := obj.(*runtime.Unknown)
	if obj == nil || (ok && len(u.Raw) == 0) {
		return a, nil
	}
	if !ok {
		return a, fmt.Errorf("%s args: got %T, want an object", Name, obj)
	}
	if err := yaml.UnmarshalStrict(u.Raw, &a); err != nil {
		return a, fmt.Errorf("%s args: %w", Name, err)
	}
	if a.MaxAgeSeconds < 0 {
		return a, fmt.Errorf("%s args: maxAgeSeconds %d < 0", Name, a.MaxAgeSeconds)
	}
	return a, nil
}

// Plugin implements PreFilter, Filter, PreScore, Score (with NormalizeScore), Reserve and
// Bind.
type Plugin struct {
	s    *scoring.Scorer
	seed uint64
	cs   kubernetes.Interface
}

var (
	_ fwk.PreFilterPlugin = (*Plugin)(nil)
	_ fwk.FilterPlugin    = (*Plugin)(nil)
	_ fwk.PreScorePlugin  = (*Plugin)(nil)
	_ fwk.ScorePlugin     = (*Plugin)(nil)
	_ fwk.ReservePlugin   = (*Plugin)(nil)
	_ fwk.BindPlugin      = (*Plugin)(nil)
)

// New is the plugin factory (k8s.io/kubernetes/pkg/scheduler/framework/runtime.PluginFactory).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := DecodeArgs(obj)
	if err != nil {
		return nil, err
	}
	var lib *placement.Library
	if args.Profiles == twin.LibrarySource {
		lib, err = twin.Library() // the twin's apps, profiled on the twin (the experiment)
	} else {
		lib, err = placement.LoadLibrary(args.Profiles)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	logger := klog.FromContext(ctx).WithName(Name)
	logf := func(format string, a ...any) { logger.Info(fmt.Sprintf(format, a...)) }
	cfg := scoring.Config{Seed: args.Seed, MaxAge: time.Duration(args.MaxAgeSeconds) * time.Second, Logf: logf}
	if args.MarkUnprofiled && h.ClientSet() != nil {
		cs := h.ClientSet()
		cfg.MarkForProfiling = func(pod *corev1.Pod) {
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{nodestate.NeedsProfileAnnotation: "true"}}})
			go func() {
				pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := cs.CoreV1().Pods(pod.Namespace).Patch(pctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					logf("colo: marking pod %s/%s for profiling: %v", pod.Namespace, pod.Name, err)
				}
			}()
		}
	}
	var ix *profilecrd.Index
	if kc := h.KubeConfig(); kc != nil {
		dc, err := dynamic.NewForConfig(kc)
		if err != nil {
			return nil, err
		}
		ix = &profilecrd.Index{}
		cfg.Profiles = ix
		go ix.Run(ctx, dc, 10*time.Second, logf)
	}
	s := scoring.New(lib, cfg)
	if err := scoring.WatchNodes(h.SharedInformerFactory().Core().V1().Nodes().Informer(), s.States); err != nil {
		return nil, err
	}
	if kc := h.KubeConfig(); kc != nil {
		dc, err := dynamic.NewForConfig(kc)
		if err != nil {
			return nil, err
		}
		if err := scoring.WatchObjects(ctx, h.ClientSet().Discovery(), dc, s.States, 10*time.Second, logf); err != nil {
			return nil, err
		}
	}
	logf("colo: %s ready: %d profiles from %s, maxAge %s, seed %d", Name, len(lib.Profiles), lib.Source, cfg.MaxAge, args.Seed)
	return &Plugin{s: s, seed: args.Seed, cs: h.ClientSet()}, nil
}

// NewWithScorer builds the plugin around an existing scorer (tests, benchmarks; without a
// client it binds nothing itself).
func NewWithScorer(s *scoring.Scorer, seed uint64) *Plugin { return &Plugin{s: s, seed: seed} }

// Name implements fwk.Plugin.
func (p *Plugin) Name() string { return Name }

func view(ni fwk.NodeInfo) scoring.NodeView {
	pods := ni.GetPods()
	v := scoring.NodeView{Name: ni.Node().Name, Pods: make([]*corev1.Pod, len(pods)), AllocMilli: ni.GetAllocatable().GetMilliCPU()}
	for i, pi := range pods {
		v.Pods[i] = pi.GetPod()
	}
	return v
}

const stateKey fwk.StateKey = Name + "/pod"

// podState is what PreFilter computes once per pod and scheduling cycle.
type podState struct {
	t     placement.Tenant
	milli int64
	now   time.Time
}

func (s *podState) Clone() fwk.StateData { return s }

// best is the pod's best socket on the node (scoring.Model.Best), computed once per
// cycle and node: Filter's result is kept in the node's memo for Score. m is nil for a
// node without usable state (neutral).
func (p *Plugin) best(ps *podState, ni fwk.NodeInfo) (m *scoring.Model, socket int, cost float64, ok bool) {
	m, memo, mu := p.s.CachedModel(ni.Node().Name, ni.GetGeneration(), ps.now, func() scoring.NodeView { return view(ni) })
	if m == nil {
		return nil, -1, 0, false
	}
	mu.Lock()
	defer mu.Unlock()
	if memo.Key != ps {
		memo.Socket, memo.Cost, memo.OK = m.Best(ps.t, ps.milli)
		memo.Key = ps
	}
	return m, memo.Socket, memo.Cost, memo.OK
}

func read(state fwk.CycleState) (*podState, *fwk.Status) {
	d, err := state.Read(stateKey)
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("%s: no PreFilter state: %w", Name, err))
	}
	return d.(*podState), nil
}

// PreFilter implements fwk.PreFilterPlugin: the pod's tenant, once per cycle; a pod
// without a known profile skips the plugin's Filter and Score.
func (p *Plugin) PreFilter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	t := p.s.PodTenant(pod)
	if !t.Known {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	state.Write(stateKey, &podState{t: t, milli: scoring.PodMilliCPU(pod), now: time.Now()})
	return nil, nil
}

// PreFilterExtensions implements fwk.PreFilterPlugin.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter implements fwk.FilterPlugin (scoring.Check on the node's cached model).
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, _ *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if ni.Node() == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	ps, st := read(state)
	if st != nil {
		return st
	}
	m, _, _, ok := p.best(ps, ni)
	if m == nil || ok && !(ps.t.Class == "priority" && m.CLOSIDsKnown && m.CLOSIDsLeft == 0) {
		return nil
	}
	return fwk.NewStatus(fwk.Unschedulable, scoring.Check(m, ps.t, ps.milli, ni.Node().Name))
}

// PreScore implements fwk.PreScorePlugin: skip pods without a known profile.
func (p *Plugin) PreScore(_ context.Context, state fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if _, err := state.Read(stateKey); err != nil {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// unknownScore marks a node without usable state until NormalizeScore.
const unknownScore = math.MinInt64

// costScale turns a cost into Score's integer: −cost·costScale (higher is better).
const costScale = 1e9

// Score implements fwk.ScorePlugin: the cost of the pod on the node's best socket, as
// −cost·10⁹ (NormalizeScore maps it to [0, 100]).
func (p *Plugin) Score(_ context.Context, state fwk.CycleState, _ *corev1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	ps, st := read(state)
	if st != nil {
		return 0, st
	}
	m, _, cost, ok := p.best(ps, ni)
	if m == nil || !ok {
		return unknownScore, nil
	}
	return -int64(math.Round(cost * costScale)), nil
}

// ScoreExtensions implements fwk.ScorePlugin.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return p }

// NormalizeScore implements fwk.ScoreExtensions: placement.NodeScores of the costs, in
// place.
func (p *Plugin) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *corev1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	best, lo, hi := -1, int64(math.MaxInt64), int64(math.MinInt64)
	for i, s := range scores {
		if s.Score == unknownScore {
			continue
		}
		lo, hi = min(lo, s.Score), max(hi, s.Score)
		if best < 0 || s.Score > scores[best].Score || s.Score == scores[best].Score && placement.Less(p.seed, s.Name, scores[best].Name) {
			best = i
		}
	}
	for i := range scores {
		sc := &scores[i].Score
		switch {
		case *sc == unknownScore:
			*sc = placement.NeutralScore
		case i == best:
			*sc = placement.MaxScore
		case hi == lo:
			*sc = placement.MaxScore - 1
		default:
			*sc = placement.ScoreBetween(float64(*sc-lo), float64(hi-lo))
		}
	}
	return nil
}

// Reserve implements fwk.ReservePlugin: remember the socket chosen on the node.
func (p *Plugin) Reserve(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	ps, st := read(state)
	if st != nil {
		return nil // unprofiled pod: no socket
	}
	if m := p.s.LastModel(nodeName); m != nil {
		if sock, _, ok := m.Best(ps.t, ps.milli); ok {
			p.s.Reserve(pod.UID, sock)
		}
	}
	return nil
}

// Unreserve implements fwk.ReservePlugin.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	p.s.Unreserve(pod.UID)
}

// Bind implements fwk.BindPlugin: a pod with a reserved socket is bound with the
// annotation colo.io/socket on the Binding (the API server copies a binding's annotations
// to the pod); others are left to the next binder (Skip).
func (p *Plugin) Bind(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	sock, ok := p.s.Reserved(pod.UID)
	if !ok || p.cs == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			Annotations: map[string]string{nodestate.SocketAnnotation: strconv.Itoa(sock)}},
		Target: corev1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if err := p.cs.CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(err)
	}
	return nil
}
