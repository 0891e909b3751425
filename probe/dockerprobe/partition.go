package dockerprobe

import (
	"fmt"
	"sort"
	"strings"

	"colo/cbm"
	"colo/resctrl"
	"colo/workload"
)

// partition is the probe's isolated CLOS (seed000.md §2.6 step 3): one resctrl group for
// target and neighbour with the lowest `ways` ways and `mba` percent on every L3 domain.
// It is best-effort: other groups keep their masks, which may overlap.
type partition struct {
	a       *resctrl.Adapter
	path    string
	ways    int
	mba     int
	domains []int
	mbaSet  bool
}

func newPartition(root, name string, ways, mba int) (*partition, error) {
	a, err := resctrl.OpenAdapter(root)
	if err != nil {
		return nil, fmt.Errorf("--resctrl-root %s: %w", root, err)
	}
	in, err := a.Client().Info()
	if err != nil {
		return nil, err
	}
	res := "L3"
	if in.CDP() {
		res = "L3DATA"
	}
	ri := in.Resource(res)
	if ri == nil {
		return nil, fmt.Errorf("resctrl at %s has no %s resource", root, res)
	}
	if ways < 1 || ways > ri.CBMLen {
		return nil, fmt.Errorf("partition of %d ways: the L3 has %d (1..%d)", ways, ri.CBMLen, ri.CBMLen)
	}
	def, err := a.Client().Schemata("")
	if err != nil {
		return nil, err
	}
	line, ok := def.Line(res)
	if !ok {
		return nil, fmt.Errorf("resctrl at %s: the default group's schemata has no %s line", root, res)
	}
	p := &partition{a: a, path: resctrl.DefaultPrefix + strings.TrimPrefix(name, "colo-"), ways: ways, mba: mba,
		mbaSet: in.Resource("MB") != nil}
	for _, v := range line.Values {
		p.domains = append(p.domains, v.Domain)
	}
	sort.Ints(p.domains)
	if err := a.CreateGroup(p.path); err != nil {
		return nil, err
	}
	m := mba
	if !p.mbaSet {
		m = 0
	}
	for _, d := range p.domains {
		if err := a.SetSchemata(p.path, d, uint64(cbm.Full(ways)), m); err != nil {
			a.RemoveGroup(p.path)
			return nil, err
		}
	}
	return p, nil
}

// add moves every thread of a container's cgroup into the partition (threads created
// later inherit the CLOS from their parent).
func (p *partition) add(cg workload.Cgroup) error {
	tids, err := cg.Threads()
	if err != nil {
		return fmt.Errorf("partition %s: threads of %v: %w", p.path, cg, err)
	}
	if _, err := p.a.AddTasks(p.path, tids); err != nil {
		return fmt.Errorf("partition %s: %w", p.path, err)
	}
	return nil
}

// members lists the threads in the partition (tests).
func (p *partition) members() ([]int, error) { return p.a.Tasks(p.path) }

func (p *partition) describe() string {
	mb := fmt.Sprintf("MBA %d %%", p.mba)
	if !p.mbaSet {
		mb = "no MBA on this mount"
	}
	return fmt.Sprintf("resctrl CLOS %s at %s: %d lowest ways (mask %#x), %s, on L3 domains %v; best-effort (other groups keep their masks)",
		p.path, p.a.Root(), p.ways, uint64(cbm.Full(p.ways)), mb, p.domains)
}

// remove deletes the group; the kernel moves its tasks back to the default group.
func (p *partition) remove() error {
	if err := p.a.RemoveGroup(p.path); err != nil {
		return fmt.Errorf("remove partition %s: %w", p.path, err)
	}
	return nil
}
