package core

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"colo/machine"
)

// The label vocabulary: Docker labels and Kubernetes/containerd annotations alike.
const (
	// LabelClass is priority | batch | best-effort (unlabelled: batch).
	LabelClass = "colo.io/class"
	// LabelTargetIPCE is the container's IPCE target, a fraction in (0, 1] (e.g. 0.9).
	LabelTargetIPCE = "colo.io/target-ipce"
	// LabelLLCWays is an optional static request of L3 ways.
	LabelLLCWays = "colo.io/llc-ways"
	// LabelMBA is an optional static request of memory bandwidth (the platform's MBA unit:
	// percent on Intel).
	LabelMBA = "colo.io/mba"
)

// Class is a container's service class.
type Class string

const (
	Priority   Class = "priority"
	Batch      Class = "batch"
	BestEffort Class = "best-effort"
)

// Classes lists the classes in a fixed order.
var Classes = []Class{Priority, Batch, BestEffort}

// Request is what a container asks for through its labels.
type Request struct {
	Class      Class   `json:"class"`
	TargetIPCE float64 `json:"target_ipce,omitempty"` // 0: none
	Ways       int     `json:"llc_ways,omitempty"`    // 0: none
	MBA        int     `json:"mba,omitempty"`         // 0: none
}

// LabelError is a label whose value was ignored.
type LabelError struct {
	Label string
	Value string
	Msg   string
}

func (e LabelError) Error() string {
	return fmt.Sprintf("label %s=%q ignored: %s", e.Label, e.Value, e.Msg)
}

// ParseRequest reads the vocabulary from labels. A label with an invalid value is ignored
// (its default applies) and reported; the rest still count. m bounds the static requests
// (nil: only syntax is checked).
func ParseRequest(labels map[string]string, m *machine.Profile) (Request, []LabelError) {
	r := Request{Class: Batch}
	var errs []LabelError
	bad := func(k, v, f string, a ...any) { errs = append(errs, LabelError{k, v, fmt.Sprintf(f, a...)}) }
	if v, ok := labels[LabelClass]; ok {
		switch c := Class(strings.TrimSpace(v)); c {
		case Priority, Batch, BestEffort:
			r.Class = c
		default:
			bad(LabelClass, v, "use priority, batch or best-effort")
		}
	}
	if v, ok := labels[LabelTargetIPCE]; ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		switch {
		case err != nil:
			bad(LabelTargetIPCE, v, "not a number")
		case f <= 0 || f > 1 || f != f:
			bad(LabelTargetIPCE, v, "must be a fraction in (0, 1], e.g. 0.9")
		default:
			r.TargetIPCE = f
		}
	}
	if v, ok := labels[LabelLLCWays]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case err != nil:
			bad(LabelLLCWays, v, "not a whole number of ways")
		case n < 1 || (m != nil && n > m.LLC.Ways):
			hi := "the LLC's ways"
			if m != nil {
				hi = strconv.Itoa(m.LLC.Ways)
			}
			bad(LabelLLCWays, v, "must be in 1..%s", hi)
		default:
			r.Ways = n
		}
	}
	if v, ok := labels[LabelMBA]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case err != nil:
			bad(LabelMBA, v, "not a whole number")
		case m != nil && m.MBA == nil:
			bad(LabelMBA, v, "this machine has no MBA")
		case m != nil && (n < m.MBA.Min || n > m.MBA.Max):
			bad(LabelMBA, v, "must be in %d..%d", m.MBA.Min, m.MBA.Max)
		case n < 1:
			bad(LabelMBA, v, "must be positive")
		default:
			r.MBA = n
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Label < errs[j].Label })
	return r, errs
}
