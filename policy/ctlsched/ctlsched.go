// Package ctlsched holds what the sched.Scheduler adapters of the online controllers
// (policy/dcat, policy/vp, policy/lfocplus) share: typed scheduler.options decoded from
// the benchmark file's YAML with prefix scoping and file lines (Decode), and the FIFO placement on
// the socket with the most free cores (the thesis baseline's rule, seed000.md §2.4,
// Algorithm 4), with pinned jobs taking exactly their pinned cores, and the bookkeeping of
// the jobs they placed (Jobs), which sends the controllers' allocations within the
// resctrl mount's CLOS budget (Jobs.Flush, Fit).
package ctlsched

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"colo/machine"
	"colo/sched"
)

// ControllerPrefixes are the option prefixes of the online controllers: in a benchmark file
// compared under several schedulers (colo compare), "dcat.baseline: 3" configures dcat and
// static-cat only, "vp.window: 3" vp only; plain keys go to whichever scheduler runs, and a
// prefixed key overrides the plain one (Decode).
var ControllerPrefixes = []string{"dcat.", "static-cat.", "vp.", "lfoc+.", "guard.", "static-cat-mba."}

// prefixOf is the controller prefix of an option key ("" for a plain key).
func prefixOf(k string) string {
	for _, p := range ControllerPrefixes {
		if len(k) > len(p) && strings.HasPrefix(k, p) {
			return p
		}
	}
	return ""
}

// Cores is the number of cores job j takes: its pinned cores if any, else j.Cores.
func Cores(j sched.Job) int {
	if len(j.CPUs) > 0 {
		return len(j.CPUs)
	}
	return j.Cores
}

// Sockets returns the sockets where job j fits now, the socket with the most free cores
// first (ties: the lower socket).
func Sockets(j sched.Job, free [][]int) []int {
	var order []int
	for s := range free {
		if sched.Fits(j, s, free) {
			order = append(order, s)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return len(free[order[a]]) > len(free[order[b]]) })
	return order
}

// Place places the queue of obs FIFO: a job that can never run on m, or for which reject
// gives a reason (reject may be nil), is rejected; every other job goes to the first socket
// where it fits now (Sockets order) and admit (nil: admit all) accepts it, and its cores
// are taken off the copy of the free cores. The first job that goes nowhere stops the queue
// (FIFO); Place returns it and the last reason admit gave (nil when it fits on no socket).
// admit records an accepted job in the caller's state.
func Place(obs *sched.Observation, m *machine.Profile, d *sched.Decisions,
	reject func(sched.Job) string, admit func(j sched.Job, socket int) error) (waiting *sched.Job, why error) {
	free := sched.CopyFree(obs.FreeCPUs)
	for _, j := range obs.Queue {
		r := sched.NeverFits(j, m)
		if r == "" && reject != nil {
			r = reject(j)
		}
		if r != "" {
			d.Reject = append(d.Reject, sched.Rejection{Job: j.ID, Reason: r})
			continue
		}
		placed := false
		why = nil
		for _, sock := range Sockets(j, free) {
			if admit != nil {
				if err := admit(j, sock); err != nil {
					why = err
					continue
				}
			}
			d.Place = append(d.Place, sched.Placement{Job: j.ID, Socket: sock})
			sched.Take(j, sock, free)
			placed = true
			break
		}
		if !placed {
			return &j, why
		}
	}
	return nil, nil
}

// CheckSamples rejects a controller's step before anything changes: every sample must be
// for a workload the controller knows and have an interval and counters that are numbers
// ≥ 0 (ValidCounters). ctl names the controller in the error; fields gives a sample's
// workload, interval and counters.
func CheckSamples[S any](ctl string, samples []S, known func(id string) bool,
	fields func(S) (id string, interval time.Duration, counters []float64)) error {
	for _, s := range samples {
		id, iv, counters := fields(s)
		if !known(id) {
			return fmt.Errorf("%s: sample for unknown workload %q", ctl, id)
		}
		if iv < 0 || !ValidCounters(counters...) {
			return fmt.Errorf("%s: sample for %q has a negative or NaN counter: %+v", ctl, id, s)
		}
	}
	return nil
}

// ValidCounters reports whether every counter of a sample is a number ≥ 0 (the controllers
// reject a sample with a negative or NaN counter before anything changes).
func ValidCounters(v ...float64) bool {
	for _, x := range v {
		if !(x >= 0) {
			return false
		}
	}
	return true
}

// PerSocket builds one controller per socket of a machine with mk (the dCat and LFOC+
// schedulers run an independent controller on each socket's LLC).
func PerSocket[C any](sockets int, mk func() (C, error)) ([]C, error) {
	out := make([]C, 0, sockets)
	for i := 0; i < sockets; i++ {
		c, err := mk()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// MaxMBA is the machine's unthrottled MBA value (0 without MBA): what a controller that
// does not throttle bandwidth gives every group.
func MaxMBA(m *machine.Profile) int {
	if m.MBA == nil {
		return 0
	}
	return m.MBA.Max
}
