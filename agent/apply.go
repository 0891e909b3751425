package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"time"

	"colo/resctrl"
	"colo/sched"
)

// live is the shell's view of one managed container: its groups as applied and its
// latest readings.
type live struct {
	ctrl     string // control group ("" system/default)
	mon      string // monitoring group ("" none; ctrl when the control group monitors)
	classMon bool   // mon is its class's shared group (RMIDs ran out)
	socket   int
	mask     uint64
	mba      int
	threads  int

	counters    Counters
	reading     Reading
	haveReading bool
	sample      sched.Sample
	cpuCores    float64
	monOK       bool
	// refused is the last target resctrl refused (not retried until the plan changes)
	refused *Target
	// synced is the thread list last found in the container's groups and when its
	// groups were last read back (PID sync reads resctrl only when the cgroup's threads
	// changed, or once a second)
	synced    []int
	syncedAt  time.Time
	syncedMon string
}

func (a *Agent) key(mb *Member) string {
	k := mb.ID
	if len(k) > 12 {
		k = k[:12]
	}
	var b strings.Builder
	for _, r := range k {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return a.o.Groups.Prefix() + b.String()
}

func exhausted(err error) bool { return resctrl.IsErrno(err, syscall.ENOSPC) }

// create records a group in the journal, then creates it.
func (a *Agent) create(path string) error {
	if err := a.o.Journal.Add(path); err != nil {
		return err
	}
	if err := a.o.Groups.CreateGroup(path); err != nil {
		a.o.Journal.Drop(path)
		return err
	}
	return nil
}

// destroy removes a group of the agent's, then forgets it.
func (a *Agent) destroy(path string) error {
	if path == "" {
		return nil
	}
	if a.o.Groups.Exists(path) {
		if err := a.o.Groups.RemoveGroup(path); err != nil {
			return err
		}
	}
	return a.o.Journal.Drop(path)
}

// ensureMon gives a container a monitoring group: its own under its control group (or
// system/default), its class's when RMIDs run out, the control group itself as a last
// resort.
func (a *Agent) ensureMon(mb *Member, l *live) {
	if l.mon != "" {
		return
	}
	name := a.key(mb)
	path := a.o.Groups.MonPath(l.ctrl, name)
	err := a.create(path)
	if err == nil {
		l.mon, l.classMon = path, false
		return
	}
	if !exhausted(err) {
		a.count("apply_errors")
		a.note(slog.LevelWarn, "no monitoring group", "container", mb.Name, "group", path, "err", err)
		if l.ctrl != "" {
			l.mon = l.ctrl
		}
		return
	}
	a.count("rmid_exhausted")
	if l.ctrl != "" {
		l.mon = l.ctrl // a control group has an RMID of its own
		return
	}
	cls := a.o.Groups.MonPath("", a.o.Groups.Prefix()+"class-"+string(mb.Req.Class))
	if !a.o.Groups.Exists(cls) {
		if err := a.create(cls); err != nil {
			a.note(slog.LevelWarn, "RMIDs exhausted: container is not monitored", "container", mb.Name, "err", err)
			return
		}
	}
	l.mon, l.classMon = cls, true
	a.note(slog.LevelWarn, "RMIDs exhausted: monitoring by class instead of per container", "container", mb.Name, "class", mb.Req.Class, "group", cls)
}

// syncTasks writes the container's threads that are not yet in its groups (containers
// fork; threads that vanished meanwhile are normal).
func (a *Agent) syncTasks(mb *Member, l *live) {
	if l == nil || (l.mon == "" && l.ctrl == "") {
		return
	}
	tids, err := a.o.Host.Threads(mb.Container)
	if err != nil {
		return // exited: the runtime's event follows
	}
	l.threads = len(tids)
	if l.syncedMon == l.mon+"|"+l.ctrl && time.Since(l.syncedAt) < time.Second && sameInts(tids, l.synced) {
		return
	}
	defer func() { l.synced, l.syncedAt, l.syncedMon = tids, time.Now(), l.mon+"|"+l.ctrl }()
	where := l.mon
	if where == "" {
		where = l.ctrl
	}
	have, _ := a.o.Groups.Tasks(where)
	in := make(map[int]bool, len(have))
	for _, t := range have {
		in[t] = true
	}
	var add []int
	for _, t := range tids {
		if !in[t] {
			add = append(add, t)
		}
	}
	if len(add) == 0 {
		return
	}
	if l.ctrl != "" && where != l.ctrl {
		if _, err := a.o.Groups.AddTasks(l.ctrl, add); err != nil {
			a.o.Log.Debug("moving threads", "container", mb.Name, "group", l.ctrl, "err", err)
			return
		}
	}
	if _, err := a.o.Groups.AddTasks(where, add); err != nil {
		a.o.Log.Debug("moving threads", "container", mb.Name, "group", where, "err", err)
	}
}

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

// leave returns a container's threads to system/default and removes its groups.
func (a *Agent) leave(mb *Member, l *live) error {
	var errs []error
	if l.ctrl != "" {
		if tids, err := a.o.Groups.Tasks(l.ctrl); err == nil && len(tids) > 0 {
			if _, err := a.o.Groups.AddTasks("", tids); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if l.mon != "" && !l.classMon && l.mon != l.ctrl {
		errs = append(errs, a.destroy(l.mon))
	}
	if l.ctrl != "" {
		errs = append(errs, a.destroy(l.ctrl))
	}
	l.ctrl, l.mon, l.classMon, l.mask, l.mba = "", "", false, 0, 0
	if err := errors.Join(errs...); err != nil {
		a.count("apply_errors")
		a.note(slog.LevelWarn, "removing groups", "container", mb.Name, "err", err)
		return err
	}
	return nil
}

// apply brings resctrl to the plan: system/default first gives up the ways about to be
// handed out, then each container's group changes, then system/default takes its final
// mask (the order of colo run's run loop).
func (a *Agent) apply(p Plan) {
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
	for _, mb := range a.core.Members() {
		l := a.live[mb.ID]
		t, ok := p.Targets[mb.ID]
		if !ok || l == nil {
			continue
		}
		a.place(mb, l, t)
	}
	for _, s := range sortedSockets(p.Default) {
		if a.def[s] != p.Default[s] {
			a.setDefault(s, p.Default[s])
		}
	}
}

func (a *Agent) setDefault(s int, mask uint64) {
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

// place moves a container to its target allocation. A target resctrl refused is not
// tried again until the policy changes it.
func (a *Agent) place(mb *Member, l *live, t Target) {
	if l.refused != nil && *l.refused == t {
		return
	}
	l.refused = nil
	refuse := func() { tc := t; l.refused = &tc }
	switch {
	case t.Mask == 0 && l.ctrl != "":
		a.leave(mb, l)
		a.ensureMon(mb, l)
		a.syncTasks(mb, l)
	case t.Mask != 0 && l.ctrl == "":
		name := a.key(mb)
		err := a.create(name)
		if exhausted(err) && l.mon != "" && !l.classMon {
			// a control group needs an RMID too: give up the container's own
			// monitoring group (its control group will monitor it) and try again
			a.destroy(l.mon)
			l.mon = ""
			if err = a.create(name); err != nil {
				a.ensureMon(mb, l)
			}
		}
		if err != nil {
			if exhausted(err) {
				a.count("closid_exhausted")
				a.note(slog.LevelWarn, "CLOSIDs (or RMIDs) exhausted: container stays in system/default and loses isolation", "container", mb.Name, "mask", fmt.Sprintf("%#x", t.Mask))
			} else {
				a.count("apply_errors")
				a.note(slog.LevelWarn, "create control group", "container", mb.Name, "err", err)
			}
			refuse()
			return
		}
		if err := a.setSocket(name, t.Socket, t.Mask, t.MBA); err != nil {
			a.count("apply_errors")
			a.note(slog.LevelWarn, "allocation rejected; container stays in system/default", "container", mb.Name, "err", err)
			a.destroy(name)
			refuse()
			return
		}
		oldMon, oldClass := l.mon, l.classMon
		l.ctrl, l.mon, l.classMon = name, "", false
		l.socket, l.mask, l.mba = t.Socket, t.Mask, t.MBA
		if tids, err := a.o.Host.Threads(mb.Container); err == nil {
			a.o.Groups.AddTasks(name, tids)
		}
		if oldMon != "" && !oldClass {
			a.destroy(oldMon)
		}
		a.ensureMon(mb, l)
		a.syncTasks(mb, l)
	case t.Mask != 0 && (t.Mask != l.mask || t.MBA != l.mba || t.Socket != l.socket):
		if err := a.setSocket(l.ctrl, t.Socket, t.Mask, t.MBA); err != nil {
			a.count("apply_errors")
			a.note(slog.LevelWarn, "allocation change rejected", "container", mb.Name, "err", err)
			refuse()
			return
		}
		l.socket, l.mask, l.mba = t.Socket, t.Mask, t.MBA
	}
}

// reconcile undoes what an earlier instance with this journal left: its recorded groups
// (and any other group carrying its prefix) go, system/default gets its recorded
// schemata back.
func (a *Agent) reconcile(shutdown bool) error {
	st := a.o.Journal.State()
	var removed []string
	for i := len(st.Groups) - 1; i >= 0; i-- {
		g := st.Groups[i]
		if a.o.Groups.Exists(g) {
			if err := a.o.Groups.RemoveGroup(g); err != nil {
				return fmt.Errorf("removing group %s left by an earlier agent: %w", g, err)
			}
			removed = append(removed, g)
		}
	}
	swept, err := a.o.Groups.Sweep()
	if err != nil {
		return fmt.Errorf("removing groups left by an earlier agent: %w", err)
	}
	removed = append(removed, swept...)
	if st.Default != "" {
		if err := a.o.Groups.RestoreDefault(st.Default); err != nil {
			return fmt.Errorf("restoring system/default left changed by an earlier agent: %w", err)
		}
		if !shutdown {
			a.note(slog.LevelWarn, "restored system/default schemata left changed by an earlier agent", "schemata", strings.TrimSpace(st.Default))
		}
	}
	if len(removed) > 0 && !shutdown {
		a.note(slog.LevelWarn, "removed groups left by an earlier agent", "groups", strings.Join(removed, ","))
	}
	return a.o.Journal.Reset()
}

// saveDefault records system/default as found (before any change) and its masks.
func (a *Agent) saveDefault() error {
	s, err := a.o.Groups.SaveDefault()
	if err != nil {
		return err
	}
	if err := a.o.Journal.SetDefault(s); err != nil {
		return err
	}
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

// shutdown returns every container to system/default, removes the agent's groups and
// restores system/default's schemata.
func (a *Agent) shutdown() error {
	var errs []error
	if a.rdtErr == nil {
		for _, mb := range a.core.Members() {
			if l := a.live[mb.ID]; l != nil {
				if err := a.leave(mb, l); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if err := a.reconcile(true); err != nil {
			errs = append(errs, err)
		}
	}
	for _, l := range a.live {
		if l.counters != nil {
			l.counters.Close()
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("shutdown left changes (the next start retries from the journal): %w", err)
	}
	a.note(slog.LevelInfo, "system/default restored; every agent group removed")
	return nil
}
