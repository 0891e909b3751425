// Package simplatform is bench's `platform: sim`: jobs run as analytic workload models
// on the simulated machine (package sim), and allocations go through the real resctrl
// client (package resctrl) into the in-process resctrl emulator (resctrl/emu). After
// every change the simulated machine mirrors the emulator's classes of service — the
// CLOSID, L3 masks and MBA values of every group and which group each job's task is in —
// so the simulator only ever sees what resctrl accepted. The collector's read-back of a
// job's allocation also comes from the emulator, through the client.
//
// Import it for its side effect (bench.RegisterPlatform("sim", ...)).
package simplatform

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"colo/bench"
	"colo/counter"
	"colo/machine"
	"colo/platform"
	"colo/resctrl"
	"colo/resctrl/alloc"
	"colo/resctrl/emu"
	"colo/resctrl/plan"
	"colo/sched"
	"colo/sim"
)

func init() {
	bench.RegisterPlatform("sim", func(bm *bench.Benchmark) (bench.Platform, error) {
		return New(bm.Machine, sim.Options{Seed: bm.Seed, Noise: bm.Noise})
	})
}

// The capabilities of the simulated testbed (package platform).
var (
	_ bench.Platform        = (*Platform)(nil)
	_ platform.QuotaSetter  = (*Platform)(nil)
	_ platform.CLOSBudgeter = (*Platform)(nil)
)

// pidBase numbers the simulated jobs' tasks: job i is PID pidBase+i.
const pidBase = 10000

// DefaultPrefix names the groups of the simulated platform's instance (the mount is
// private to it).
const DefaultPrefix = "colo.sim."

// Platform is the simulated testbed.
type Platform struct {
	m      *machine.Profile
	sm     *sim.Machine
	emu    *emu.Emulator
	rc     *resctrl.Client
	ad     *resctrl.Adapter
	prefix string
	jobs   map[int]*job
	byID   map[sim.ID]*job
	al     *alloc.Allocator // every job's wish and placement (tenant j<ID>)
	jr     *alloc.Memory    // the allocator's journal: the simulator keeps it in memory
	notes  []string
	nbs    []*neighbour // stressors next to jobs (StartNeighbour)
	gen    uint64       // emulator generation last mirrored

	budget    []sched.CLOSBudget // CLOSBudget at emulator generation budgetGen
	budgetGen uint64
}

type job struct {
	id     int
	sid    sim.ID
	pid    int
	socket int
	cpus   []int
	c      counter.Reading
	q      float64 // CPU quota; 0 = none (SetQuota)
}

func (j *job) quota() float64 {
	if j.q > 0 {
		return j.q
	}
	return 1
}

func tenant(id int) string { return fmt.Sprintf("j%d", id) }

// New builds a simulated testbed for machine m.
func New(m *machine.Profile, opt sim.Options) (*Platform, error) {
	return NewPrefixed(m, opt, DefaultPrefix)
}

// NewPrefixed is New with the instance's group-name prefix (the conformance replay gives
// the sim and linux platforms the same one, so their resctrl trees can be compared).
func NewPrefixed(m *machine.Profile, opt sim.Options, prefix string) (*Platform, error) {
	sm, err := sim.New(m, opt)
	if err != nil {
		return nil, err
	}
	ep, err := emu.ProfileFromMachine(m, "")
	if err != nil {
		return nil, err
	}
	e, err := emu.New(ep, emu.Options{})
	if err != nil {
		return nil, err
	}
	// the platform owns the whole emulated mount, system/default included (the thesis
	// shrinks system/default to the ways no exclusive group holds)
	rc := resctrl.New(e.FS(), resctrl.Options{Prefix: prefix, AllowForeign: true})
	ad, err := resctrl.NewAdapter(rc, "emu:"+m.Name)
	if err != nil {
		return nil, err
	}
	p := &Platform{m: m, sm: sm, emu: e, rc: rc, ad: ad, prefix: prefix, jobs: map[int]*job{}, byID: map[sim.ID]*job{},
		jr: &alloc.Memory{}}
	p.al = alloc.New(alloc.Options{Machine: m, Mount: ad, Prefix: prefix, Journal: p.jr})
	return p, p.mirror()
}

// Emulator is the platform's resctrl emulator (tests compare its tree with another
// platform's).
func (p *Platform) Emulator() *emu.Emulator { return p.emu }

// Notes are the planner's notes (shared CLOS) and refusals, in order.
func (p *Platform) Notes() []string { return append([]string(nil), p.notes...) }

// Machine implements platform.Platform.
func (p *Platform) Machine() *machine.Profile { return p.m }

// Now implements platform.Platform.
func (p *Platform) Now() time.Duration { return p.sm.Now() }

// Check implements platform.Platform: the job must map to a workload model.
func (p *Platform) Check(j platform.Job) error {
	_, err := Workload(j)
	return err
}

// Start implements platform.Platform: the job's task starts in system/default with a
// monitoring group of its own, as on Linux.
func (p *Platform) Start(j platform.Job, cpus []int) error {
	if _, dup := p.jobs[j.ID]; dup {
		return fmt.Errorf("job %d already runs", j.ID)
	}
	w, err := Workload(j)
	if err != nil {
		return err
	}
	sid, err := p.sm.AddWorkload(w, cpus)
	if err != nil {
		return err
	}
	jb := &job{id: j.ID, sid: sid, pid: pidBase + j.ID, socket: p.m.SocketOfCore(cpus[0]), cpus: append([]int(nil), cpus...)}
	p.emu.Declare(jb.pid)
	p.jobs[j.ID] = jb
	p.byID[sid] = jb
	p.al.Set(plan.Want{Tenant: tenant(j.ID), Socket: jb.socket, Tasks: []int{jb.pid}, Monitor: true})
	if err := p.replan(); err != nil {
		return err
	}
	return p.mirror()
}

// Stop implements platform.Platform.
func (p *Platform) Stop(id int) error {
	jb, ok := p.jobs[id]
	if !ok {
		return fmt.Errorf("job %d is not running", id)
	}
	// its task back to system/default without a monitoring group, then it is forgotten
	// (the same steps as platform linux)
	p.al.Update(tenant(id), func(w *plan.Want) { w.Mask, w.MBA, w.Monitor = 0, 0, false })
	err := p.replan()
	p.al.Forget(tenant(id))
	if rerr := p.replan(); err == nil {
		err = rerr
	}
	p.emu.Forget(jb.pid)
	if rerr := p.sm.RemoveWorkload(jb.sid); err == nil {
		err = rerr
	}
	delete(p.jobs, id)
	delete(p.byID, jb.sid)
	if merr := p.mirror(); err == nil {
		err = merr
	}
	return err
}

// Move implements platform.Platform: the job is re-pinned and returns to system/default.
func (p *Platform) Move(id int, cpus []int) error {
	jb, ok := p.jobs[id]
	if !ok {
		return fmt.Errorf("job %d is not running", id)
	}
	p.al.Update(tenant(id), func(w *plan.Want) { w.Mask, w.MBA = 0, 0 })
	if err := p.replan(); err != nil {
		return err
	}
	if err := p.sm.Move(jb.sid, cpus); err != nil {
		return err
	}
	jb.cpus, jb.socket = append([]int(nil), cpus...), p.m.SocketOfCore(cpus[0])
	p.al.Update(tenant(id), func(w *plan.Want) { w.Socket = jb.socket })
	if err := p.replan(); err != nil {
		return err
	}
	return p.mirror()
}

// SetQuota implements platform.QuotaSetter: the job's workload runs quota of its cores' time
// (sim.Machine.SetQuota).
func (p *Platform) SetQuota(id int, quota float64) error {
	jb, ok := p.jobs[id]
	if !ok {
		return fmt.Errorf("job %d is not running", id)
	}
	if err := p.sm.SetQuota(jb.sid, quota); err != nil {
		return err
	}
	jb.q = quota
	return nil
}

// SetAllocation implements platform.AllocationApplier through the group planner (resctrl/plan):
// the job gets L3 mask `mask` and MBA `mba` on its socket in a control group it shares
// only with jobs asking for the same values (mask 0: back to system/default). An
// allocation the planner cannot honour (no CLOSID left, another agent's ways) leaves the
// job where it was and returns why.
func (p *Platform) SetAllocation(id, socket int, mask uint64, mba int) error {
	jb, ok := p.jobs[id]
	if !ok {
		return fmt.Errorf("job %d is not running", id)
	}
	if socket != jb.socket {
		return fmt.Errorf("job %d runs on socket %d, not %d", id, jb.socket, socket)
	}
	p.al.Update(tenant(id), func(w *plan.Want) { w.Mask, w.MBA = mask, mba })
	if err := p.replan(); err != nil {
		return err
	}
	return p.mirror()
}

// replan applies every job's wish through the allocator; the planner's notes and
// refusals go to the run's notes.
func (p *Platform) replan() error {
	out, err := p.al.Apply()
	p.notes = append(p.notes, out.Notes...)
	for _, r := range out.Refused {
		p.notes = append(p.notes, "refused: "+r.Error())
	}
	if err != nil {
		return err
	}
	return out.Err()
}

// Journal lists the groups the allocator's journal holds (the instance's groups on the
// emulated mount, recorded before they were made).
func (p *Platform) Journal() []string { return p.jr.Groups() }

// CLOSBudget implements platform.CLOSBudgeter: per socket, how many control groups the
// run may hold and the ways other agents claim (none on the private emulated mount).
func (p *Platform) CLOSBudget() []sched.CLOSBudget {
	if g := p.emu.Generation(); p.budget != nil && g == p.budgetGen {
		return p.budget // the private mount did not change
	}
	in, err := p.al.Input()
	if err != nil {
		return nil
	}
	p.budget, p.budgetGen = platform.Budgets(plan.Budgets(in)), p.emu.Generation()
	return p.budget
}

// SetDefaultMask implements platform.AllocationApplier: every L3 domain of the socket.
func (p *Platform) SetDefaultMask(socket int, mask uint64) error {
	doms, err := resctrl.SocketDomains(p.m, socket)
	if err != nil {
		return err
	}
	var s resctrl.Schemata
	for _, d := range doms {
		s = s.Set("L3", d, mask)
	}
	if err := p.rc.SetSchemata("", s); err != nil {
		return err
	}
	return p.mirror()
}

// mirror copies the emulator's classes of service into the simulated machine: every
// control group's CLOSID, masks and MBA values, and the CLOS of every job's task.
func (p *Platform) mirror() error {
	st := p.emu.State()
	if st.Generation == p.gen && p.gen != 0 {
		return nil
	}
	closOf := map[int]int{} // pid -> closid
	for _, g := range st.Groups {
		if g.IsMon || g.CLOSID < 0 { // a pseudo-locked group holds no CLOSID
			continue
		}
		masks := make([]uint64, p.m.LLCDomains())
		for d := range masks {
			masks[d] = p.m.FullMask()
			if v := g.Schemata["L3"]; d < len(v) {
				masks[d] = uint64(v[d])
			}
		}
		var mba []int
		if v := g.Schemata["MB"]; len(v) == len(masks) && p.m.MBA != nil {
			mba = make([]int, len(v))
			for d, x := range v {
				mba[d] = int(x)
			}
		}
		if err := p.sm.SetCLOS(g.CLOSID, masks, mba); err != nil {
			return fmt.Errorf("mirroring resctrl group %q (CLOSID %d) into the simulator: %w", g.Path, g.CLOSID, err)
		}
		for _, pid := range g.Tasks {
			closOf[pid] = g.CLOSID
		}
	}
	for _, jb := range p.sortedJobs() {
		if err := p.sm.Assign(jb.sid, closOf[jb.pid]); err != nil {
			return err
		}
	}
	for _, nb := range p.nbs { // in their job's class, or system/default's
		clos := 0
		if jb := p.jobs[nb.alongside]; jb != nil {
			clos = closOf[jb.pid]
		}
		if err := p.sm.Assign(nb.sid, clos); err != nil {
			return err
		}
	}
	p.gen = st.Generation
	return nil
}

func (p *Platform) sortedJobs() []*job {
	out := make([]*job, 0, len(p.jobs))
	for _, j := range p.jobs {
		out = append(out, j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].id < out[b].id })
	return out
}

// Read implements platform.CounterSampler.
func (p *Platform) Read(id int) (counter.Reading, error) {
	jb, ok := p.jobs[id]
	if !ok {
		return counter.Reading{}, fmt.Errorf("job %d is not running", id)
	}
	return jb.c, nil
}

// ReadAllocation implements platform.AllocationApplier: the job's group and its schemata on the
// job's socket, as the resctrl client reads them from the emulator.
func (p *Platform) ReadAllocation(id int) (platform.AllocationReading, error) {
	jb, ok := p.jobs[id]
	if !ok {
		return platform.AllocationReading{}, fmt.Errorf("job %d is not running", id)
	}
	g, _ := p.emu.TaskGroup(jb.pid) // the task's CLOSID as the emulated kernel holds it
	if g == "" {
		return platform.AllocationReading{}, nil
	}
	s, err := p.rc.Schemata(g)
	if err != nil {
		return platform.AllocationReading{}, err
	}
	dom := jb.socket * p.m.LLC.DomainsPerSocket
	r := platform.AllocationReading{Group: g}
	if v, ok := s.Get("L3", dom); ok {
		r.Mask = v
	}
	if v, ok := s.Get("MB", dom); ok {
		r.MBA = int(v)
	}
	return r, nil
}

// Advance implements platform.Platform: one simulator step to t.
func (p *Platform) Advance(t time.Duration) error {
	now := p.sm.Now()
	if t < now {
		return fmt.Errorf("time goes backwards: %v < %v", t, now)
	}
	if t == now {
		return nil
	}
	for _, c := range p.sm.Step(t - now) {
		jb := p.byID[c.ID]
		if jb == nil {
			continue
		}
		jb.c.Instructions += float64(c.Instructions)
		jb.c.Cycles += float64(c.Cycles)
		jb.c.StallsTotal += float64(c.StallCycles)
		jb.c.StallsL3Miss += float64(c.StallsL3Miss)
		jb.c.LLCReferences += float64(c.LLCReferences)
		jb.c.LLCMisses += float64(c.LLCMisses)
		jb.c.L1References += float64(c.L1References)
		jb.c.L2Misses += float64(c.L2Misses)
		jb.c.LLCOccupancy = float64(c.OccupancyBytes())
		jb.c.MBMTotalBytes += float64(c.MemBytesTotal)
		jb.c.MBMLocalBytes += float64(c.MemBytesLocal)
		jb.c.CPUTime += time.Duration(float64(t-now) * float64(len(jb.cpus)) * jb.quota())
	}
	return nil
}

// Private implements platform.Private: a Platform's machine, emulator and clock are its
// own.
func (p *Platform) Private() {}

// Close implements platform.Platform: every neighbour and job stops, every owned group
// is removed.
func (p *Platform) Close() error {
	var first error
	for len(p.nbs) > 0 {
		nb := p.nbs[0]
		p.nbs = p.nbs[1:]
		if err := p.sm.RemoveWorkload(nb.sid); err != nil && first == nil {
			first = err
		}
	}
	for _, jb := range p.sortedJobs() {
		if err := p.Stop(jb.id); err != nil && first == nil {
			first = err
		}
	}
	return first
}

var (
	flagMu  sync.Mutex
	flagRes = map[string]*regexp.Regexp{}
)

// flagVal finds `flag value` or `flag=value` in a command line.
func flagVal(cmd, flag string) (string, bool) {
	flagMu.Lock()
	re, ok := flagRes[flag]
	if !ok {
		re = regexp.MustCompile(`(?:^|\s)` + regexp.QuoteMeta(flag) + `(?:=|\s+)(\S+)`)
		flagRes[flag] = re
	}
	flagMu.Unlock()
	m := re.FindStringSubmatch(cmd)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func pageSize(s string) (int64, error) {
	switch strings.ToLower(s) {
	case "hugetlb-1g", "1g", "1gb":
		return sim.Page1G, nil
	case "hugetlb-2m", "thp", "2m", "2mb":
		return sim.Page2M, nil
	case "none", "4k", "4kb", "":
		return sim.Page4K, nil
	}
	return 0, fmt.Errorf("page size %q: use hugetlb-1g, hugetlb-2m, thp or none", s)
}

func atoi(s, what string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s %q is not a positive integer", what, s)
	}
	return n, nil
}

// Workload maps a job to the simulator's analytic model: an explicit `workload` spec
// (neighbor:6MB:1g, 7zip:2, matrix-3d:128, tsearch:131072, cpu-loop, lookbusy, mlr:8MB,
// mload:60MB) or the thesis job pool's commands (neighbor, 7z, stress-ng --matrix-3d /
// --tsearch). The job's thread count is its number of cores.
func Workload(j platform.Job) (sim.Workload, error) {
	threads := max(j.Cores, 1)
	if spec := strings.TrimSpace(j.Workload); spec != "" {
		return fromSpec(spec, threads)
	}
	cmd := j.Command
	if cmd == "" {
		return sim.Workload{}, fmt.Errorf("no workload model: give `workload:` (e.g. neighbor:6MB:1g) or a thesis command (neighbor, 7z, stress-ng --matrix-3d/--tsearch)")
	}
	w, err := fromCommand(cmd)
	if err != nil {
		return sim.Workload{}, fmt.Errorf("command %q: %v", cmd, err)
	}
	w.Threads = threads
	return w, nil
}

// fromSpec maps an explicit `workload:` spec to a model through the simulator's own
// grammar (sim.WorkloadNames); "cpu-loop" is accepted as a name of sim's "cpu".
func fromSpec(spec string, threads int) (sim.Workload, error) {
	if strings.Contains(spec, "|") || strings.Contains(spec, "@") {
		return phased(spec, threads)
	}
	if strings.EqualFold(spec, "cpu-loop") {
		spec = "cpu"
	}
	return sim.ParseWorkload(spec, threads, nil)
}

func fromCommand(cmd string) (sim.Workload, error) {
	fields := strings.Fields(cmd)
	if len(fields) == 0 {
		return sim.Workload{}, fmt.Errorf("empty command: give the program and its flags (e.g. neighbor --buffer-size 16MB) or set `workload:`")
	}
	prog := fields[0]
	if i := strings.LastIndex(prog, "/"); i >= 0 {
		prog = prog[i+1:]
	}
	switch prog {
	case "neighbor":
		size := "100MB"
		if v, ok := flagVal(cmd, "--buffer-size"); ok {
			size = v
		}
		b, err := sim.ParseSize(size)
		if err != nil {
			return sim.Workload{}, err
		}
		pages, _ := flagVal(cmd, "--hugepages")
		pg, err := pageSize(pages)
		if err != nil {
			return sim.Workload{}, err
		}
		if pat, _ := flagVal(cmd, "--pattern"); pat == "stride" {
			return sim.NeighborStride(b, pg), nil
		}
		return sim.Neighbor(b, pg), nil
	case "7z", "7za", "7zz":
		level, threads := 5, 1
		for _, f := range fields[1:] {
			if v, ok := strings.CutPrefix(f, "-mx="); ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					return sim.Workload{}, fmt.Errorf("7z -mx=%s: the compression level must be an integer (e.g. -mx=5)", v)
				}
				level = n
			} else if v, ok := strings.CutPrefix(f, "-mx"); ok && v != "" {
				if n, err := strconv.Atoi(v); err == nil {
					level = n
				}
			}
			if v, ok := strings.CutPrefix(f, "-mmt="); ok {
				if n, err := strconv.Atoi(v); err == nil {
					threads = n
				}
			}
		}
		return sim.SevenZip(level, threads), nil
	case "stress-ng":
		if _, ok := flagVal(cmd, "--matrix-3d"); ok {
			n := 128 // stress-ng's default size
			if v, ok := flagVal(cmd, "--matrix-3d-size"); ok {
				x, err := atoi(v, "--matrix-3d-size")
				if err != nil {
					return sim.Workload{}, err
				}
				n = x
			}
			return sim.StressMatrix3D(n), nil
		}
		if _, ok := flagVal(cmd, "--tsearch"); ok {
			n := 65536 // stress-ng's default size
			if v, ok := flagVal(cmd, "--tsearch-size"); ok {
				x, err := atoi(v, "--tsearch-size")
				if err != nil {
					return sim.Workload{}, err
				}
				n = x
			}
			return sim.StressTsearch(n), nil
		}
		if _, ok := flagVal(cmd, "--cpu"); ok {
			return sim.CPULoop(), nil
		}
		return sim.Workload{}, fmt.Errorf("stress-ng stressor not modelled (have --matrix-3d, --tsearch, --cpu)")
	}
	return sim.Workload{}, fmt.Errorf("program %q has no simulated model; set `workload:` (neighbor, 7zip, matrix-3d, tsearch, cpu-loop, lookbusy, mlr, mload)", prog)
}

// phased builds a looping multi-phase workload from "MODEL@SECONDS|MODEL@SECONDS…" (a
// container's phases: key).
func phased(spec string, threads int) (sim.Workload, error) {
	var w sim.Workload
	for _, part := range strings.Split(spec, "|") {
		m, secs, ok := strings.Cut(part, "@")
		d, err := strconv.ParseFloat(secs, 64)
		if !ok || err != nil || !(d > 0 && d <= 9e9) {
			return sim.Workload{}, fmt.Errorf("phase %q: want MODEL@SECONDS (0 < SECONDS ≤ 9e9)", part)
		}
		one, err := fromSpec(m, threads)
		if err != nil {
			return sim.Workload{}, err
		}
		for _, ph := range one.Phases {
			w.Phases = append(w.Phases, sim.Phase{Model: ph.Model, Duration: time.Duration(d * float64(time.Second))})
		}
	}
	w.Name, w.Loop, w.Threads = spec, true, threads
	return w, nil
}
