package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"colo/agent/core"
	"colo/agent/host"
	"colo/counter"
	"colo/resctrl"
	"colo/resctrl/alloc"
	"colo/resctrl/journal"
	"colo/resctrl/plan"
	"colo/sched"
)

// Resctrl changes go through the group planner (colo/resctrl/plan), as on colo run's
// platforms: every container is a tenant with a monitoring group of its own; the policy's
// allocation puts it in a control group holding its mask and MBA on its socket — alone,
// or shared with containers asking for identical values (KPart) — and the planner names,
// creates, rewrites and removes the groups. Other agents' groups are never touched, their
// ways never handed out as exclusive. Every mkdir is recorded in the instance's journal
// (colo/resctrl/journal) before it happens, every rmdir after.

// live is the shell's view of one managed container.
type live struct {
	tenant   string
	classMon string // its class's shared monitoring group when RMIDs ran out ("" none)
	threads  int

	counters    host.Counters
	reading     counter.Reading
	haveReading bool
	sample      sched.Sample
	cpuCores    float64
	monOK       bool
	monGroup    string // the group monOK's values come from
	// refused is the last target the planner refused and refusedWhy the planner's
	// reason: retried every interval (a CLOSID, RMID or ways another tool held may have
	// been freed), reported as the container's reason while it waits
	refused    *core.Target
	refusedWhy string
	// synced is the cgroup's thread list at the last PID sync into syncedInto (and
	// syncedGroup, its control group); syncedAt when the group was last read back
	synced      []int
	syncedInto  string
	syncedGroup string
	syncedAt    time.Duration
}

var tenantChars = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// tenantOf names a container's tenant: the first 12 characters of its ID.
func tenantOf(id string) string {
	if len(id) > 12 {
		id = id[:12]
	}
	return tenantChars.ReplaceAllString(id, "_")
}

// replan applies every container's wish through the allocator (resctrl/alloc); a
// refused wish falls back to where the container is, and is counted and said.
func (a *Agent) replan() error {
	out, err := a.al.Apply()
	if out.Budgets != nil {
		foreign := make([]uint64, 0, len(out.Budgets))
		for _, b := range out.Budgets {
			foreign = append(foreign, b.Foreign)
		}
		a.core.SetForeign(foreign)
	}
	for _, n := range out.Notes {
		if !a.saidPlan[n] {
			a.saidPlan[n] = true
			a.note(slog.LevelInfo, "resctrl: "+n)
		}
	}
	for _, r := range out.Refused {
		if r.Kind == plan.RefusedCLOSID || r.Kind == plan.RefusedRMID {
			a.count("closid_exhausted")
		} else {
			a.count("refused")
		}
		if a.saidRefused[r.Tenant] != r.Reason { // retried every interval: said once per reason
			a.saidRefused[r.Tenant] = r.Reason
			a.note(slog.LevelWarn, "allocation refused; container stays where it is (lost isolation) and waits", "container", a.nameOf(r.Tenant), "mask", fmt.Sprintf("%#x", r.Mask), "why", r.Reason)
		}
		a.refusedWhy[r.Tenant] = r.Reason
	}
	if err != nil {
		if ae := (*alloc.ApplyError)(nil); errors.As(err, &ae) {
			a.count("apply_errors")
		}
		return err
	}
	a.classMonitors()
	return nil
}

func (a *Agent) nameOf(tenant string) string {
	for _, mb := range a.core.Members() {
		if l := a.live[mb.ID]; l != nil && l.tenant == tenant {
			return mb.Name
		}
	}
	return tenant
}

// classMonitors monitors by class the containers the planner could give no monitoring
// group (RMIDs ran out) and that sit in system/default.
func (a *Agent) classMonitors() {
	for _, mb := range a.core.Members() {
		l := a.live[mb.ID]
		if l == nil {
			continue
		}
		pl, placed := a.al.Placed(l.tenant)
		w, _ := a.al.Want(l.tenant)
		if !placed || pl.Mon != "" || pl.Group != "" || !w.Monitor {
			l.classMon = ""
			continue
		}
		if l.classMon != "" {
			continue
		}
		a.count("rmid_exhausted")
		cls := resctrl.MonPath("", a.o.Groups.Prefix()+"class-"+string(mb.Req.Class))
		if !a.o.Groups.Exists(cls) {
			if err := a.o.Journal.AddGroup(cls); err != nil {
				continue
			}
			if err := a.o.Groups.CreateGroup(cls); err != nil {
				a.o.Journal.DropGroup(cls)
				a.note(slog.LevelWarn, "RMIDs exhausted: container is not monitored", "container", mb.Name, "err", err)
				continue
			}
		}
		l.classMon = cls
		a.note(slog.LevelWarn, "RMIDs exhausted: monitoring by class instead of per container", "container", mb.Name, "class", mb.Req.Class, "group", cls)
	}
}

// syncTasks writes the container's threads that are not yet in its groups (containers
// fork; threads that vanished meanwhile are normal).
func (a *Agent) syncTasks(mb *core.Member, l *live) {
	if l == nil {
		return
	}
	pl := a.al.Placement(l.tenant)
	into := pl.Mon
	if into == "" {
		into = pl.Group
	}
	if into == "" {
		into = l.classMon
	}
	if into == "" {
		return
	}
	tids, err := a.o.Host.Threads(mb.Container)
	if err != nil {
		return // exited: the runtime's event follows
	}
	l.threads = len(tids)
	now := a.now()
	same := l.syncedInto == into && l.syncedGroup == pl.Group
	readback := !same || now-l.syncedAt >= taskReadback
	if !readback && sameInts(tids, l.synced) {
		return
	}
	var add []int
	if readback {
		have, _ := a.o.Groups.Tasks(into)
		add = resctrl.MissingTasks(have, tids)
		l.syncedAt = now
	} else {
		add = resctrl.MissingTasks(l.synced, tids) // new since the last sync
	}
	l.synced, l.syncedInto, l.syncedGroup = tids, into, pl.Group
	if len(add) == 0 {
		return
	}
	if pl.Group != "" && into != pl.Group {
		if _, err := a.o.Groups.AddTasks(pl.Group, add); err != nil {
			a.o.Log.Debug("moving threads", "container", mb.Name, "group", pl.Group, "err", err)
			l.syncedInto = "" // read the group back next time
			return
		}
	}
	if _, err := a.o.Groups.AddTasks(into, add); err != nil {
		a.o.Log.Debug("moving threads", "container", mb.Name, "group", into, "err", err)
		l.syncedInto = ""
	}
}

// taskReadback is how often PID sync reads a container's group back even when the
// cgroup's threads did not change (threads another tool moved out return); between two
// read-backs it writes only the threads that are new in the cgroup.
const taskReadback = 10 * time.Second

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// apply brings resctrl to the plan: system/default first gives up the ways about to be
// handed out, then the planner moves the containers, then system/default takes its final
// mask (the order of colo run's run loop).
func (a *Agent) apply(p core.Plan) {
	for _, s := range sortedSockets(p.Default) {
		cur, ok := a.def[s]
		if !ok {
			continue
		}
		if inter := cur & p.Default[s]; inter != cur {
			if inter == 0 {
				inter = p.Default[s]
			}
			a.setDefault(s, inter)
		}
	}
	changed := false
	for _, mb := range a.core.Members() {
		l := a.live[mb.ID]
		t, ok := p.Targets[mb.ID]
		if !ok || l == nil {
			continue
		}
		// a refused target is asked again every interval (its want fell back to where the
		// container is): what refused it may have gone (a freed CLOSID, RMID or ways)
		w, _ := a.al.Want(l.tenant)
		pl := a.al.Placement(l.tenant)
		if w.Mask == t.Mask && w.MBA == t.MBA && (t.Mask == 0 || w.Socket == t.Socket) && pl.Mask == t.Mask {
			continue
		}
		w.Socket, w.Mask, w.MBA = t.Socket, t.Mask, t.MBA
		if t.Mask == 0 {
			w.Monitor = true // back in system/default: a monitoring group of its own again
		}
		if tids, err := a.o.Host.Threads(mb.Container); err == nil {
			w.Tasks = tids
		}
		a.al.Set(w)
		changed = true
	}
	if changed {
		if err := a.replan(); err != nil {
			a.note(slog.LevelWarn, "applying allocations", "err", err)
		}
		for _, mb := range a.core.Members() {
			if l := a.live[mb.ID]; l != nil {
				t := p.Targets[mb.ID]
				l.refused, l.refusedWhy = nil, ""
				if a.al.Placement(l.tenant).Mask != t.Mask {
					tc := t
					l.refused, l.refusedWhy = &tc, a.refusedWhy[l.tenant]
				} else if a.saidRefused[l.tenant] != "" {
					delete(a.saidRefused, l.tenant)
					a.note(slog.LevelInfo, "allocation granted after waiting", "container", mb.Name, "mask", fmt.Sprintf("%#x", t.Mask))
				}
				delete(a.refusedWhy, l.tenant)
			}
		}
	}
	for _, s := range sortedSockets(p.Default) {
		if a.def[s] != p.Default[s] {
			a.setDefault(s, p.Default[s])
		}
	}
}

func (a *Agent) setDefault(s int, mask uint64) {
	// the administrator's default, before the first change (another instance's record of
	// it when one holds it: what the mount shows may be its squeezed value)
	if err := a.o.Journal.SaveDefaultFrom(a.o.Groups.SaveDefault); err != nil {
		a.count("apply_errors")
		a.note(slog.LevelWarn, "recording system/default before changing it; left as is", "err", err)
		return
	}
	if err := a.setSocket("", s, mask, 0); err != nil {
		a.count("apply_errors")
		a.note(slog.LevelWarn, "system/default mask", "socket", s, "mask", fmt.Sprintf("%#x", mask), "err", err)
		return
	}
	a.def[s] = mask
}

// setSocket writes the mask (and MBA > 0) on every resctrl domain of a socket.
func (a *Agent) setSocket(path string, socket int, mask uint64, mba int) error {
	doms, err := resctrl.SocketDomains(a.o.Machine, socket)
	if err != nil {
		return err
	}
	if a.o.Machine.MBA == nil {
		mba = 0
	}
	for _, d := range doms {
		if err := a.o.Groups.SetSchemata(path, d, mask, mba); err != nil {
			return fmt.Errorf("socket %d domain %d: %w", socket, d, err)
		}
	}
	return nil
}

// reconcile undoes what dead instances (a killed agent, a crashed colo run) recorded in
// the mount's journal: their groups go, system/default gets its recorded schemata back.
// Live instances' and other agents' groups are never touched.
func (a *Agent) reconcile() error {
	done, err := journal.Reconcile(a.o.Groups.FS(), a.o.StateDir, a.o.Groups.Root(), nil)
	for _, u := range done {
		if u.Did() {
			a.note(slog.LevelWarn, "undid what an earlier instance left", "what", u.String())
		}
	}
	if err != nil {
		return fmt.Errorf("undoing what an earlier instance left on %s: %w", a.o.Groups.Root(), err)
	}
	return nil
}

// saveDefault reads system/default's masks (the journal records its schemata before the
// first change).
func (a *Agent) saveDefault() error {
	for sock := 0; sock < a.o.Machine.Sockets; sock++ {
		doms, err := resctrl.SocketDomains(a.o.Machine, sock)
		if err != nil {
			return err
		}
		m, _, err := a.o.Groups.ReadSchemata("", doms[0])
		if err != nil {
			return err
		}
		a.def[sock] = m
	}
	return nil
}

// undo returns every container to system/default, removes the agent's groups and
// restores system/default's schemata as found.
func (a *Agent) undo() error {
	var errs []error
	a.al.ForgetAll()
	if err := a.replan(); err != nil {
		errs = append(errs, err)
	}
	for _, g := range a.o.Journal.Record().Groups { // class groups, leftovers
		if a.o.Groups.Exists(g) {
			if err := a.o.Groups.RemoveGroup(g); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		a.o.Journal.DropGroup(g)
	}
	// the last instance out writes the administrator's default back
	if _, err := a.o.Journal.ReleaseDefault(a.o.Groups.RestoreDefault); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// shutdown undoes everything and closes the journal (its record goes).
func (a *Agent) shutdown() error {
	var err error
	if a.rdtErr == nil {
		err = a.undo()
	}
	for _, l := range a.live {
		if l.counters != nil {
			l.counters.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("shutdown left changes (the next start undoes them from the journal): %w", err)
	}
	if err := a.o.Journal.Close(); err != nil {
		return err
	}
	a.note(slog.LevelInfo, "system/default restored; every agent group removed")
	return nil
}
