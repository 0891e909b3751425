// Package placement is the pure core of colo's interference-aware Kubernetes placement:
// given a node's residents and a pod, each with a Bubble-Up profile (contentiousness score
// and sensitivity curve), it predicts every tenant's slowdown with colo's predict package,
// turns the change into a class-weighted cost, says whether the pod would push a priority
// tenant below its target, and maps the costs of all candidate nodes to scheduler scores.
//
// No Kubernetes types here: the scheduler plugin, the extender and the kwok experiment
// all call the same functions, so they cannot disagree.
package placement

import (
	"math"
	"sort"
	"strconv"

	"colo/k8s/nodestate"
	"colo/predict"
)

// Tenant is a resident of a node, or the pod being placed.
type Tenant struct {
	Name    string
	Class   string  // nodestate.Classes
	Target  float64 // normalised performance to keep, (0, 1]; 0: none
	Profile string
	// Known is false for a tenant without a profile: it neither exerts nor suffers
	// predicted interference (neutral), and is marked for profiling.
	Known   bool
	ScoreMB float64
	// Dials and Slowdown form the sensitivity curve as execution time relative to
	// isolation (Slowdown[0] = 1).
	Dials    []float64
	Slowdown []float64
}

// Class weights: how much one unit of a tenant's predicted slowdown counts in a node's
// cost. A priority tenant's loss counts four times a batch tenant's; a best-effort
// tenant's a quarter.
var classWeight = map[string]float64{"priority": 4, "batch": 1, "best-effort": 0.25}

// Weight returns the weight of a class (batch for an unknown one).
func Weight(class string) float64 {
	if w, ok := classWeight[class]; ok {
		return w
	}
	return 1
}

// PerfNextTo is the tenant's predicted normalised performance next to co-runners whose
// contentiousness scores add up to sumMB:
//
//	P̂(t | C1..Cn) = S_t(I_C1 + … + I_Cn) = t_t(0) / t_t(Σ I_Ci)
//
// (Bubble-Up, Mars et al. MICRO 2011, thesis Eq. 4.2, seed002.md §1.4, with Govindan et
// al.'s reduction <I1, I2, …> → I1 + I2 + … for more than one co-runner, seed002.md §2 and
// §7; both are predict.Predict and predict.CombineScores). The curve is interpolated
// linearly and the sum saturates at the last dial. An unknown tenant returns 1.
func (t Tenant) PerfNextTo(sumMB float64) float64 {
	if !t.Known || len(t.Dials) == 0 || sumMB <= 0 {
		return 1
	}
	// predict.CombineScores' saturation at the last dial, without building its note (the
	// scheduler calls this for every resident of every node: no allocation here).
	mb := math.Min(sumMB, t.Dials[len(t.Dials)-1])
	p, err := predict.Predict(predict.Curve{Name: t.Name, Dials: t.Dials, Perf: t.Slowdown}, mb, predict.MethodLinear)
	if err != nil { // cannot happen for the linear method
		return 1
	}
	return p
}

func (t Tenant) score() float64 {
	if !t.Known {
		return 0
	}
	return t.ScoreMB
}

// Eval is the outcome of placing a pod on a node.
type Eval struct {
	// Cost is the class-weighted increase of predicted slowdown on the node:
	//
	//	cost = Σ_{t ∈ R∪{p}} w_t·(1/P̂_t(R∪{p}) − 1) − Σ_{t ∈ R} w_t·(1/P̂_t(R) − 1)
	//
	// with P̂_t(X) = PerfNextTo(Σ_{u ∈ X, u ≠ t} I_u) and w the class weight: the pod's own
	// predicted slowdown plus the extra slowdown it inflicts on each resident.
	Cost float64
	// PodPerf is the pod's predicted normalised performance on the node.
	PodPerf float64
	// Violation is non-empty when the placement would push a priority tenant (the pod
	// or a resident) below its target (and make it worse than it already is).
	Violation string
}

// Evaluate predicts what placing p next to residents costs. An unknown pod costs 0 (the
// caller scores it neutrally).
func Evaluate(residents []Tenant, p Tenant) Eval {
	s := newSocket(0, 0, residents)
	e, _ := s.eval(p, true)
	return e
}

// NodePerfs returns every tenant's predicted normalised performance when they all share
// one node (the same reduction as Evaluate).
func NodePerfs(ts []Tenant) []float64 {
	sum := 0.0
	for _, t := range ts {
		sum += t.score()
	}
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = t.PerfNextTo(sum - t.score())
	}
	return out
}

// MaxScore is the best node score (the scheduler framework's MaxNodeScore).
const MaxScore = 100

// NeutralScore is the score of a node whose state is unknown or stale, and of every node
// for a pod without a profile.
const NeutralScore = MaxScore / 2

// Tiebreak is the deterministic order among nodes of equal cost: FNV-1a of the seed and
// the node name.
func Tiebreak(seed uint64, node string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211 // FNV-1a, 64 bits
	var buf [20]byte
	h := uint64(offset)
	for _, b := range strconv.AppendUint(buf[:0], seed, 10) {
		h = (h ^ uint64(b)) * prime
	}
	h *= prime // the separator byte 0
	for i := 0; i < len(node); i++ {
		h = (h ^ uint64(node[i])) * prime
	}
	return h
}

// NodeScores maps node costs (lower is better) to scores in [0, MaxScore]. known[i] false
// marks a node scored neutrally. Among known nodes, the single best one (lowest cost, ties
// broken by Tiebreak) scores MaxScore and the others
//
//	score_i = ⌊(MaxScore − 1) · (c_max − c_i) / (c_max − c_min)⌋   (MaxScore − 1 if c_max = c_min)
//
// so a profile that scores with this plugin alone picks the same node for the same input
// and seed, while the spread of the other scores still says how much worse they are.
func NodeScores(names []string, costs []float64, known []bool, seed uint64) []int64 {
	out := make([]int64, len(names))
	var idx []int
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range names {
		out[i] = NeutralScore
		if known[i] {
			idx = append(idx, i)
			lo, hi = math.Min(lo, costs[i]), math.Max(hi, costs[i])
		}
	}
	if len(idx) == 0 {
		return out
	}
	best := idx[0]
	for _, i := range idx[1:] {
		if costs[i] < costs[best] || costs[i] == costs[best] && Less(seed, names[i], names[best]) {
			best = i
		}
	}
	for _, i := range idx {
		switch {
		case i == best:
			out[i] = MaxScore
		case hi == lo:
			out[i] = MaxScore - 1
		default:
			out[i] = ScoreBetween(hi-costs[i], hi-lo)
		}
	}
	return out
}

// ScoreBetween is ⌊(MaxScore − 1) · d / span⌋: a node d below the worst cost of a spread
// span (NodeScores).
func ScoreBetween(d, span float64) int64 { return int64(math.Floor((MaxScore - 1) * d / span)) }

// Less orders two node names by Tiebreak (then by name).
func Less(seed uint64, a, b string) bool {
	ha, hb := Tiebreak(seed, a), Tiebreak(seed, b)
	if ha != hb {
		return ha < hb
	}
	return a < b
}

// Rank orders node indices best first (cost, then Tiebreak): the order NodeScores implies.
func Rank(names []string, costs []float64, seed uint64) []int {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		i, j := idx[a], idx[b]
		if costs[i] != costs[j] {
			return costs[i] < costs[j]
		}
		return Less(seed, names[i], names[j])
	})
	return idx
}

// FromResident turns a published resident into a Tenant on the state's dial grid.
func FromResident(s nodestate.State, r nodestate.Resident) Tenant {
	return Tenant{Name: r.Name, Class: r.Class, Target: r.Target, Profile: r.Profile,
		Known: len(r.Slowdown) > 0 && len(s.DialsMB) > 0, ScoreMB: r.ScoreMB, Dials: s.DialsMB, Slowdown: r.Slowdown}
}
