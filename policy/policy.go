package policy

import (
	"fmt"
	"math/bits"
	"strings"
	"time"

	"colo/machine"
	"colo/perfmodel"
	"colo/profile"
)

// Input is what every policy decides from: the machine, the workload (one per-ways table
// per application, in workload order; duplicates are distinct instances) and the
// performance model used by the policies that evaluate candidate solutions (kpart's level
// choice, opt-*, optc-*).
type Input struct {
	Machine *machine.Profile
	Apps    []*profile.Table
	Model   perfmodel.Options
}

// Options tune the policies. The zero value is not useful: start from DefaultOptions.
type Options struct {
	Thresholds Thresholds // classification (lfoc, lfoc+, cpa)
	LFOC       LFOCParams
	// Jobs is the number of parallel workers of the exact searches (≤ 0: 1).
	Jobs int
	// Progress, when set, is called by long searches with work done and total (any unit).
	Progress func(done, total int64)
	// Status, when set, is called by the exact clustering search about twice a second
	// during its branch and bound with the nodes explored so far (in steps of 1024) and the
	// proven relative gap of its incumbent (as Solution.Gap), from another goroutine.
	Status func(nodes int64, gap float64)
	// TimeLimit, when positive, stops the exact clustering search after that long with its
	// best solution so far and the proven optimality gap (Solution.Gap).
	TimeLimit time.Duration
}

// DefaultOptions are the paper's thresholds (Table 1, LLCMPKC ≥ 10) and LFOC+ constants.
func DefaultOptions() Options {
	return Options{Thresholds: PaperThresholds(), LFOC: DefaultLFOCParams(), Jobs: 1}
}

// Cluster is a group of applications (indices into the workload) sharing a mask.
type Cluster struct {
	Apps []int
	Ways int
	Mask uint64
}

// Solution is a policy's decision.
type Solution struct {
	Policy   string
	Clusters []Cluster
	// Nodes is the number of candidate (partial) solutions a search explored; 1 for a
	// heuristic.
	Nodes int64
	// Gap is the proven relative optimality gap of a search stopped by its time limit:
	// (bound − incumbent)/incumbent for STP, (incumbent − bound)/incumbent for
	// unfairness, over what the search did not finish; 0 when the solution is optimal.
	Gap float64
}

// AppMasks returns the mask of every application (n applications).
func (s *Solution) AppMasks(n int) []uint64 {
	return perApp(s, n, func(_ int, c Cluster) uint64 { return c.Mask })
}

// AppClusters returns every application's cluster index (0-based).
func (s *Solution) AppClusters(n int) []int {
	return perApp(s, n, func(ci int, _ Cluster) int { return ci })
}

// AppWays returns every application's way count.
func (s *Solution) AppWays(n int) []int {
	return perApp(s, n, func(_ int, c Cluster) int { return c.Ways })
}

// perApp gives each of the n applications what of gives of its cluster (index ci).
func perApp[T any](s *Solution, n int, of func(ci int, c Cluster) T) []T {
	out := make([]T, n)
	for ci, c := range s.Clusters {
		for _, a := range c.Apps {
			out[a] = of(ci, c)
		}
	}
	return out
}

// Evaluate estimates a solution with the PBBCache model (perfmodel.EvaluateMasks, which
// also handles the overlapping masks of dunn and cpa).
func Evaluate(in Input, s *Solution) (*perfmodel.Result, error) {
	return perfmodel.EvaluateMasks(in.Apps, s.AppMasks(len(in.Apps)), in.Model)
}

// Func is a policy.
type Func func(in Input, opt Options) (*Solution, error)

var registry = map[string]Func{
	"shared":       Shared,
	"equal":        Equal,
	"ucp":          UCP,
	"ucp-slowdown": UCPSlowdown,
	"kpart":        KPart,
	"dunn":         Dunn,
	"cpa":          CPA,
	"lfoc":         LFOC,
	"lfoc+":        LFOCPlusPolicy,
	"opt-stp":      OptSTP,
	"opt-unf":      OptUnf,
	"optc-stp":     OptcSTP,
	"optc-unf":     OptcUnf,
}

// order is the order in which Names lists the policies (issue 4 item 1).
var order = []string{"shared", "equal", "ucp", "ucp-slowdown", "kpart", "dunn", "cpa", "lfoc", "lfoc+",
	"opt-stp", "opt-unf", "optc-stp", "optc-unf"}

// Names lists every policy.
func Names() []string { return append([]string(nil), order...) }

// Get returns a policy by name or an error listing the known ones.
func Get(name string) (Func, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(order, ", "))
	}
	return f, nil
}

// Run validates the input, runs policy name, names the solution and checks its masks.
func Run(name string, in Input, opt Options) (*Solution, error) {
	f, err := Get(name)
	if err != nil {
		return nil, err
	}
	if err := checkInput(in); err != nil {
		return nil, err
	}
	s, err := f(in, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s.Policy = name
	if s.Nodes == 0 {
		s.Nodes = 1
	}
	for _, c := range s.Clusters {
		if err := in.Machine.CheckMask(c.Mask); err != nil {
			return nil, fmt.Errorf("%s produced an invalid mask: %w", name, err)
		}
	}
	return s, nil
}

func checkInput(in Input) error {
	if in.Machine == nil {
		return fmt.Errorf("no machine")
	}
	if len(in.Apps) == 0 {
		return fmt.Errorf("empty workload")
	}
	for _, t := range in.Apps {
		if t.Ways() != in.Machine.LLC.Ways {
			return fmt.Errorf("profile %s has %d way counts, machine %s has %d ways", t.Name, t.Ways(), in.Machine.Name, in.Machine.LLC.Ways)
		}
	}
	return nil
}

// packed turns clusters with way counts into a solution with contiguous, non-overlapping
// masks (PackMasks: first cluster at the highest ways).
func packed(m *machine.Profile, cl []Cluster) (*Solution, error) {
	ways := make([]int, len(cl))
	for i, c := range cl {
		ways[i] = c.Ways
	}
	masks, err := PackMasks(m, ways)
	if err != nil {
		return nil, err
	}
	for i := range cl {
		cl[i].Mask = masks[i]
	}
	return &Solution{Clusters: cl}, nil
}

// strictSolution makes one cluster per application with the given way counts.
func strictSolution(m *machine.Profile, ways []int) (*Solution, error) {
	cl := make([]Cluster, len(ways))
	for i, w := range ways {
		cl[i] = Cluster{Apps: []int{i}, Ways: w}
	}
	return packed(m, cl)
}

// needStrict refuses more applications than ways for a strict-partitioning policy.
func needStrict(in Input, name string) error {
	if n, w := len(in.Apps), in.Machine.LLC.Ways; n > w {
		return fmt.Errorf("%s is strict partitioning (one partition per application): %d applications do not fit in the %d ways of %s; use a clustering policy (lfoc+, kpart, optc-unf, ...)", name, n, w, in.Machine.Name)
	}
	return nil
}

// Shared is no partitioning: every application in one cluster with all ways (Stock-Linux).
func Shared(in Input, _ Options) (*Solution, error) {
	all := make([]int, len(in.Apps))
	for i := range all {
		all[i] = i
	}
	return packed(in.Machine, []Cluster{{Apps: all, Ways: in.Machine.LLC.Ways}})
}

// Equal gives every application ⌊W/n⌋ ways and one more to each of the first W mod n
// (PBBCache equal-part).
func Equal(in Input, _ Options) (*Solution, error) {
	if err := needStrict(in, "equal"); err != nil {
		return nil, err
	}
	n, W := len(in.Apps), in.Machine.LLC.Ways
	ways := make([]int, n)
	for i := range ways {
		ways[i] = W / n
		if i < W%n {
			ways[i]++
		}
	}
	return strictSolution(in.Machine, ways)
}

// Lookahead is Qureshi & Patt's UCP lookahead (MICRO'06) as PBBCache runs it (MODEL.md §6;
// seed001.md §2.1) on per-ways curves where lower is better (curves[i][w−1]): every
// application starts with 1 way; while ways remain, each application's best marginal
// utility over extensions e = 1..min(remaining, W_i − w_i) is
//
//	MU = (curve(w_i) − curve(w_i + e)) / e,
//
// the application with the highest MU (strictly greater wins; ties go to the first, and
// to the smallest e) gets its extension; it stops when no MU is positive. Leftover ways are
// then handed out evenly, the remainder one each to the first applications. It needs
// len(curves) ≤ total.
func Lookahead(curves [][]float64, total int) []int {
	return lookaheadInto(make([]int, len(curves)), curves, total)
}

// lookaheadInto is Lookahead into w (len(curves)).
func lookaheadInto(w []int, curves [][]float64, total int) []int {
	n := len(curves)
	for i := range w {
		w[i] = 1
	}
	avail := total - n
	for avail > 0 {
		best, bi, be := 0.0, -1, 0
		for i, c := range curves {
			for e := 1; e <= avail && w[i]+e <= len(c); e++ {
				mu := (c[w[i]-1] - c[w[i]+e-1]) / float64(e)
				if mu > best {
					best, bi, be = mu, i, e
				}
			}
		}
		if bi < 0 {
			break
		}
		w[bi] += be
		avail -= be
	}
	if avail > 0 && n > 0 {
		each, rem := avail/n, avail%n
		for i := range w {
			w[i] += each
			if i < rem {
				w[i]++
			}
		}
	}
	return w
}

func columns(apps []*profile.Table, c profile.Column) [][]float64 {
	out := make([][]float64, len(apps))
	for i, t := range apps {
		out[i] = t.Col(c)
	}
	return out
}

// UCP is lookahead on the LLCMPKI curves, one partition per application.
func UCP(in Input, _ Options) (*Solution, error) {
	if err := needStrict(in, "ucp"); err != nil {
		return nil, err
	}
	return strictSolution(in.Machine, Lookahead(columns(in.Apps, profile.LLCMPKI), in.Machine.LLC.Ways))
}

// UCPSlowdown is lookahead on the slowdown curves (LFOC's "UCP-Slowdown", seed001.md
// §2.1): it greedily minimises the sum of slowdowns.
func UCPSlowdown(in Input, _ Options) (*Solution, error) {
	if err := needStrict(in, "ucp-slowdown"); err != nil {
		return nil, err
	}
	return strictSolution(in.Machine, Lookahead(columns(in.Apps, profile.Slowdown), in.Machine.LLC.Ways))
}

func popcount(m uint64) int { return bits.OnesCount64(m) }
