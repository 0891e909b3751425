package core

import (
	"fmt"
	"strings"
)

// Selector picks the containers an agent manages by their labels (Docker labels, NRI
// annotations and labels): each term is KEY (the label is present) or KEY=VALUE; a
// container matches when every term does. The empty selector matches every container.
// Two agents, or an agent and a test, can so share one runtime without managing each
// other's containers.
type Selector []selectTerm

type selectTerm struct {
	key, value string
	anyValue   bool
}

// ParseSelector parses --select terms.
func ParseSelector(terms []string) (Selector, error) {
	var s Selector
	for _, t := range terms {
		k, v, hasValue := strings.Cut(t, "=")
		if k = strings.TrimSpace(k); k == "" {
			return nil, fmt.Errorf("--select %q: want KEY or KEY=VALUE", t)
		}
		s = append(s, selectTerm{key: k, value: v, anyValue: !hasValue})
	}
	return s, nil
}

// Match says whether labels satisfy every term.
func (s Selector) Match(labels map[string]string) bool {
	for _, t := range s {
		v, ok := labels[t.key]
		if !ok || (!t.anyValue && v != t.value) {
			return false
		}
	}
	return true
}

// String gives the terms back as --select would take them.
func (s Selector) String() string {
	parts := make([]string, len(s))
	for i, t := range s {
		parts[i] = t.key
		if !t.anyValue {
			parts[i] += "=" + t.value
		}
	}
	return strings.Join(parts, ",")
}

// selected keeps the containers s matches.
func (s Selector) Filter(cs []Container) []Container {
	if len(s) == 0 {
		return cs
	}
	var out []Container
	for _, c := range cs {
		if s.Match(c.Labels) {
			out = append(out, c)
		}
	}
	return out
}
