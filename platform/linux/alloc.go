package linux

import (
	"errors"
	"fmt"
	"strings"

	"colo/platform"
	"colo/resctrl"
	"colo/resctrl/plan"
	"colo/sched"
)

// Allocation: every job is a tenant of the resctrl group planner (resctrl/plan), as on
// platform sim: its threads start in system/default with a monitoring group of their
// own; an allocation puts them in a control group holding the job's mask and MBA on
// its socket — one the job has alone, or one shared with jobs asking for identical
// values when CLOSIDs are short (KPart) — and the planner names, creates, rewrites and
// removes the groups. Groups are named with the instance's prefix (colo.<run>.), so a
// second colo on the same mount, or a user's colo.web, is another agent's: never
// touched, and its ways never handed out as exclusive.

func tenant(id int) string { return fmt.Sprintf("j%d", id) }

// own reports whether a control group is this instance's.
func (p *Platform) own(name string) bool { return strings.HasPrefix(name, p.prefix) }

// replan applies every job's wish through the allocator (resctrl/alloc: plan, journal
// before mkdir and after rmdir, refusals fall back, RMID retry); a refusal is returned.
func (p *Platform) replan() error {
	out, err := p.al.Apply()
	for _, n := range out.Notes {
		p.notef("resctrl: %s", n)
	}
	if err != nil {
		return err
	}
	return out.Err()
}

// placement is where the planner put a job.
func (p *Platform) placement(id int) plan.Placement {
	if p.al == nil {
		return plan.Placement{}
	}
	return p.al.Placement(tenant(id))
}

// setWant records a job's wish.
func (p *Platform) setWant(id int, f func(w *plan.Want)) { p.al.Update(tenant(id), f) }

// CLOSBudget implements platform.CLOSBudgeter: per socket, how many control groups this run
// may hold on the mount and the ways other agents' groups claim.
func (p *Platform) CLOSBudget() []sched.CLOSBudget {
	if p.rdt == nil {
		return nil
	}
	b, err := p.al.Budgets()
	if err != nil {
		return nil
	}
	return platform.Budgets(b)
}

// syncTasks writes the container's threads into its resctrl groups (containers fork;
// threads that vanished between listing and writing are normal).
func (p *Platform) syncTasks(j *job) {
	if p.rdt == nil {
		return
	}
	pl := p.placement(j.spec.ID)
	into := pl.Mon
	if into == "" {
		into = pl.Group
	}
	if into == "" {
		return // system/default without a monitoring group: nothing to do
	}
	tids, err := j.cg.Threads()
	if err != nil {
		return // exited: nothing to sync
	}
	have, _ := p.rdt.Tasks(into)
	add := resctrl.MissingTasks(have, tids)
	if len(add) == 0 {
		return
	}
	if pl.Group != "" || pl.Mon != "" {
		if _, err := p.rdt.AddTasks(pl.Group, add); err != nil {
			p.notef("job %s: moving threads into %s: %v", j.spec.Name, groupLabel(pl.Group), err)
			return
		}
	}
	if pl.Mon != "" {
		if _, err := p.rdt.AddTasks(pl.Mon, add); err != nil {
			p.notef("job %s: moving threads into %s: %v", j.spec.Name, pl.Mon, err)
		}
	}
}

func groupLabel(g string) string {
	if g == "" {
		return "system/default"
	}
	return g
}

// joinRDT makes a started job a tenant: system/default with its own monitoring group.
func (p *Platform) joinRDT(j *job) {
	if p.rdt == nil {
		return
	}
	tids, _ := j.cg.Threads()
	p.setWant(j.spec.ID, func(w *plan.Want) { w.Socket, w.Tasks = j.socket, tids })
	if err := p.replan(); err != nil {
		p.notef("job %s: no resctrl monitoring group: %v (occupancy and memory bandwidth unavailable)", j.spec.Name, err)
	}
}

// leaveRDT returns a job's threads to system/default and removes its groups.
func (p *Platform) leaveRDT(j *job) error {
	if p.rdt == nil {
		return nil
	}
	tids, _ := j.cg.Threads()
	p.setWant(j.spec.ID, func(w *plan.Want) { w.Mask, w.MBA, w.Monitor, w.Tasks = 0, 0, false, tids })
	err := p.replan()
	p.al.Forget(tenant(j.spec.ID))
	return errors.Join(err, p.replan())
}

func (p *Platform) noRDT() error {
	return errors.New("no resctrl on this host: cache and bandwidth allocation are unavailable (run with --resctrl-root DIR on an emulator mount, or on a host with RDT; colo doctor explains)")
}

// SetAllocation implements platform.AllocationApplier through the group planner: the job's threads
// get L3 mask `mask` and MBA `mba` on every resctrl domain of `socket` (mask 0: back to
// system/default). The group's schemata is written before any thread moves; an
// allocation the planner refuses (no CLOSID left, ways of another agent) leaves the job
// where it was and says why.
func (p *Platform) SetAllocation(id, socket int, mask uint64, mba int) error {
	if p.rdt == nil {
		return p.noRDT()
	}
	j, err := p.get(id)
	if err != nil {
		return err
	}
	if p.m.MBA == nil {
		mba = 0
	}
	tids, _ := j.cg.Threads()
	p.setWant(id, func(w *plan.Want) { w.Socket, w.Mask, w.MBA, w.Tasks = socket, mask, mba, tids })
	err = p.replan()
	p.syncTasks(j)
	if err != nil {
		return fmt.Errorf("job %s: %w", j.spec.Name, err)
	}
	return nil
}

// SetDefaultMask implements platform.AllocationApplier. The original mask is saved first, so a
// restarted colo restores it after a crash.
func (p *Platform) SetDefaultMask(socket int, mask uint64) error {
	if p.rdt == nil {
		return p.noRDT()
	}
	doms, err := resctrl.SocketDomains(p.m, socket)
	if err != nil {
		return err
	}
	// the administrator's system/default, recorded before its first change (another
	// instance's record of it when one holds it: what the mount shows may be squeezed)
	if err := p.jr.SaveDefaultFrom(p.rdt.DefaultSchemata); err != nil {
		return fmt.Errorf("system/default: %w", err)
	}
	// never a way another group holds exclusively: the kernel refuses the write (the
	// whole socket's, retried every tick), and the default would keep the old ways
	var excl uint64
	for _, d := range doms {
		e, err := p.rdt.ExclusiveWays(d)
		if err != nil {
			return fmt.Errorf("system/default: %w", err)
		}
		excl |= e
	}
	if mask&^excl != 0 {
		mask &^= excl
	} else if excl != 0 {
		mask = p.m.FullMask() &^ excl // what nobody holds exclusively
	}
	return p.setSocket("", socket, mask, 0)
}

// setSocket writes L3 mask and (mba > 0) MB value on every resctrl domain of socket
// (resctrl.SocketDomains: the socket's one L3 on Intel, each of its CCXs on AMD), so a
// per-socket decision covers the whole socket. If a domain's write fails, the domains
// already written get their previous values back: nothing is half-applied.
func (p *Platform) setSocket(path string, socket int, mask uint64, mba int) error {
	doms, err := resctrl.SocketDomains(p.m, socket)
	if err != nil {
		return err
	}
	type prev struct {
		dom  int
		mask uint64
		mba  int
	}
	var done []prev
	for _, d := range doms {
		m0, b0, err := p.rdt.ReadSchemata(path, d)
		if err == nil {
			err = p.rdt.SetSchemata(path, d, mask, mba)
		}
		if err != nil {
			for _, o := range done {
				if rerr := p.rdt.SetSchemata(path, o.dom, o.mask, o.mba); rerr != nil {
					return fmt.Errorf("socket %d domain %d: %w (and restoring domain %d failed: %v)", socket, d, err, o.dom, rerr)
				}
			}
			return fmt.Errorf("socket %d domain %d: %w", socket, d, err)
		}
		done = append(done, prev{d, m0, b0})
	}
	return nil
}

// ReadAllocation implements platform.AllocationApplier: the job's group and its schemata on the
// job's socket, read back from resctrl.
//
// Without resctrl every job is in system/default by construction (SetAllocation refuses),
// so the reading is the empty default group; New recorded once that RDT is unavailable.
func (p *Platform) ReadAllocation(id int) (platform.AllocationReading, error) {
	j, err := p.get(id)
	if err != nil {
		return platform.AllocationReading{}, err
	}
	if p.rdt == nil {
		return platform.AllocationReading{}, nil
	}
	ctrl := p.placement(id).Group
	doms, err := resctrl.SocketDomains(p.m, j.socket)
	if err != nil {
		return platform.AllocationReading{}, err
	}
	mask, mba, err := p.rdt.ReadSchemata(ctrl, doms[0])
	if err != nil {
		return platform.AllocationReading{}, err
	}
	for _, d := range doms[1:] { // the planner writes them all alike
		m, b, err := p.rdt.ReadSchemata(ctrl, d)
		if err != nil {
			return platform.AllocationReading{}, err
		}
		if m != mask || b != mba {
			return platform.AllocationReading{}, fmt.Errorf("job %s: group %q differs across socket %d's domains: domain %d L3 %#x MB %d, domain %d L3 %#x MB %d", j.spec.Name, ctrl, j.socket, doms[0], mask, mba, d, m, b)
		}
	}
	return platform.AllocationReading{Group: ctrl, Mask: mask, MBA: mba}, nil
}
