package policy

import (
	"math"

	"colo/perfmodel"
)

// Objective is what an optimal policy optimises (seed001.md §3; MODEL.md §5).
type Objective int

const (
	// MaxSTP maximises STP.
	MaxSTP Objective = iota
	// MinUnf minimises unfairness, ties broken by the higher STP (lexicographic).
	MinUnf
)

// Better reports whether (unfA, stpA) is strictly better than (unfB, stpB) under o.
// colo compares the exact values; PBBCache compares them rounded to 3 decimals and breaks
// ties by search order (MODEL.md §5), so where two solutions agree to 3 decimals colo may
// return another, equally good to 3 decimals, allocation than PBBCache.
func (o Objective) Better(unfA, stpA, unfB, stpB float64) bool {
	if o == MaxSTP {
		return stpA > stpB
	}
	return unfA < unfB || unfA == unfB && stpA > stpB
}

// compositions calls f with every composition of total into n positive parts, in
// lexicographic order of (w_1, ..., w_n); f returns false to stop.
func compositions(total, n int, f func([]int) bool) {
	w := make([]int, n)
	var rec func(i, left int) bool
	rec = func(i, left int) bool {
		if i == n-1 {
			w[i] = left
			return f(w)
		}
		for x := 1; x <= left-(n-1-i); x++ {
			w[i] = x
			if !rec(i+1, left-x) {
				return false
			}
		}
		return true
	}
	if n >= 1 && total >= n {
		rec(0, total)
	}
}

// optStrict is the optimal strict partitioning (one partition per application, every way
// used): it evaluates every composition of W into n parts — C(W−1, n−1), 252 for 6
// applications on 11 ways — with the full model (bandwidth included) and keeps the best
// (first in lexicographic order on exact ties). PBBCache's opt-*-bf explores the same
// space by branch and bound; exhaustive evaluation is exact and cheap here.
//
// opt.Progress, when set, sees the compositions evaluated out of C(W−1, n−1).
func optStrict(in Input, o Objective, name string, opt Options) (*Solution, error) {
	if err := needStrict(in, name); err != nil {
		return nil, err
	}
	n, W := len(in.Apps), in.Machine.LLC.Ways
	var best []int
	bu, bs := math.Inf(1), math.Inf(-1)
	var nodes int64
	var ferr error
	cl := make([]perfmodel.Cluster, n)
	for i := range cl {
		cl[i].Apps = []int{i}
	}
	total := binomial(W-1, n-1)
	compositions(W, n, func(w []int) bool {
		if opt.Progress != nil && nodes&4095 == 0 {
			opt.Progress(nodes, total)
		}
		for i := range cl {
			cl[i].Ways = w[i]
		}
		r, err := perfmodel.Evaluate(in.Apps, cl, in.Model)
		if err != nil {
			ferr = err
			return false
		}
		nodes++
		if best == nil || o.Better(r.Unfairness, r.STP, bu, bs) {
			best, bu, bs = append([]int(nil), w...), r.Unfairness, r.STP
		}
		return true
	})
	if ferr != nil {
		return nil, ferr
	}
	if opt.Progress != nil {
		opt.Progress(nodes, total)
	}
	s, err := strictSolution(in.Machine, best)
	if err != nil {
		return nil, err
	}
	s.Nodes = nodes
	return s, nil
}

// OptSTP is the STP-optimal strict partitioning (PBBCache opt-stp / opt-stp-bf).
func OptSTP(in Input, opt Options) (*Solution, error) { return optStrict(in, MaxSTP, "opt-stp", opt) }

// OptUnf is the fairness-optimal strict partitioning: lowest unfairness, ties to the
// highest STP (PBBCache opt-unf).
func OptUnf(in Input, opt Options) (*Solution, error) { return optStrict(in, MinUnf, "opt-unf", opt) }

// binomial is C(n, k) (0 outside 0 ≤ k ≤ n).
func binomial(n, k int) int64 {
	if k < 0 || k > n {
		return 0
	}
	c := int64(1)
	for i := 1; i <= k; i++ {
		c = c * int64(n-k+i) / int64(i)
	}
	return c
}
