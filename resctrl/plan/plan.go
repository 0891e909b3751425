// Package plan is the pure resctrl group planner both execution platforms (platform/sim
// and platform/linux) and the node agent apply: given the allocations an instance wants
// (tenant, socket, L3 mask, MBA), the control groups that exist on the mount (its own and
// other agents'), the CLOSID and RMID budgets and the machine's vendor rules, it returns
// the operations that realise them (mkdir, schemata lines, task moves, rmdir) and, for
// each allocation it cannot honour, why. It reads and writes nothing: the caller reads
// the mount, calls Plan, and applies Result.Ops in order (resctrl.ApplyPlan).
//
// Rules:
//
//   - A control group (one CLOSID) holds one L3 mask and MB value per domain, and a task
//     obeys the domain of the CPU it runs on, so a group's slots on different sockets
//     serve different tenants (as the thesis's RDT classes hold a Socket0 and a Socket1
//     allocation): with icx-4314-2s's 8 usable CLOSIDs that is 7 distinct allocations
//     per socket, not 7 tenants in all.
//   - Tenants asking for the same mask and MBA on the same socket share one slot. This
//     is KPart's idea (Nosayba/kpart, HPCA'18: cluster applications so that far fewer
//     CLOSIDs than applications are needed, anchors.md §0 C): with CLOSIDs short, nine
//     identical allocations on one socket need one CLOSID, not nine. Result.Notes says
//     which tenants share.
//   - A tenant alone in its slot that wants another mask is rewritten in place; a
//     tenant that leaves a slot it shared moves to a slot with the same values, else a
//     free slot of an existing group, else a new group; a slot nobody uses any more goes
//     back to the full mask and unthrottled MBA (no claim), an empty group is removed.
//   - Groups of other agents (Group.Own false) are never changed, and their ways are
//     never handed out as exclusive: a Want overlapping the ways another agent's group
//     claims on that socket is refused (a slot at the full mask claims nothing: it is
//     what mkdir gives every new group and what colo gives an unused slot).
//   - New groups are named Prefix+"c"+N with the smallest free N, monitoring groups
//     Prefix+Tenant; CLOSIDs are counted over every control group on the mount
//     (system/default included), RMIDs over every control and monitoring group.
//   - An allocation that cannot be honoured leaves the tenant where it was.
package plan

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"colo/machine"
)

// Want is one allocation an instance wants.
type Want struct {
	// Tenant names the allocation (a job, a container); it names its monitoring group.
	Tenant string
	// Socket is where the tenant's tasks run.
	Socket int
	// Mask is the tenant's L3 mask on every domain of Socket; 0 is system/default.
	Mask uint64
	// MBA is the MB value on Socket (0: unthrottled, the machine's maximum).
	MBA int
	// Tasks are the tenant's tasks (threads) to place.
	Tasks []int
	// Monitor asks for a monitoring group of the tenant's own (one RMID).
	Monitor bool
	// Shared allows ways other agents' groups claim (a best-effort class); by default a
	// Want is exclusive of them.
	Shared bool
}

// Group is one control group found on the mount.
type Group struct {
	// Name is the CTRL_MON group ("" for system/default).
	Name string
	// Own is true for groups the planning instance created (its journal says so);
	// everything else belongs to another agent and is never touched.
	Own bool
	// L3 is the L3 mask per domain (machine.LLCDomains entries; missing: full mask).
	L3 []uint64
	// MB is the MB value per domain (nil without MBA; missing: the maximum).
	MB []int
	// Mons counts the group's monitoring groups (RMIDs).
	Mons int
}

// Placement is where a tenant is.
type Placement struct {
	Group  string // control group ("" system/default)
	Socket int
	Mask   uint64 // 0 in system/default
	MBA    int
	Mon    string // its monitoring group's path ("" none)
}

// Input is everything the planner looks at.
type Input struct {
	Machine *machine.Profile
	// CLOSIDs is the number of usable CLOSIDs (the smallest num_closids of the enabled
	// resources; system/default holds one); RMIDs the number of RMIDs (0: no monitoring).
	CLOSIDs, RMIDs int
	// Prefix names the instance's groups (e.g. "colo.1716-4242.").
	Prefix string
	// Groups are every control group on the mount, system/default included.
	Groups []Group
	// Placed is where the instance's tenants are now (the previous Result.Placed).
	Placed map[string]Placement
	// Want is every tenant the instance manages; a tenant of Placed missing here is
	// returned to system/default and its monitoring group removed.
	Want []Want
}

// OpKind is what an Op does.
type OpKind int

const (
	// Mkdir creates a control or monitoring group.
	Mkdir OpKind = iota
	// Schemata writes L3 (and MB) values of some domains of a group.
	Schemata
	// Tasks moves tasks into a group.
	Tasks
	// Rmdir removes a group (its tasks go to the parent).
	Rmdir
)

func (k OpKind) String() string {
	return [...]string{"mkdir", "schemata", "tasks", "rmdir"}[k]
}

// Op is one operation on the mount.
type Op struct {
	Kind  OpKind
	Group string         // group path ("" system/default, NAME, NAME/mon_groups/MON)
	L3    map[int]uint64 // Schemata: L3 mask per domain
	MB    map[int]int    // Schemata: MB value per domain (none without MBA)
	Tasks []int          // Tasks
}

func (o Op) String() string {
	g := o.Group
	if g == "" {
		g = "/"
	}
	switch o.Kind {
	case Schemata:
		return fmt.Sprintf("schemata %s %s", g, SchemataLine(o.L3, o.MB))
	case Tasks:
		return fmt.Sprintf("tasks %s %v", g, o.Tasks)
	}
	return o.Kind.String() + " " + g
}

// SchemataLine renders per-domain values as a schemata text ("L3:0=ff;1=ff\nMB:0=50\n").
func SchemataLine(l3 map[int]uint64, mb map[int]int) string {
	var b strings.Builder
	line := func(name string, doms []int, val func(int) string) {
		if len(doms) == 0 {
			return
		}
		sort.Ints(doms)
		b.WriteString(name + ":")
		for i, d := range doms {
			if i > 0 {
				b.WriteByte(';')
			}
			fmt.Fprintf(&b, "%d=%s", d, val(d))
		}
		b.WriteByte('\n')
	}
	var d3, dm []int
	for d := range l3 {
		d3 = append(d3, d)
	}
	for d := range mb {
		dm = append(dm, d)
	}
	line("L3", d3, func(d int) string { return fmt.Sprintf("%x", l3[d]) })
	line("MB", dm, func(d int) string { return fmt.Sprint(mb[d]) })
	return b.String()
}

// RefusalKind says why the planner refused an allocation.
type RefusalKind int

const (
	// RefusedRules: the wish breaks the machine's rules (no such socket, a mask the
	// hardware rejects, ways beyond the LLC).
	RefusedRules RefusalKind = iota
	// RefusedForeign: the ways are claimed by another agent's group.
	RefusedForeign
	// RefusedCLOSID: every CLOSID is in use.
	RefusedCLOSID
	// RefusedRMID: a new control group needs an RMID and every one is in use.
	RefusedRMID
)

func (k RefusalKind) String() string {
	return [...]string{"rules", "foreign", "closid", "rmid"}[k]
}

// Refusal is an allocation the planner could not honour.
type Refusal struct {
	Tenant string
	Socket int
	Mask   uint64
	Kind   RefusalKind
	Reason string
}

func (r Refusal) Error() string {
	return fmt.Sprintf("%s: L3 %#x on socket %d: %s", r.Tenant, r.Mask, r.Socket, r.Reason)
}

// Result is a plan.
type Result struct {
	Ops     []Op
	Placed  map[string]Placement // where every wanted tenant is once Ops are applied
	Refused []Refusal
	Notes   []string
}

// Err joins the refusals into one error (nil when everything was honoured).
func (r Result) Err() error {
	if len(r.Refused) == 0 {
		return nil
	}
	s := make([]string, len(r.Refused))
	for i, f := range r.Refused {
		s[i] = f.Error()
	}
	return fmt.Errorf("resctrl plan: %s", strings.Join(s, "; "))
}

// slot is a group's use of one socket.
type slot struct {
	mask    uint64
	mba     int
	members map[string]bool
}

type group struct {
	name  string
	own   bool
	slots []slot
	mons  int
	l3    []uint64
}

func (g *group) empty() bool {
	for _, s := range g.slots {
		if len(s.members) > 0 {
			return false
		}
	}
	return true
}

type planner struct {
	in      Input
	m       *machine.Profile
	groups  []*group // control groups, system/default first
	byName  map[string]*group
	placed  map[string]Placement
	res     Result
	rmids   int
	maxMBA  int
	removed map[string]bool
}

// Plan computes the operations that take the mount from in.Groups/in.Placed to in.Want.
// Tenants are handled in name order; the result is deterministic.
func Plan(in Input) Result {
	p := &planner{in: in, m: in.Machine, byName: map[string]*group{}, placed: map[string]Placement{}, removed: map[string]bool{}}
	if p.m.MBA != nil {
		p.maxMBA = p.m.MBA.Max
	}
	for _, g := range in.Groups {
		ng := &group{name: g.Name, own: g.Own && g.Name != "", mons: g.Mons, slots: make([]slot, p.m.Sockets), l3: p.full(g.L3)}
		for s := range ng.slots {
			d := s * p.per()
			ng.slots[s] = slot{mask: ng.l3[d], members: map[string]bool{}}
			if d < len(g.MB) {
				ng.slots[s].mba = g.MB[d]
			} else {
				ng.slots[s].mba = p.maxMBA
			}
		}
		p.groups = append(p.groups, ng)
		p.byName[g.Name] = ng
		p.rmids += 1 + g.Mons
	}
	if p.byName[""] == nil {
		d := &group{name: "", slots: make([]slot, p.m.Sockets)}
		for s := range d.slots {
			d.slots[s].members = map[string]bool{}
		}
		p.groups = append([]*group{d}, p.groups...)
		p.byName[""] = d
		p.rmids++
	}
	for t, pl := range in.Placed {
		p.placed[t] = pl
		if g := p.byName[pl.Group]; g != nil && pl.Group != "" && pl.Socket >= 0 && pl.Socket < len(g.slots) {
			g.slots[pl.Socket].members[t] = true
		}
	}
	wants := map[string]Want{}
	for _, w := range in.Want {
		wants[w.Tenant] = w
	}
	// Tenants no longer wanted go back to system/default without a monitoring group.
	var gone []string
	for t := range p.placed {
		if _, ok := wants[t]; !ok {
			gone = append(gone, t)
		}
	}
	sort.Strings(gone)
	for _, t := range gone {
		p.leave(t, nil)
		delete(p.placed, t)
	}
	names := slices.Sorted(maps.Keys(wants))
	for _, t := range names {
		p.want(wants[t])
	}
	p.res.Placed = p.placed
	return p.res
}

func (p *planner) per() int { return max(p.m.LLC.DomainsPerSocket, 1) }

// full returns per-domain masks, missing domains at the full mask.
func (p *planner) full(l3 []uint64) []uint64 {
	out := make([]uint64, p.m.LLCDomains())
	for d := range out {
		out[d] = p.m.FullMask()
		if d < len(l3) {
			out[d] = l3[d]
		}
	}
	return out
}

func (p *planner) mba(v int) int {
	if p.m.MBA == nil {
		return 0
	}
	if v <= 0 {
		return p.maxMBA
	}
	return v
}

func (p *planner) op(o Op) { p.res.Ops = append(p.res.Ops, o) }

// schemata writes one socket slot of a group.
func (p *planner) schemata(g *group, s int, mask uint64, mba int) {
	o := Op{Kind: Schemata, Group: g.name, L3: map[int]uint64{}}
	if p.m.MBA != nil {
		o.MB = map[int]int{}
	}
	for i := 0; i < p.per(); i++ {
		d := s*p.per() + i
		o.L3[d] = mask
		g.l3[d] = mask
		if o.MB != nil {
			o.MB[d] = mba
		}
	}
	g.slots[s].mask, g.slots[s].mba = mask, mba
	p.op(o)
}

func (p *planner) closidsUsed() int {
	n := 0
	for _, g := range p.groups {
		if !p.removed[g.name] {
			n++
		}
	}
	return n
}

// foreign is the ways other agents' groups claim on socket s, and the first such group.
func (p *planner) foreign(s int) (uint64, string) {
	var m uint64
	first := ""
	for _, g := range p.groups {
		if g.own || g.name == "" {
			continue
		}
		for i := 0; i < p.per(); i++ {
			if v := g.l3[s*p.per()+i]; v != p.m.FullMask() {
				m |= v
				if first == "" {
					first = g.name
				}
			}
		}
	}
	return m, first
}

func (p *planner) refuse(w Want, k RefusalKind, why string, a ...any) {
	p.res.Refused = append(p.res.Refused, Refusal{Tenant: w.Tenant, Socket: w.Socket, Mask: w.Mask, Kind: k, Reason: fmt.Sprintf(why, a...)})
}

func (p *planner) notef(f string, a ...any) { p.res.Notes = append(p.res.Notes, fmt.Sprintf(f, a...)) }

func (p *planner) monPath(ctrl, tenant string) string {
	if ctrl == "" {
		return "mon_groups/" + p.in.Prefix + tenant
	}
	return ctrl + "/mon_groups/" + p.in.Prefix + tenant
}

// want realises one tenant's allocation.
func (p *planner) want(w Want) {
	pl, known := p.placed[w.Tenant]
	if w.Socket < 0 || w.Socket >= p.m.Sockets {
		p.refuse(w, RefusedRules, "socket %d does not exist (0..%d)", w.Socket, p.m.Sockets-1)
		return
	}
	mba := p.mba(w.MBA)
	if w.Mask == 0 {
		if !known || pl.Group != "" || pl.Socket != w.Socket || (w.Monitor && pl.Mon == "") || (!w.Monitor && pl.Mon != "") {
			p.leave(w.Tenant, &w)
		}
		return
	}
	if err := p.m.CheckMask(w.Mask); err != nil {
		p.refuse(w, RefusedRules, "%v", err)
		return
	}
	if w.Mask&^p.m.FullMask() != 0 {
		p.refuse(w, RefusedRules, "mask beyond the %d ways", p.m.LLC.Ways)
		return
	}
	if !w.Shared {
		if f, who := p.foreign(w.Socket); f&w.Mask != 0 {
			p.refuse(w, RefusedForeign, "ways %#x are claimed by group %s of another agent (ways %#x on socket %d); colo never hands out another agent's ways as exclusive", f&w.Mask, who, f, w.Socket)
			return
		}
	}
	if known && pl.Group != "" && pl.Socket == w.Socket {
		g := p.byName[pl.Group]
		sl := &g.slots[w.Socket]
		if sl.mask == w.Mask && sl.mba == mba {
			p.keepMon(w, pl)
			return
		}
		if len(sl.members) == 1 && p.identical(w.Socket, w.Mask, mba) == nil {
			p.schemata(g, w.Socket, w.Mask, mba) // alone in its slot: rewrite in place
			pl.Mask, pl.MBA = w.Mask, mba
			p.placed[w.Tenant] = pl
			p.keepMon(w, pl)
			return
		}
	}
	// Join a slot with the same values, else a free slot, else a new group.
	g := p.identical(w.Socket, w.Mask, mba)
	fresh := false
	if g != nil {
		var with []string
		for t := range g.slots[w.Socket].members {
			if t != w.Tenant {
				with = append(with, t)
			}
		}
		sort.Strings(with)
		if len(with) > 0 {
			p.notef("%s shares CLOS %s with %s on socket %d (identical mask %#x, MB %d: KPart-style sharing saves CLOSIDs)", w.Tenant, g.name, strings.Join(with, ", "), w.Socket, w.Mask, mba)
		}
	} else {
		g = p.freeSlot(w.Socket)
	}
	if g == nil {
		if used := p.closidsUsed(); used >= p.in.CLOSIDs {
			p.refuse(w, RefusedCLOSID, "no CLOSID left: all %d are in use (%s); identical masks already share one", p.in.CLOSIDs, p.closidUse())
			return
		}
		if p.in.RMIDs > 0 && p.rmids >= p.in.RMIDs {
			p.refuse(w, RefusedRMID, "no RMID left for a new control group: all %d are in use", p.in.RMIDs)
			return
		}
		g = &group{name: p.newName(), own: true, slots: make([]slot, p.m.Sockets), l3: p.full(nil)}
		for s := range g.slots {
			g.slots[s] = slot{mask: p.m.FullMask(), mba: p.maxMBA, members: map[string]bool{}}
		}
		p.groups = append(p.groups, g)
		p.byName[g.name] = g
		delete(p.removed, g.name)
		p.rmids++
		p.op(Op{Kind: Mkdir, Group: g.name})
		fresh = true
	}
	if s := &g.slots[w.Socket]; len(s.members) == 0 || fresh {
		p.schemata(g, w.Socket, w.Mask, mba)
	}
	old := pl
	np := Placement{Group: g.name, Socket: w.Socket, Mask: w.Mask, MBA: mba}
	np.Mon = p.mkMon(w, g.name, old)
	p.tasksInto(np, w.Tasks)
	g.slots[w.Socket].members[w.Tenant] = true
	p.placed[w.Tenant] = np
	if known {
		p.release(w.Tenant, old, np.Mon)
	}
}

// identical is an owned group whose slot on socket s has members and these values.
func (p *planner) identical(s int, mask uint64, mba int) *group {
	for _, g := range p.groups {
		if g.own && !p.removed[g.name] {
			if sl := g.slots[s]; len(sl.members) > 0 && sl.mask == mask && sl.mba == mba {
				return g
			}
		}
	}
	return nil
}

// freeSlot is an owned group with nobody on socket s.
func (p *planner) freeSlot(s int) *group {
	for _, g := range p.groups {
		if g.own && !p.removed[g.name] && len(g.slots[s].members) == 0 {
			return g
		}
	}
	return nil
}

func (p *planner) closidUse() string {
	own, other := 0, 0
	for _, g := range p.groups {
		switch {
		case p.removed[g.name] || g.name == "":
		case g.own:
			own++
		default:
			other++
		}
	}
	return fmt.Sprintf("system/default, %d of this instance's groups, %d of other agents", own, other)
}

func (p *planner) newName() string {
	for n := 0; ; n++ {
		name := fmt.Sprintf("%sc%d", p.in.Prefix, n)
		if g := p.byName[name]; g == nil || p.removed[name] {
			return name
		}
	}
}

// mkMon creates the tenant's monitoring group under ctrl (if wanted and an RMID is
// left) and returns its path.
func (p *planner) mkMon(w Want, ctrl string, old Placement) string {
	if !w.Monitor {
		return ""
	}
	path := p.monPath(ctrl, w.Tenant)
	if old.Mon == path {
		return path
	}
	if p.in.RMIDs == 0 {
		return ""
	}
	if p.rmids >= p.in.RMIDs {
		p.notef("%s: no RMID left for its monitoring group (all %d in use); it is monitored with its control group", w.Tenant, p.in.RMIDs)
		return ""
	}
	p.rmids++
	p.op(Op{Kind: Mkdir, Group: path})
	p.byName[ctrl].mons++
	return path
}

// tasksInto moves tasks into the control group, then into the monitoring group.
func (p *planner) tasksInto(pl Placement, tasks []int) {
	if len(tasks) == 0 {
		return
	}
	p.op(Op{Kind: Tasks, Group: pl.Group, Tasks: append([]int(nil), tasks...)})
	if pl.Mon != "" {
		p.op(Op{Kind: Tasks, Group: pl.Mon, Tasks: append([]int(nil), tasks...)})
	}
}

// keepMon makes the tenant's monitoring group match w.Monitor without leaving its slot.
func (p *planner) keepMon(w Want, pl Placement) {
	switch {
	case w.Monitor && pl.Mon == "":
		pl.Mon = p.mkMon(w, pl.Group, pl)
		if pl.Mon != "" {
			p.op(Op{Kind: Tasks, Group: pl.Mon, Tasks: append([]int(nil), w.Tasks...)})
		}
	case !w.Monitor && pl.Mon != "":
		p.rmMon(pl.Mon)
		pl.Mon = ""
	}
	p.placed[w.Tenant] = pl
}

func (p *planner) rmMon(path string) {
	p.op(Op{Kind: Rmdir, Group: path})
	p.rmids--
	ctrl, _, _ := strings.Cut(path, "/mon_groups/")
	if strings.HasPrefix(path, "mon_groups/") {
		ctrl = "" // under system/default
	}
	if g := p.byName[ctrl]; g != nil && g.mons > 0 {
		g.mons--
	}
}

// leave returns a tenant to system/default (w nil: it is no longer managed, so its
// monitoring group goes too).
func (p *planner) leave(t string, w *Want) {
	old, known := p.placed[t]
	if !known {
		old = Placement{Socket: -1}
	}
	np := Placement{Socket: old.Socket}
	if w != nil {
		np.Socket = w.Socket
		np.Mon = p.mkMon(*w, "", old)
		if old.Group != "" || np.Mon != old.Mon {
			p.tasksInto(np, w.Tasks)
		}
	}
	p.placed[t] = np
	if known {
		p.release(t, old, np.Mon)
	}
}

// release takes a tenant out of its old placement: its old monitoring group goes
// (unless it is keep), a slot nobody uses any more is reset, an empty group removed.
func (p *planner) release(t string, old Placement, keep string) {
	if old.Mon != "" && old.Mon != keep {
		p.rmMon(old.Mon)
	}
	if old.Group == "" {
		return
	}
	g := p.byName[old.Group]
	if g == nil || old.Socket < 0 || old.Socket >= len(g.slots) {
		return
	}
	if p.placed[t].Group == old.Group && p.placed[t].Socket == old.Socket {
		return
	}
	delete(g.slots[old.Socket].members, t)
	if g.empty() {
		p.op(Op{Kind: Rmdir, Group: g.name})
		p.removed[g.name] = true
		p.rmids -= 1 + g.mons
		g.mons = 0
		return
	}
	if len(g.slots[old.Socket].members) == 0 {
		p.schemata(g, old.Socket, p.m.FullMask(), p.maxMBA)
	}
}

// Budget is what the mount leaves an instance on one socket.
type Budget struct {
	// Groups is how many control groups with a tenant on this socket the instance may
	// hold: the usable CLOSIDs less system/default's and other agents' groups' (a
	// group's slots on other sockets serve other tenants, so the budget is per socket).
	Groups int
	// Foreign is the ways other agents' groups claim on this socket (never exclusive).
	Foreign uint64
}

// Budgets reports, per socket, the instance's control-group budget and the ways other
// agents claim: the accountant's and the controllers' view of CLOSID scarcity.
func Budgets(in Input) []Budget {
	p := &planner{in: in, m: in.Machine, byName: map[string]*group{}}
	n := in.CLOSIDs - 1 // system/default
	for _, g := range in.Groups {
		if g.Name == "" {
			continue
		}
		own := g.Own
		p.groups = append(p.groups, &group{name: g.Name, own: own, l3: p.full(g.L3)})
		if !own {
			n--
		}
	}
	out := make([]Budget, in.Machine.Sockets)
	for s := range out {
		f, _ := p.foreign(s)
		out[s] = Budget{Groups: max(n, 0), Foreign: f}
	}
	return out
}
