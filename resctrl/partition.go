package resctrl

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// PartitionClass is one cluster of a static partition (colo partition --apply): the L3
// mask its applications share and, per application, the thread IDs to place.
type PartitionClass struct {
	Mask  uint64
	Apps  []string
	Tasks map[string][]int
}

// AppliedClass is one class ApplyPartition wrote: its group and how many tasks moved.
type AppliedClass struct {
	Group string
	Mask  uint64
	Apps  []string
	Tasks int
}

// ErrCacheMismatch is wrapped when the mount's cache masks are not the machine's ways: the
// decision was made for another machine.
var ErrCacheMismatch = errors.New("the mount's cache masks do not fit the decision's machine")

var unsafeGroupChars = regexp.MustCompile(`[^a-z0-9-]+`)

// ApplyPartition writes a static partition into the mount on L3 domain (the kernel's
// domain id, as the schemata file names it): one control group
// per class, named with the adapter's prefix as part-POLICY-cN (N the class's position,
// from 1; a nil class is skipped), holding its mask and its applications' tasks. ways is
// the machine the decision was made for: the mount's cache masks must have that many bits
// (ErrCacheMismatch). Every group is created and its schemata written first; if any of
// that fails the groups created so far are removed again, so nothing is half-applied.
// Then the tasks move (threads that exited meanwhile are skipped).
func (a *Adapter) ApplyPartition(policy string, domain, ways int, classes []*PartitionClass) ([]AppliedClass, error) {
	in, err := a.c.Info()
	if err != nil {
		return nil, err
	}
	r := in.Resource("L3")
	if r == nil {
		r = in.Resource("L3DATA")
	}
	if r == nil {
		return nil, fmt.Errorf("resctrl at %s has no L3 allocation", a.root)
	}
	if r.CBMLen != ways {
		return nil, fmt.Errorf("resctrl at %s has %d-bit cache masks, the decision's machine %d ways: %w", a.root, r.CBMLen, ways, ErrCacheMismatch)
	}
	idx, err := a.DomainIndex(domain) // the caller names the kernel's domain id
	if err != nil {
		return nil, err
	}
	pol := unsafeGroupChars.ReplaceAllString(strings.ToLower(strings.ReplaceAll(policy, "+", "plus")), "-")
	var created []string
	undo := func(err error) ([]AppliedClass, error) {
		for _, g := range created {
			a.RemoveGroup(g)
		}
		return nil, fmt.Errorf("%w (the groups created are removed again)", err)
	}
	var out []AppliedClass
	for i, c := range classes {
		if c == nil || len(c.Apps) == 0 {
			continue
		}
		p := fmt.Sprintf("%spart-%s-c%d", a.Prefix(), pol, i+1)
		if !a.Exists(p) {
			if err := a.CreateGroup(p); err != nil {
				return undo(err)
			}
			created = append(created, p)
		}
		if err := a.SetSchemata(p, idx, c.Mask, 0); err != nil {
			return undo(err)
		}
		out = append(out, AppliedClass{Group: p, Mask: c.Mask, Apps: c.Apps})
	}
	k := 0
	for _, c := range classes {
		if c == nil || len(c.Apps) == 0 {
			continue
		}
		for _, app := range c.Apps {
			gone, err := a.AddTasks(out[k].Group, c.Tasks[app])
			if err != nil {
				return out[:k], fmt.Errorf("%s: %w", app, err)
			}
			out[k].Tasks += len(c.Tasks[app]) - gone
		}
		k++
	}
	return out, nil
}
