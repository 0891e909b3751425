// Package nodestate is the node interference state a colo node publishes for the
// scheduler: the node's resident tenants with their contentiousness scores and compact
// sensitivity curves, and per socket the free LLC ways, free MBA and CLOSIDs left.
//
// The same JSON document is published twice: as the node annotation colo.io/interference
// and as the spec of a cluster-scoped NodeInterference object (colo.io/v1alpha1) named
// after the node. FormatVersion says how to read it; a reader rejects versions it does not
// know instead of guessing (the scheduler then scores the node neutrally).
//
// This package is pure: bytes in, validated State out. It has no Kubernetes dependency.
package nodestate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// Names of the published objects.
const (
	// FormatVersion is the only document version this package reads and writes.
	FormatVersion = 1
	// Annotation is the node annotation that carries the JSON document.
	Annotation = "colo.io/interference"
	// Group, Version, Kind and Resource name the NodeInterference custom resource.
	Group    = "colo.io"
	Version  = "v1alpha1"
	Kind     = "NodeInterference"
	Resource = "nodeinterferences"
)

// Pod annotations (the agent's vocabulary, docs/agent.md, plus colo.io/profile).
const (
	ClassAnnotation   = "colo.io/class"       // priority | batch | best-effort (unset: batch)
	TargetAnnotation  = "colo.io/target-ipce" // normalised performance the tenant must keep, in (0, 1]
	ProfileAnnotation = "colo.io/profile"     // name of the tenant's Bubble-Up profile
	// NeedsProfileAnnotation marks a pod the scheduler saw without a known profile, so
	// that the node agent profiles it after it starts.
	NeedsProfileAnnotation = "colo.io/needs-profile"
	// SocketAnnotation is the socket colo's scheduler chose for the pod (set through the
	// binding); the node agent pins the pod's containers there (cpuset, resctrl domain).
	SocketAnnotation = "colo.io/socket"
)

// ErrUnknownVersion is returned (wrapped) for a document whose formatVersion this
// package does not know.
var ErrUnknownVersion = errors.New("unknown formatVersion")

// State is the published interference state of one node.
type State struct {
	FormatVersion int       `json:"formatVersion"`
	Node          string    `json:"node"`
	Updated       time.Time `json:"updated"`
	Source        string    `json:"source,omitempty"` // where the residents' profiles came from
	// DialsMB is the dial grid (MB of the source of interference) shared by every
	// resident's Slowdown curve; it ascends and starts at 0 (isolation).
	DialsMB   []float64  `json:"dialsMB,omitempty"`
	Residents []Resident `json:"residents,omitempty"`
	Sockets   []Socket   `json:"sockets,omitempty"`
}

// Resident is one tenant running on the node.
type Resident struct {
	Name   string  `json:"name"`          // namespace/pod, or the container's name
	UID    string  `json:"uid,omitempty"` // the pod's UID when the tenant is a pod
	Class  string  `json:"class"`
	Target float64 `json:"targetIPCE,omitempty"` // 0: no target
	// Profile names the Bubble-Up profile the curve and score come from ("" if unknown).
	Profile string `json:"profile,omitempty"`
	// ScoreMB is the tenant's contentiousness: the dial whose pressure equals its own.
	ScoreMB float64 `json:"scoreMB"`
	// Slowdown is the compact sensitivity curve: execution time relative to isolation,
	// t(I_k)/t(0), at each of DialsMB (so Slowdown[0] = 1). Empty for an unprofiled tenant.
	Slowdown []float64 `json:"slowdown,omitempty"`
	Socket   int       `json:"socket"`
}

// Socket is one socket's free resources.
type Socket struct {
	ID          int `json:"id"`
	FreeWays    int `json:"freeWays"`
	FreeMBA     int `json:"freeMBAPercent"`
	CLOSIDsLeft int `json:"closidsLeft"`
}

// Classes lists the valid tenant classes.
var Classes = []string{"priority", "batch", "best-effort"}

// ValidClass reports whether c is one of Classes.
func ValidClass(c string) bool {
	for _, k := range Classes {
		if c == k {
			return true
		}
	}
	return false
}

// Parse decodes and validates a document. Errors name the field (JSON path) at fault; a
// document of another formatVersion is an error wrapping ErrUnknownVersion.
func Parse(b []byte) (State, error) {
	var head struct {
		FormatVersion *int `json:"formatVersion"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return State{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if head.FormatVersion == nil {
		return State{}, fmt.Errorf("formatVersion: missing: %w", ErrUnknownVersion)
	}
	if *head.FormatVersion != FormatVersion {
		return State{}, fmt.Errorf("formatVersion: %d (this reader knows %d): %w", *head.FormatVersion, FormatVersion, ErrUnknownVersion)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, err
	}
	return s, s.Validate()
}

// Marshal validates s and encodes it (compact JSON).
func Marshal(s State) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// Validate checks the document's invariants; the error names the field.
func (s State) Validate() error {
	if s.FormatVersion != FormatVersion {
		return fmt.Errorf("formatVersion: %d (this writer knows %d): %w", s.FormatVersion, FormatVersion, ErrUnknownVersion)
	}
	if s.Node == "" {
		return errors.New("node: empty")
	}
	if s.Updated.IsZero() {
		return errors.New("updated: missing")
	}
	if len(s.DialsMB) > 0 {
		if s.DialsMB[0] != 0 {
			return fmt.Errorf("dialsMB[0]: %v, must be 0 (isolation)", s.DialsMB[0])
		}
		if !sort.Float64sAreSorted(s.DialsMB) {
			return errors.New("dialsMB: not ascending")
		}
		for i := 1; i < len(s.DialsMB); i++ {
			if s.DialsMB[i] == s.DialsMB[i-1] {
				return fmt.Errorf("dialsMB[%d]: %v repeated", i, s.DialsMB[i])
			}
		}
	}
	for i, r := range s.Residents {
		f := fmt.Sprintf("residents[%d]", i)
		if r.Name == "" {
			return fmt.Errorf("%s.name: empty", f)
		}
		if !ValidClass(r.Class) {
			return fmt.Errorf("%s.class: %q, want one of %v", f, r.Class, Classes)
		}
		if r.Target < 0 || r.Target > 1 || math.IsNaN(r.Target) {
			return fmt.Errorf("%s.targetIPCE: %v, want a fraction of isolated performance in (0, 1] (0: none)", f, r.Target)
		}
		if r.ScoreMB < 0 || math.IsNaN(r.ScoreMB) || math.IsInf(r.ScoreMB, 0) {
			return fmt.Errorf("%s.scoreMB: %v, want ≥ 0", f, r.ScoreMB)
		}
		if len(r.Slowdown) == 0 {
			continue
		}
		if len(r.Slowdown) != len(s.DialsMB) {
			return fmt.Errorf("%s.slowdown: %d points for %d dials", f, len(r.Slowdown), len(s.DialsMB))
		}
		for k, v := range r.Slowdown {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("%s.slowdown[%d]: %v, want > 0", f, k, v)
			}
		}
	}
	for i, so := range s.Sockets {
		f := fmt.Sprintf("sockets[%d]", i)
		if so.FreeWays < 0 || so.CLOSIDsLeft < 0 || so.FreeMBA < 0 || so.FreeMBA > 100 {
			return fmt.Errorf("%s: freeWays %d, freeMBAPercent %d, closidsLeft %d out of range", f, so.FreeWays, so.FreeMBA, so.CLOSIDsLeft)
		}
	}
	return nil
}

// Fresh reports whether the state was updated within maxAge of now (maxAge ≤ 0: always).
func (s State) Fresh(now time.Time, maxAge time.Duration) bool {
	return maxAge <= 0 || now.Sub(s.Updated) <= maxAge
}

// CLOSIDsLeft returns the CLOSIDs left on the node's sockets, and whether any socket was
// published.
func (s State) CLOSIDsLeft() (n int, known bool) {
	for _, so := range s.Sockets {
		n += so.CLOSIDsLeft
	}
	return n, len(s.Sockets) > 0
}
