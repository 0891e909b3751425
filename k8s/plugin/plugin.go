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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/yaml"

	"colo/k8s/nodestate"
	"colo/k8s/placement"
	"colo/k8s/profilecrd"
	"colo/k8s/scoring"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "ColoInterference"

// Args are the plugin's arguments (pluginConfig[].args).
type Args struct {
	// Profiles is a `colo predict` data directory; "" is the embedded SPEC CPU2017 set.
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

// Plugin implements Filter, PreScore and Score.
type Plugin struct {
	s *scoring.Scorer
}

var (
	_ fwk.FilterPlugin   = (*Plugin)(nil)
	_ fwk.PreScorePlugin = (*Plugin)(nil)
	_ fwk.ScorePlugin    = (*Plugin)(nil)
)

// New is the plugin factory (k8s.io/kubernetes/pkg/scheduler/framework/runtime.PluginFactory).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := DecodeArgs(obj)
	if err != nil {
		return nil, err
	}
	lib, err := placement.LoadLibrary(args.Profiles)
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
	return &Plugin{s: s}, nil
}

// NewWithScorer builds the plugin around an existing scorer (tests, benchmarks).
func NewWithScorer(s *scoring.Scorer) *Plugin { return &Plugin{s: s} }

// Name implements fwk.Plugin.
func (p *Plugin) Name() string { return Name }

func view(ni fwk.NodeInfo) scoring.NodeView {
	pods := ni.GetPods()
	v := scoring.NodeView{Name: ni.Node().Name, Pods: make([]*corev1.Pod, len(pods))}
	for i, pi := range pods {
		v.Pods[i] = pi.GetPod()
	}
	return v
}

// Filter implements fwk.FilterPlugin.
func (p *Plugin) Filter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if ni.Node() == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	if why := p.s.Filter(pod, view(ni)); why != "" {
		return fwk.NewStatus(fwk.Unschedulable, why)
	}
	return nil
}

const stateKey fwk.StateKey = Name + "/scores"

type scores map[string]int64

func (s scores) Clone() fwk.StateData { return s }

// PreScore implements fwk.PreScorePlugin: it scores all candidate nodes at once (the
// mapping to [0, 100] needs every node's cost).
func (p *Plugin) PreScore(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	views := make([]scoring.NodeView, len(nodes))
	for i, ni := range nodes {
		views[i] = view(ni)
	}
	sc, known := p.s.Scores(pod, views)
	if !known {
		return fwk.NewStatus(fwk.Skip)
	}
	m := make(scores, len(nodes))
	for i, v := range views {
		m[v.Name] = sc[i]
	}
	state.Write(stateKey, m)
	return nil
}

// Score implements fwk.ScorePlugin.
func (p *Plugin) Score(_ context.Context, state fwk.CycleState, _ *corev1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	d, err := state.Read(stateKey)
	if err != nil {
		return 0, fwk.AsStatus(fmt.Errorf("%s: no PreScore state: %w", Name, err))
	}
	s, ok := d.(scores)[ni.Node().Name]
	if !ok {
		return placement.NeutralScore, nil
	}
	return s, nil
}

// ScoreExtensions implements fwk.ScorePlugin (scores are final after PreScore).
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
