// Package alloc is the one stateful allocator over the resctrl group planner
// (colo/resctrl/plan): what each tenant wants, where the planner placed it, the journal
// and the refusal policy, in one place. Platform sim (on the emulated mount, with an
// in-memory journal), platform linux and the node agent all allocate through it, so a
// fix to the order of its steps is made once and the simulator exercises it too.
//
// Apply is one round: read the mount (plan.Read), plan every wish (plan.Plan), record
// every group about to be made in the journal before its mkdir, apply the operations,
// and drop every removed group from the journal after its rmdir (write-ahead: a crash
// leaves the journal naming a superset of the instance's groups). A refused wish falls
// back to where the tenant is. A tenant refused for want of an RMID (a new control group
// needs one) gives up its own monitoring group — isolation matters more, and its control
// group then monitors it — and is planned again after its monitoring group is gone.
//
// It imports no I/O: the mount and the journal are interfaces (resctrl.Adapter and
// resctrl/journal.Journal on a host, the emulator's adapter and Memory on the simulator).
package alloc

import (
	"maps"
	"sort"
	"sync"

	"colo/machine"
	"colo/resctrl/plan"
)

// Mount is the resctrl mount the allocator plans on and writes to.
type Mount interface {
	plan.State
	ApplyPlan(ops []plan.Op) error
}

// Journal records the instance's groups before they exist and forgets them after they
// are gone (resctrl/journal.Journal; Memory on the simulator).
type Journal interface {
	AddGroup(path string) error
	DropGroup(path string) error
}

// Memory is an in-memory Journal: the groups recorded and not yet dropped.
type Memory struct {
	mu     sync.Mutex
	groups map[string]bool
}

// AddGroup implements Journal.
func (m *Memory) AddGroup(path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.groups == nil {
		m.groups = map[string]bool{}
	}
	m.groups[path] = true
	return nil
}

// DropGroup implements Journal.
func (m *Memory) DropGroup(path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.groups, path)
	return nil
}

// Groups lists the recorded groups in order.
func (m *Memory) Groups() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.groups))
	for g := range m.groups {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

// Options configure an Allocator.
type Options struct {
	Machine *machine.Profile
	Mount   Mount
	// Prefix names the instance's control groups (a group is its own when its name starts
	// with Prefix).
	Prefix  string
	Journal Journal
}

// Outcome is what one Apply did beside its operations.
type Outcome struct {
	// Notes are the planner's notes (KPart-style sharing…).
	Notes []string
	// Refused are the wishes the planner refused; each tenant stays where it was.
	Refused []plan.Refusal
	// Unmonitored are the tenants that gave up their own monitoring group for a control
	// group (RMIDs ran out).
	Unmonitored []string
	// Budgets are the mount's budgets per socket as read at the start of the round.
	Budgets []plan.Budget
}

// Allocator holds every tenant's wish and placement. It is safe for concurrent use;
// Apply holds it for the whole round.
type Allocator struct {
	o      Options
	mu     sync.Mutex
	want   map[string]plan.Want
	placed map[string]plan.Placement
}

// New returns an allocator with no tenants.
func New(o Options) *Allocator {
	return &Allocator{o: o, want: map[string]plan.Want{}, placed: map[string]plan.Placement{}}
}

// Set records a tenant's wish (applied at the next Apply).
func (a *Allocator) Set(w plan.Want) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.want[w.Tenant] = w
}

// Update changes a tenant's wish in place; a tenant without one starts from a wish for a
// monitoring group of its own.
func (a *Allocator) Update(tenant string, f func(w *plan.Want)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.want[tenant]
	if !ok {
		w = plan.Want{Tenant: tenant, Monitor: true}
	}
	f(&w)
	a.want[tenant] = w
}

// Want is a tenant's current wish.
func (a *Allocator) Want(tenant string) (plan.Want, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.want[tenant]
	return w, ok
}

// Wants lists the tenants with a wish, in order.
func (a *Allocator) Wants() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.want))
	for t := range a.want {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Forget drops a tenant's wish: the next Apply removes its groups.
func (a *Allocator) Forget(tenant string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.want, tenant)
}

// Placement is where the planner put a tenant (the zero Placement: system/default, no
// group of its own).
func (a *Allocator) Placement(tenant string) plan.Placement {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.placed[tenant]
}

// Placed is where the planner put a tenant, and whether the last plan placed it at all.
func (a *Allocator) Placed(tenant string) (plan.Placement, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	pl, ok := a.placed[tenant]
	return pl, ok
}

// ForgetAll drops every wish: the next Apply removes all of the instance's groups.
func (a *Allocator) ForgetAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.want = map[string]plan.Want{}
}

// Unplace forgets a tenant's placement (its groups are gone from the mount).
func (a *Allocator) Unplace(tenant string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.placed, tenant)
}

// Remount forgets every placement: the mount is new and holds none of the instance's
// groups. The wishes stay, without their allocations (the policy sets them again).
func (a *Allocator) Remount() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.placed = map[string]plan.Placement{}
	for t, w := range a.want {
		w.Mask, w.MBA = 0, 0
		a.want[t] = w
	}
}

// Input reads the mount and gathers every wish: the planner's input.
func (a *Allocator) Input() (plan.Input, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.input()
}

func (a *Allocator) input() (plan.Input, error) {
	return plan.Read(a.o.Mount, a.o.Machine, a.o.Prefix, maps.Clone(a.placed), maps.Clone(a.want))
}

// Budgets are the mount's budgets per socket (how many control groups the instance may
// hold, the ways other agents claim).
func (a *Allocator) Budgets() ([]plan.Budget, error) {
	in, err := a.Input()
	if err != nil {
		return nil, err
	}
	return plan.Budgets(in), nil
}

// Apply plans every wish and applies the plan (see the package comment). It returns the
// first error of reading the mount, the journal or applying the operations; refusals are
// in the Outcome (Outcome.Err joins them).
func (a *Allocator) Apply() (Outcome, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out Outcome
	err := a.apply(&out, true)
	return out, err
}

func (a *Allocator) apply(out *Outcome, first bool) error {
	in, err := a.input()
	if err != nil {
		return err
	}
	if first {
		out.Budgets = plan.Budgets(in)
	}
	res := plan.Plan(in)
	out.Notes = append(out.Notes, res.Notes...)
	for _, o := range res.Ops { // recorded before they exist
		if o.Kind == plan.Mkdir && a.o.Journal != nil {
			if err := a.o.Journal.AddGroup(o.Group); err != nil {
				return err
			}
		}
	}
	aerr := a.o.Mount.ApplyPlan(res.Ops)
	if aerr == nil {
		for _, o := range res.Ops { // forgotten once they are gone
			if o.Kind == plan.Rmdir && a.o.Journal != nil {
				if err := a.o.Journal.DropGroup(o.Group); err != nil {
					return err
				}
			}
		}
		a.placed = res.Placed
	}
	var retry []string
	for _, r := range res.Refused {
		w, ok := a.want[r.Tenant]
		if !ok {
			continue
		}
		if r.Kind == plan.RefusedRMID && w.Monitor && aerr == nil {
			// a control group needs an RMID too: the tenant's own monitoring group goes
			w.Monitor = false
			a.want[r.Tenant] = w
			retry = append(retry, r.Tenant)
			continue
		}
		pl := a.placed[r.Tenant]
		w.Mask, w.MBA = pl.Mask, pl.MBA
		if pl.Group != "" {
			w.Socket = pl.Socket
		}
		a.want[r.Tenant] = w
		out.Refused = append(out.Refused, r)
	}
	if aerr != nil {
		return &ApplyError{aerr}
	}
	if len(retry) == 0 {
		return nil
	}
	out.Unmonitored = append(out.Unmonitored, retry...)
	// the planner frees an RMID only after the new group exists: give the monitoring
	// groups up first (in system/default), then allocate
	wanted := map[string]plan.Want{}
	for _, t := range retry {
		w := a.want[t]
		wanted[t] = w
		w.Mask, w.MBA = 0, 0
		a.want[t] = w
	}
	if err := a.apply(out, false); err != nil {
		return err
	}
	for t, w := range wanted {
		if _, ok := a.want[t]; ok {
			a.want[t] = w
		}
	}
	return a.apply(out, false)
}

// ApplyError is a failure of the mount to apply the plan's operations (not of reading
// the mount or writing the journal).
type ApplyError struct{ Err error }

func (e *ApplyError) Error() string { return e.Err.Error() }
func (e *ApplyError) Unwrap() error { return e.Err }

// Err joins an Outcome's refusals into one error (nil when every wish was honoured).
func (o Outcome) Err() error { return plan.Result{Refused: o.Refused}.Err() }
