// Package scoring turns Kubernetes objects into colo's placement decisions: it builds the
// tenants of a node (the residents its NodeInterference state publishes plus the pods the
// scheduler already put there) and of the pod being placed, and asks package placement for
// the filter verdict and the node scores. The scheduler plugin and the extender are thin
// adapters around one Scorer, so both give the same answers.
package scoring

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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
	// reserved: pod UID → socket chosen, until the pod's annotation is seen
	reserved sync.Map
	models   sync.Map // node name → *cached
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

// NodeView is a node, the pods the scheduler knows on it (bound or assumed) and its
// allocatable CPU (0: unknown, sockets unbounded).
type NodeView struct {
	Name       string
	Pods       []*corev1.Pod
	AllocMilli int64
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

// NodeTenants returns the node's tenants and their sockets (-1: unknown), or ok false
// (neutral) when the node has no usable state: none published, stale, unreadable or of
// an unknown version (each logged once per node and reason). A pod's socket is its
// colo.io/socket annotation, or the one Reserve chose while the binding is in flight.
func (s *Scorer) NodeTenants(n NodeView) (ts []placement.Tenant, socks []int, milli []int64, st nodestate.State, ok bool) {
	st, from, err := s.States.Get(n.Name)
	switch {
	case err != nil:
		s.logOnce("err:"+n.Name+err.Error(), "colo: node %s: %s: %v: neutral score", n.Name, from, err)
		return nil, nil, nil, st, false
	case from == "":
		s.logOnce("missing:"+n.Name, "colo: node %s: no NodeInterference object and no %s annotation: neutral score", n.Name, nodestate.Annotation)
		return nil, nil, nil, st, false
	case !st.Fresh(s.cfg.Now(), s.cfg.MaxAge):
		s.logOnce(fmt.Sprintf("stale:%s:%d", n.Name, st.Updated.UnixNano()), "colo: node %s: %s updated %s, older than %s: neutral score", n.Name, from, st.Updated.Format(time.RFC3339), s.cfg.MaxAge)
		return nil, nil, nil, st, false
	}
	seen := map[string]bool{}
	for _, p := range n.Pods {
		seen[string(p.UID)] = true
		ts, socks, milli = append(ts, s.PodTenant(p)), append(socks, s.podSocket(p)), append(milli, PodMilliCPU(p))
	}
	for _, r := range st.Residents {
		if r.UID != "" && seen[r.UID] {
			continue // the scheduler's view of its own pods wins
		}
		ts, socks, milli = append(ts, placement.FromResident(st, r)), append(socks, r.Socket), append(milli, 0)
	}
	return ts, socks, milli, st, true
}

// podSocket is the pod's socket: its annotation, else the one reserved for it (-1: none).
func (s *Scorer) podSocket(p *corev1.Pod) int {
	if v, ok := p.Annotations[nodestate.SocketAnnotation]; ok {
		s.reserved.Delete(p.UID)
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return n
		}
		return -1
	}
	if v, ok := s.reserved.Load(p.UID); ok {
		return v.(int)
	}
	return -1
}

// Reserve records the socket chosen for a pod until its annotation arrives; Unreserve
// forgets it.
func (s *Scorer) Reserve(uid types.UID, socket int) { s.reserved.Store(uid, socket) }

// Unreserve forgets a reserved socket.
func (s *Scorer) Unreserve(uid types.UID) { s.reserved.Delete(uid) }

// PodMilliCPU is the pod's CPU request: the sum of its containers' requests.
func PodMilliCPU(p *corev1.Pod) int64 {
	var m int64
	for _, c := range p.Spec.Containers {
		m += c.Resources.Requests.Cpu().MilliValue()
	}
	return m
}

// Model is a node's usable state as a placement.NodeModel (its published sockets, each
// with the node's allocatable CPU shared equally), its CLOSIDs left (known false: not
// published), or nil (neutral).
type Model struct {
	*placement.NodeModel
	CLOSIDsLeft  int
	CLOSIDsKnown bool
}

// BuildModel builds the node's model from a view (nil: neutral).
func (s *Scorer) BuildModel(n NodeView) *Model {
	ts, socks, milli, st, ok := s.NodeTenants(n)
	if !ok {
		return nil
	}
	ns := max(1, len(st.Sockets))
	per := int64(math.MaxInt64 / 4)
	if n.AllocMilli > 0 {
		per = n.AllocMilli / int64(ns)
	}
	m := &Model{NodeModel: placement.NewNodeModel(ns, per, ts, socks, milli)}
	m.CLOSIDsLeft, m.CLOSIDsKnown = st.CLOSIDsLeft()
	return m
}

// Check returns why the pod p (its tenant, milli CPU) must not go to the node of model m
// ("" if it may): it would push a priority tenant below its target on every socket with
// room, or it is a priority pod and the node has no CLOSID left to isolate it. Neutral
// nodes (nil) and unknown pods pass. No allocation when the pod may go.
func Check(m *Model, p placement.Tenant, milli int64, node string) string {
	if m == nil || !p.Known {
		return ""
	}
	if p.Class == "priority" && m.CLOSIDsKnown && m.CLOSIDsLeft == 0 {
		return fmt.Sprintf("node %s has no CLOSID left to isolate priority pod %s", node, p.Name)
	}
	if _, _, ok := m.Best(p, milli); ok {
		return ""
	}
	return m.Why(p, milli)
}

// Filter returns why the pod must not go to the node ("" if it may), see Check.
func (s *Scorer) Filter(pod *corev1.Pod, n NodeView) string {
	p := s.PodTenant(pod)
	if !p.Known {
		return ""
	}
	return Check(s.BuildModel(n), p, PodMilliCPU(pod), n.Name)
}

// Scores returns each node's score in [0, placement.MaxScore] (placement.NodeScores of the
// cost of the pod on the node's best socket), and whether the pod has a known profile (if
// not, every node scores placement.NeutralScore). Nodes without usable state score
// neutrally; a node where no socket takes the pod is scored by its cheapest socket.
func (s *Scorer) Scores(pod *corev1.Pod, nodes []NodeView) ([]int64, bool) {
	p := s.PodTenant(pod)
	milli := PodMilliCPU(pod)
	names := make([]string, len(nodes))
	costs := make([]float64, len(nodes))
	known := make([]bool, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
		if !p.Known {
			continue
		}
		if m := s.BuildModel(n); m != nil {
			var ok bool
			if _, costs[i], ok = m.Best(p, milli); !ok {
				costs[i] = m.Cheapest(p, milli) // refused by Filter: scored by how bad it is
			}
			known[i] = true
		}
	}
	return placement.NodeScores(names, costs, known, s.cfg.Seed), p.Known
}
