// Package scoring turns Kubernetes objects into colo's placement decisions: it builds the
// tenants of a node (the residents its NodeInterference state publishes plus the pods the
// scheduler already put there) and of the pod being placed, and asks package placement for
// the filter verdict and the node scores. The scheduler plugin and the extender are thin
// adapters around one Scorer, so both give the same answers.
package scoring

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"colo/k8s/nodestate"
	"colo/k8s/placement"
)

// Config tunes a Scorer.
type Config struct {
	Seed   uint64        // tie-breaking among nodes of equal cost (placement.Tiebreak)
	MaxAge time.Duration // state older than this is stale: neutral (0: never stale)
	Now    func() time.Time
	Logf   func(format string, args ...any)
	// MarkForProfiling is called once per pod that has no known profile (nil: not marked).
	MarkForProfiling func(pod *corev1.Pod)
	// Profiles gives a pod the library does not know a tenant from the cluster's online
	// profiles (ColoProfile objects, k8s/profilecrd.Index; nil: none).
	Profiles interface {
		Tenant(pod *corev1.Pod, name, class string, target float64) (placement.Tenant, bool)
	}
}

// Scorer holds the profile library and the nodes' published states.
type Scorer struct {
	cfg    Config
	lib    *placement.Library
	States *Cache
	once   sync.Map // log-once and mark-once keys
}

// New returns a Scorer over lib with an empty state cache.
func New(lib *placement.Library, cfg Config) *Scorer {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return &Scorer{cfg: cfg, lib: lib, States: NewCache()}
}

func (s *Scorer) logOnce(key, format string, args ...any) {
	if _, seen := s.once.LoadOrStore("log:"+key, true); !seen {
		s.cfg.Logf(format, args...)
	}
}

// NodeView is a node and the pods the scheduler knows on it (bound or assumed).
type NodeView struct {
	Name string
	Pods []*corev1.Pod
}

// PodTenant returns the pod as a tenant. A pod with an invalid colo.io annotation is an
// unprofiled batch tenant (logged once); one without a known profile is marked for
// profiling once.
func (s *Scorer) PodTenant(pod *corev1.Pod) placement.Tenant {
	name := pod.Namespace + "/" + pod.Name
	spec, err := placement.ParsePodAnnotations(pod.Annotations)
	if err != nil {
		s.logOnce("bad:"+string(pod.UID), "colo: pod %s: %v: scored as an unprofiled batch tenant", name, err)
		return placement.Tenant{Name: name, Class: "batch"}
	}
	t := s.lib.Tenant(name, spec.Class, spec.Target, spec.Profile)
	if !t.Known && s.cfg.Profiles != nil {
		if pt, ok := s.cfg.Profiles.Tenant(pod, name, spec.Class, spec.Target); ok {
			return pt
		}
	}
	if !t.Known {
		if spec.Profile != "" {
			s.logOnce("unknown:"+string(pod.UID), "colo: pod %s: profile %q is not in the library (%s): neutral score", name, spec.Profile, s.lib.Source)
		}
		if s.cfg.MarkForProfiling != nil && pod.Annotations[nodestate.NeedsProfileAnnotation] == "" {
			if _, seen := s.once.LoadOrStore("mark:"+string(pod.UID), true); !seen {
				s.cfg.MarkForProfiling(pod)
			}
		}
	}
	return t
}

// NodeTenants returns the node's tenants, or ok false (neutral) when the node has no
// usable state: none published, stale, unreadable or of an unknown version (each logged
// once per node and reason).
func (s *Scorer) NodeTenants(n NodeView) (ts []placement.Tenant, ok bool) {
	st, from, err := s.States.Get(n.Name)
	switch {
	case err != nil:
		s.logOnce("err:"+n.Name+err.Error(), "colo: node %s: %s: %v: neutral score", n.Name, from, err)
		return nil, false
	case from == "":
		s.logOnce("missing:"+n.Name, "colo: node %s: no NodeInterference object and no %s annotation: neutral score", n.Name, nodestate.Annotation)
		return nil, false
	case !st.Fresh(s.cfg.Now(), s.cfg.MaxAge):
		s.logOnce(fmt.Sprintf("stale:%s:%d", n.Name, st.Updated.UnixNano()), "colo: node %s: %s updated %s, older than %s: neutral score", n.Name, from, st.Updated.Format(time.RFC3339), s.cfg.MaxAge)
		return nil, false
	}
	seen := map[string]bool{}
	for _, p := range n.Pods {
		seen[string(p.UID)] = true
		ts = append(ts, s.PodTenant(p))
	}
	for _, r := range st.Residents {
		if r.UID != "" && seen[r.UID] {
			continue // the scheduler's view of its own pods wins
		}
		ts = append(ts, placement.FromResident(st, r))
	}
	return ts, true
}

// Filter returns why the pod must not go to the node ("" if it may): it would push a
// priority tenant below its target, or it is a priority pod and the node has no CLOSID
// left to isolate it. Unknown pods and nodes pass.
func (s *Scorer) Filter(pod *corev1.Pod, n NodeView) string {
	p := s.PodTenant(pod)
	if !p.Known {
		return ""
	}
	ts, ok := s.NodeTenants(n)
	if !ok {
		return ""
	}
	if p.Class == "priority" {
		if st, _, err := s.States.Get(n.Name); err == nil {
			if left, known := st.CLOSIDsLeft(); known && left == 0 {
				return fmt.Sprintf("node %s has no CLOSID left to isolate priority pod %s", n.Name, p.Name)
			}
		}
	}
	return placement.Evaluate(ts, p).Violation
}

// Scores returns each node's score in [0, placement.MaxScore] (placement.NodeScores of the
// costs placement.Evaluate predicts), and whether the pod has a known profile (if not,
// every node scores placement.NeutralScore).
func (s *Scorer) Scores(pod *corev1.Pod, nodes []NodeView) ([]int64, bool) {
	p := s.PodTenant(pod)
	names := make([]string, len(nodes))
	costs := make([]float64, len(nodes))
	known := make([]bool, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
		if !p.Known {
			continue
		}
		if ts, ok := s.NodeTenants(n); ok {
			costs[i], known[i] = placement.Evaluate(ts, p).Cost, true
		}
	}
	return placement.NodeScores(names, costs, known, s.cfg.Seed), p.Known
}
