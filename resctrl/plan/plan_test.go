package plan

import (
	"strings"
	"testing"

	"colo/internal/machinetest"
	"colo/machine"
)

// state is a toy mount: the planner's groups after applying its ops, enough to feed the
// next plan (schemata per domain, group existence).
type state struct {
	m      *machine.Profile
	groups map[string]*Group
	order  []string
	placed map[string]Placement
}

func newState(m *machine.Profile, foreign ...Group) *state {
	s := &state{m: m, groups: map[string]*Group{"": {Name: ""}}, order: []string{""}, placed: map[string]Placement{}}
	for _, f := range foreign {
		g := f
		s.groups[g.Name] = &g
		s.order = append(s.order, g.Name)
	}
	return s
}

func (s *state) input(prefix string, want ...Want) Input {
	in := Input{Machine: s.m, CLOSIDs: 8, RMIDs: 144, Prefix: prefix, Placed: s.placed, Want: want}
	for _, n := range s.order {
		g := *s.groups[n]
		g.Own = strings.HasPrefix(n, prefix)
		in.Groups = append(in.Groups, g)
	}
	return in
}

// planApply plans want for the "colo.x." groups, requires no error and applies the plan.
func (s *state) planApply(t *testing.T, want ...Want) {
	t.Helper()
	r := Plan(s.input("colo.x.", want...))
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	s.apply(t, r)
}

func (s *state) apply(t *testing.T, r Result) {
	t.Helper()
	for _, o := range r.Ops {
		if strings.Contains(o.Group, "mon_groups/") {
			continue
		}
		switch o.Kind {
		case Mkdir:
			if s.groups[o.Group] != nil {
				t.Fatalf("mkdir of existing %s", o.Group)
			}
			s.groups[o.Group] = &Group{Name: o.Group}
			s.order = append(s.order, o.Group)
		case Rmdir:
			delete(s.groups, o.Group)
			for i, n := range s.order {
				if n == o.Group {
					s.order = append(s.order[:i], s.order[i+1:]...)
					break
				}
			}
		case Schemata:
			g := s.groups[o.Group]
			if g.L3 == nil {
				g.L3 = make([]uint64, s.m.LLCDomains())
				for d := range g.L3 {
					g.L3[d] = s.m.FullMask()
				}
			}
			for d, v := range o.L3 {
				g.L3[d] = v
			}
			if g.MB == nil {
				g.MB = make([]int, s.m.LLCDomains())
				for d := range g.MB {
					g.MB[d] = s.m.MBA.Max
				}
			}
			for d, v := range o.MB {
				g.MB[d] = v
			}
		}
	}
	s.placed = r.Placed
}

func ctrl(s *state) int { return len(s.order) - 1 }

// Nine identical allocations on one socket share one CLOS and say so (KPart).
func TestIdenticalMasksShareOneCLOS(t *testing.T) {
	s := newState(machinetest.Get(t, "icx-4314-2s"))
	var want []Want
	for i := 0; i < 9; i++ {
		want = append(want, Want{Tenant: string(rune('a' + i)), Socket: 0, Mask: 0xf0, MBA: 50, Tasks: []int{100 + i}, Monitor: true})
		s.planApply(t, want...)
	}
	if ctrl(s) != 1 {
		t.Fatalf("%d control groups for nine identical allocations", ctrl(s))
	}
	for _, w := range want {
		if p := s.placed[w.Tenant]; p.Group != "colo.x.c0" || p.Mon != "colo.x.c0/mon_groups/colo.x."+w.Tenant {
			t.Fatalf("%s placed %+v", w.Tenant, p)
		}
	}
	// one leaves the cluster for a mask of its own: a new group, the others stay
	want[3].Mask = 0x3
	r := Plan(s.input("colo.x.", want...))
	s.apply(t, r)
	if ctrl(s) != 2 || s.placed["d"].Group != "colo.x.c1" || s.placed["a"].Group != "colo.x.c0" {
		t.Fatalf("after d changes: %d groups, %+v", ctrl(s), s.placed)
	}
	// alone in its slot, it is rewritten in place
	want[3].Mask = 0x7
	r = Plan(s.input("colo.x.", want...))
	if len(r.Ops) != 1 || r.Ops[0].Kind != Schemata || r.Ops[0].L3[0] != 0x7 {
		t.Fatalf("in-place rewrite: %v", r.Ops)
	}
	s.apply(t, r)
	// every tenant gone: every group and monitoring group removed
	r = Plan(s.input("colo.x."))
	s.apply(t, r)
	if ctrl(s) != 0 {
		t.Fatalf("groups left: %v (ops %v)", s.order, r.Ops)
	}
	mons := 0
	for _, o := range r.Ops {
		if o.Kind == Rmdir && strings.Contains(o.Group, "/mon_groups/") {
			mons++
		}
	}
	if mons != 9 {
		t.Fatalf("%d monitoring groups removed, want 9: %v", mons, r.Ops)
	}
}

// Distinct allocations: one group's slots on the two sockets serve two tenants, so 7
// control groups hold 14 allocations; the 8th distinct one on a socket is refused with
// the reason, and the tenant stays where it was.
func TestCLOSIDBudgetPerSocket(t *testing.T) {
	s := newState(machinetest.Get(t, "icx-4314-2s"))
	var want []Want
	for i := 0; i < 14; i++ {
		want = append(want, Want{Tenant: string(rune('a' + i)), Socket: i % 2, Mask: 1 << (i / 2), Tasks: []int{i + 1}})
	}
	s.planApply(t, want...)
	if ctrl(s) != 7 {
		t.Fatalf("%d control groups for 7 distinct allocations per socket", ctrl(s))
	}
	if b := Budgets(s.input("colo.x.")); b[0].Groups != 7 || b[1].Groups != 7 {
		t.Fatalf("budgets %+v", b)
	}
	want = append(want, Want{Tenant: "z", Socket: 0, Mask: 0x800, Tasks: []int{99}})
	r := Plan(s.input("colo.x.", want...))
	if len(r.Refused) != 1 || r.Refused[0].Tenant != "z" || !strings.Contains(r.Refused[0].Reason, "no CLOSID left") {
		t.Fatalf("refusals %+v", r.Refused)
	}
	if p := r.Placed["z"]; p.Group != "" {
		t.Fatalf("refused tenant placed %+v", p)
	}
}

// Another agent's group: never changed, its ways never given as exclusive; it takes a
// CLOSID from the budget; a slot at the full mask claims nothing.
func TestForeignGroups(t *testing.T) {
	m := machinetest.Get(t, "icx-4314-2s")
	s := newState(m, Group{Name: "colo.web", L3: []uint64{0x3, m.FullMask()}}, Group{Name: "nri.gold", L3: []uint64{m.FullMask(), m.FullMask()}})
	r := Plan(s.input("colo.x.", Want{Tenant: "a", Socket: 0, Mask: 0x6}))
	if len(r.Refused) != 1 || !strings.Contains(r.Refused[0].Reason, "colo.web") {
		t.Fatalf("overlap with a foreign group's ways: %+v", r.Refused)
	}
	r = Plan(s.input("colo.x.", Want{Tenant: "a", Socket: 0, Mask: 0xc}, Want{Tenant: "b", Socket: 1, Mask: 0x3}))
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	for _, o := range r.Ops {
		if o.Group == "colo.web" || o.Group == "nri.gold" {
			t.Fatalf("a foreign group touched: %v", o)
		}
	}
	// a shared (best-effort) want may use them
	if r := Plan(s.input("colo.x.", Want{Tenant: "a", Socket: 0, Mask: 0x3, Shared: true})); r.Err() != nil {
		t.Fatal(r.Err())
	}
	b := Budgets(s.input("colo.x."))
	if b[0].Groups != 5 || b[0].Foreign != 0x3 || b[1].Foreign != 0 {
		t.Fatalf("budgets %+v", b)
	}
}

// Monitoring groups stop at the RMID budget: the tenant is then monitored with its
// control group, and the plan says so.
func TestRMIDBudget(t *testing.T) {
	s := newState(machinetest.Get(t, "icx-4314-2s"))
	in := s.input("colo.x.", Want{Tenant: "a", Monitor: true, Tasks: []int{1}}, Want{Tenant: "b", Monitor: true, Tasks: []int{2}})
	in.RMIDs = 2 // system/default holds one
	r := Plan(in)
	if r.Placed["a"].Mon == "" || r.Placed["b"].Mon != "" || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "no RMID left") {
		t.Fatalf("placed %+v notes %q", r.Placed, r.Notes)
	}
}

// Same input, same plan.
func TestDeterministic(t *testing.T) {
	s := newState(machinetest.Get(t, "icx-4314-2s"))
	var want []Want
	for i := 0; i < 10; i++ {
		want = append(want, Want{Tenant: string(rune('a' + i)), Socket: i % 2, Mask: 0xf << (i % 3), MBA: 10 * (i%3 + 1), Monitor: true, Tasks: []int{i + 1}})
	}
	a, b := Plan(s.input("p.", want...)), Plan(s.input("p.", want...))
	if len(a.Ops) == 0 || len(a.Ops) != len(b.Ops) {
		t.Fatalf("%d vs %d ops", len(a.Ops), len(b.Ops))
	}
	for i := range a.Ops {
		if a.Ops[i].String() != b.Ops[i].String() {
			t.Fatalf("op %d: %v vs %v", i, a.Ops[i], b.Ops[i])
		}
	}
}
