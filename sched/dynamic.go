package sched

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"sort"
	"time"

	"colo/cbm"
	"colo/probe"
)

func init() {
	f := func(env Env) (Scheduler, error) { return NewDynamic(env) }
	Register("dynamic", f)
	// the thesis repository's implementation name (seed000.md §2.3 [repo])
	Register("dynamic-v3", f)
}

type probeState int

const (
	notProbed probeState = iota
	waitingProbe
	probing
	allocated
	unallocated    // probe failed, was refused, or allocate: false
	reprobeWaiting // allocated, fell below its threshold: queued in Q_alloc for a new probe
)

type djob struct {
	Job
	socket int
	placed time.Duration
	state  probeState
	load   float64 // latest StallsL3Miss %, 100 without data
	hasObs bool
	last   *Sample // latest collector sample
	// the latest probe: its threshold, whether the result met it, when it ended; and
	// since when the job's allocation has been unchanged (a consolidation moves it)
	target   float64
	met      bool
	probeEnd time.Duration
	settled  time.Duration
	probes   int
}

// Dynamic is the thesis's dynamic scheduler (Algorithm 3, seed000.md §2.3):
//   - finished jobs relinquish their RDT resources;
//   - probe results shrink the job's probe buffer to the minimal allocation found (in
//     order of arrival) — or release it when the probe failed, leaving the job running
//     unallocated in system/default;
//   - Q_alloc (priority jobs waiting for a probe, FIFO) is served head first once the
//     head has run T_warmup: the head's probe buffer (max_l3+buffer_ways ways,
//     max_mem+buffer_memory % MBA) is reserved best-fit; if the socket has the ways but
//     not contiguously it is consolidated first; an infeasible head blocks the queue;
//   - strict FIFO admission without backfilling: a priority job goes to the socket with
//     more uncommitted RDT resources (unprobed priority jobs assumed to hold a full
//     buffer; ties: MBA, then fewer priority jobs, then more free cores), a batch job to
//     the socket with the least memory-stall load (Σ StallsL3Miss% of its batch jobs,
//     100 for a job without data yet);
//   - rebalancing after a batch job's warm-up: if the socket loads differ by more than
//     RebalanceThreshold, move the youngest batch job of the most loaded socket that
//     improves the difference by at least RebalanceMinGain; one move per round, at most
//     every RebalanceCooldown, never while a probe runs;
//   - re-probing (Config.Reprobe): an allocated job whose probe met its threshold and
//     whose collector sample, taken entirely under its settled allocation, falls below
//     that threshold joins Q_alloc again, at the earliest Probe.CooldownT after its
//     previous probe ended; it keeps its allocation until its new probe buffer (its own
//     ways count as free) is reserved;
//   - forced moves (Config.ForceMove): a priority job at the head of the queue that fits
//     on no socket makes room: the smallest batch jobs of the best-ranked socket where
//     that is possible move to other sockets, and the job is admitted next tick;
//   - without IPCE (Env.IPCEUnavailable: software counters only) nothing is probed or
//     allocated: priority jobs run in system/default, and the first tick logs why.
type Dynamic struct {
	env     Env
	cfg     Config
	acct    *Accountant
	jobs    map[int]*djob
	qalloc  []int
	timers  []time.Duration // batch warm-up timers that trigger a rebalance
	lastReb time.Duration
	rebOnce bool
	now     time.Duration
	// Reprobes and ForcedMoves count re-probes started and batch jobs moved for a
	// priority admission (for tests and logs).
	Reprobes, ForcedMoves int
	// noProbeSaid: the decision not to probe (Env.IPCEUnavailable) has been logged
	noProbeSaid bool
}

// probes says whether priority jobs are probed: RDT is on and the platform can measure
// IPCE (a probe without IPCE samples can only fail, so its buffer CLOS would be created
// and dropped for nothing).
func (d *Dynamic) probes() bool { return d.cfg.RDT && d.env.IPCEUnavailable == "" }

// NewDynamic builds the dynamic scheduler for env.
func NewDynamic(env Env) (*Dynamic, error) {
	cfg := env.Config
	if len(cfg.Options) > 0 {
		keys := slices.Sorted(maps.Keys(cfg.Options))
		return nil, fmt.Errorf("dynamic takes no scheduler.options; remove %v", keys)
	}
	m := env.Machine
	a, err := NewAccountant(m.Sockets*m.LLC.DomainsPerSocket, m.LLC.Ways, cfg.ReserveWays, cfg.ReserveMBA)
	if err != nil {
		return nil, err
	}
	if m.LLC.DomainsPerSocket != 1 {
		return nil, fmt.Errorf("dynamic schedules per socket; machine %s has %d LLC domains per socket", m.Name, m.LLC.DomainsPerSocket)
	}
	if cfg.RDT {
		mbaMin := 10
		if m.MBA != nil {
			mbaMin = m.MBA.Min
		}
		if err := cfg.Probe.Validate(m.LLC.Ways-cfg.ReserveWays, mbaMin); err != nil {
			return nil, fmt.Errorf("prober: %v", err)
		}
		if cfg.Probe.MaxMem+cfg.Probe.BufferMem > a.MBABudget() {
			return nil, fmt.Errorf("prober: max_mem+buffer_memory %d%% exceeds the %d%% MBA budget left after the system/default reserve", cfg.Probe.MaxMem+cfg.Probe.BufferMem, a.MBABudget())
		}
	}
	return &Dynamic{env: env, cfg: cfg, acct: a, jobs: map[int]*djob{}}, nil
}

// Name implements Scheduler.
func (d *Dynamic) Name() string { return "dynamic" }

// Accountant exposes the scheduler's bookkeeping (read-only use: tests, self-checks).
func (d *Dynamic) Accountant() *Accountant { return d.acct }

func groupName(id int) string { return fmt.Sprintf("job-%d", id) }

func (d *Dynamic) bufferSize() (ways, mba int) {
	p := d.cfg.Probe
	return p.MaxL3 + p.BufferWays, p.MaxMem + p.BufferMem
}

// Tick implements Scheduler.
func (d *Dynamic) Tick(obs *Observation) Decisions {
	var out Decisions
	logf := func(f string, a ...any) { out.Log = append(out.Log, fmt.Sprintf(f, a...)) }

	// 1. finished jobs relinquish their resources
	for _, id := range obs.Finished {
		d.forget(id)
	}
	d.now = obs.Now
	for s, b := range obs.CLOS {
		d.acct.Limit(s, b)
	}
	if d.cfg.RDT && !d.probes() && !d.noProbeSaid {
		d.noProbeSaid = true
		logf("no allocation probing: IPCE is unavailable on this platform (%s); priority jobs run unallocated in system/default", d.env.IPCEUnavailable)
	}
	running := map[int]bool{}
	for _, r := range obs.Running {
		running[r.ID] = true
		if j, ok := d.jobs[r.ID]; ok {
			j.socket = r.Socket
			if r.Last != nil {
				j.load = nanTo(r.Last.L3MissStallPercent(), 0)
				j.hasObs = true
				j.last = r.Last
			}
		}
	}
	for _, j := range d.sorted() { // jobs that vanished without a Finished notice
		if !running[j.ID] {
			d.forget(j.ID)
		}
	}

	// 2. probe results, in order
	for _, pr := range obs.ProbeResults {
		j, ok := d.jobs[pr.Job]
		if !ok || j.state != probing {
			continue
		}
		g, _ := d.acct.Group(groupName(j.ID))
		j.probeEnd, j.settled, j.met = obs.Now, obs.Now, false
		switch {
		case pr.Err != "":
			d.acct.Release(groupName(j.ID))
			j.state = unallocated
			out.Allocate = append(out.Allocate, Allocation{Job: j.ID, Socket: g.Socket, Reason: "probe-failed"})
			logf("job %d: probe failed (%s); keeps running unallocated in system/default", j.ID, pr.Err)
		case !d.cfg.Probe.Allocate:
			d.acct.Release(groupName(j.ID))
			j.state = unallocated
			out.Allocate = append(out.Allocate, Allocation{Job: j.ID, Socket: g.Socket, Reason: "probe-only"})
			logf("job %d: probe result %d ways/%d%% (allocate: false)", j.ID, pr.Ways, pr.MBA)
		default:
			if d.cfg.Probe.Greedy && len(pr.Segments) > 0 {
				// greedy: the passing combination that fits best what the socket has
				// free (its buffer included), judged with the accountant's view
				i := probe.ChooseGreedy(pr.Segments, pr.Target, d.acct.FreeWays(g.Socket)+bits.OnesCount64(g.Mask), d.acct.FreeMBA(g.Socket)+g.MBA)
				pr.Combo, pr.IPCE = pr.Segments[i].Combo, pr.Segments[i].IPCE
				pr.Met = pr.IPCE >= pr.Target
			}
			ways := min(pr.Ways+d.cfg.Probe.BufferWays, bits.OnesCount64(g.Mask))
			mba := min(pr.MBA+d.cfg.Probe.BufferMem, g.MBA)
			ng, err := d.acct.Shrink(groupName(j.ID), ways, mba)
			if err != nil { // cannot happen: the result lies inside the buffer
				d.acct.Release(groupName(j.ID))
				j.state = unallocated
				out.Allocate = append(out.Allocate, Allocation{Job: j.ID, Socket: g.Socket, Reason: "probe-failed"})
				logf("job %d: %v", j.ID, err)
				continue
			}
			j.state, j.target, j.met = allocated, pr.Target, pr.Met
			out.Allocate = append(out.Allocate, Allocation{Job: j.ID, Socket: ng.Socket, Mask: ng.Mask, MBA: ng.MBA, Reason: "probe-result"})
			logf("job %d: allocated %d ways %#x + %d%% MBA on socket %d (probe IPCE %.1f%%, met=%v)", j.ID, ways, ng.Mask, ng.MBA, ng.Socket, 100*pr.IPCE, pr.Met)
		}
	}

	// optional eager defragmentation (Config.Defragment)
	if d.cfg.Defragment {
		for s := 0; s < d.acct.Sockets(); s++ {
			if free := d.acct.FreeMask(s); free != 0 && cbm.Mask(free).LongestRun(d.acct.TotalWays()).Ones() < bits.OnesCount64(free) {
				d.consolidate(s, &out, logf)
			}
		}
	}

	probesActive := false
	for _, j := range d.sorted() {
		if j.state == probing {
			probesActive = true
		}
		if d.reprobeDue(j, obs.Now) {
			j.state = reprobeWaiting
			d.qalloc = append(d.qalloc, j.ID)
			logf("job %d: IPCE %.1f%% below its threshold %.1f%% under its allocation; queued for a new probe", j.ID, 100*j.last.IPCE(), 100*j.target)
		}
	}

	// 3. serve Q_alloc head first
	for len(d.qalloc) > 0 && d.cfg.RDT {
		j := d.jobs[d.qalloc[0]]
		if obs.Now < j.placed+d.cfg.Probe.WarmupT {
			break
		}
		bw, bm := d.bufferSize()
		now, after := d.fitBuffer(j, bw, bm)
		if !now && after {
			d.consolidate(j.socket, &out, logf)
			now, _ = d.fitBuffer(j, bw, bm)
		}
		if !now {
			break // an infeasible head blocks the queue
		}
		if j.state == reprobeWaiting {
			d.acct.Release(groupName(j.ID)) // its ways become part of its new buffer
			d.Reprobes++
		}
		g, err := d.acct.Allocate(groupName(j.ID), j.socket, bw, bm)
		if err != nil {
			break
		}
		j.state = probing
		j.probes++
		probesActive = true
		d.qalloc = d.qalloc[1:]
		out.Allocate = append(out.Allocate, Allocation{Job: j.ID, Socket: g.Socket, Mask: g.Mask, MBA: g.MBA, Reason: "probe-buffer"})
		out.Probe = append(out.Probe, ProbeRequest{Job: j.ID, Socket: g.Socket, Buffer: g.Mask, MaxMBA: g.MBA, Config: d.cfg.Probe})
		logf("job %d: probe buffer %#x + %d%% MBA on socket %d", j.ID, g.Mask, g.MBA, g.Socket)
	}

	// 4. strict FIFO admission
	free := CopyFree(obs.FreeCPUs)
	forced := false
	for _, q := range obs.Queue {
		if why := NeverFits(q, d.env.Machine); why != "" {
			out.Reject = append(out.Reject, Rejection{Job: q.ID, Reason: why})
			continue
		}
		var s int
		if q.Priority {
			s = d.prioritySocket(q, free)
		} else {
			s = d.batchSocket(q, free)
		}
		if s < 0 {
			if q.Priority && d.cfg.ForceMove {
				if mv := d.forceMove(q, free); len(mv) > 0 {
					out.Migrate = append(out.Migrate, mv...)
					forced = true
					for _, m := range mv {
						logf("force-move: job %d to socket %d to make room for priority job %d", m.Job, m.Socket, q.ID)
					}
				}
			}
			break
		}
		Take(q, s, free)
		out.Place = append(out.Place, Placement{Job: q.ID, Socket: s})
		j := &djob{Job: q, socket: s, placed: obs.Now, load: 100}
		d.jobs[q.ID] = j
		if q.Priority && d.cfg.RDT && !d.probes() {
			j.state = unallocated // no IPCE: never probed (logged once above)
		} else if q.Priority && d.cfg.RDT {
			j.state = waitingProbe
			d.qalloc = append(d.qalloc, q.ID)
		} else if !q.Priority && d.cfg.Rebalance {
			d.timers = append(d.timers, obs.Now+d.cfg.Probe.WarmupT)
		}
	}

	// 5. rebalance when a warm-up timer is due
	due := false
	keep := d.timers[:0]
	for _, t := range d.timers {
		if t <= obs.Now {
			due = true
		} else {
			keep = append(keep, t)
		}
	}
	d.timers = keep
	if due && d.cfg.Rebalance && !probesActive && !forced && (!d.rebOnce || obs.Now-d.lastReb >= d.cfg.RebalanceCooldown) {
		if mv, ok := d.rebalance(free); ok {
			out.Migrate = append(out.Migrate, mv)
			d.jobs[mv.Job].socket = mv.Socket
			d.lastReb, d.rebOnce = obs.Now, true
			logf("rebalance: job %d to socket %d", mv.Job, mv.Socket)
		}
	}
	return out
}

// reprobeDue says whether job j should be probed again now (Config.Reprobe): it holds
// the allocation of a probe that met its threshold, its latest collector sample covers
// only time after the allocation settled and lies below the threshold, and the cool-down
// since its previous probe (Probe.CooldownT, seed000.md §2.2) has passed.
func (d *Dynamic) reprobeDue(j *djob, now time.Duration) bool {
	if !d.cfg.Reprobe || !d.cfg.RDT || j.state != allocated || !j.met || j.last == nil {
		return false
	}
	if j.last.At-j.last.Interval < j.settled || now < j.probeEnd+d.cfg.Probe.CooldownT {
		return false
	}
	ipce := j.last.IPCE()
	return !math.IsNaN(ipce) && ipce < j.target
}

// fitBuffer is Accountant.Fit for j's probe buffer; a job waiting for a re-probe counts
// its own ways and bandwidth as free (they become part of the buffer).
func (d *Dynamic) fitBuffer(j *djob, ways, mba int) (now, afterConsolidation bool) {
	if j.state != reprobeWaiting {
		return d.acct.Fit(j.socket, ways, mba)
	}
	g, ok := d.acct.Group(groupName(j.ID))
	if !ok {
		return d.acct.Fit(j.socket, ways, mba)
	}
	if mba > d.acct.FreeMBA(j.socket)+g.MBA {
		return false, false
	}
	free := d.acct.FreeMask(j.socket) | g.Mask
	_, now = cbm.BestFit(cbm.Mask(free), d.acct.TotalWays(), ways)
	return now, bits.OnesCount64(free) >= ways
}

// forceMove makes room for priority job q that fits on no socket: on the best-ranked
// socket (prioritySocket's order) where it is possible, the smallest batch jobs (fewest
// cores, then youngest) move to the other socket with the most free cores where they
// fit, until q's cores are free. Pinned jobs and jobs placed this tick stay. Nothing
// moves unless q then fits (seed000.md §2.3 [repo] force_move_for_priority_admission).
func (d *Dynamic) forceMove(q Job, free [][]int) []Migration {
	if len(q.CPUs) > 0 {
		return nil
	}
	for _, s := range d.priorityRanking(free) {
		need := q.Cores - len(free[s])
		if need <= 0 {
			continue
		}
		var cands []*djob
		for _, j := range d.sorted() {
			if j.socket == s && !j.Priority && len(j.CPUs) == 0 && j.placed < d.now {
				cands = append(cands, j)
			}
		}
		sort.SliceStable(cands, func(a, b int) bool {
			if cands[a].Cores != cands[b].Cores {
				return cands[a].Cores < cands[b].Cores
			}
			if cands[a].placed != cands[b].placed {
				return cands[a].placed > cands[b].placed
			}
			return cands[a].ID > cands[b].ID
		})
		f := CopyFree(free)
		var mv []Migration
		for _, j := range cands {
			if need <= 0 {
				break
			}
			dest := -1
			for o := range f {
				if o != s && Fits(j.Job, o, f) && (dest < 0 || len(f[o]) > len(f[dest])) {
					dest = o
				}
			}
			if dest < 0 {
				continue
			}
			Take(j.Job, dest, f)
			need -= j.Cores
			mv = append(mv, Migration{Job: j.ID, Socket: dest})
		}
		if need > 0 {
			continue
		}
		copy(free, f)
		for _, m := range mv {
			d.jobs[m.Job].socket = m.Socket
		}
		d.ForcedMoves += len(mv)
		return mv
	}
	return nil
}

// consolidate repacks socket s and emits the moved groups' new masks.
func (d *Dynamic) consolidate(s int, out *Decisions, logf func(string, ...any)) {
	for _, mv := range d.acct.Consolidate(s) {
		var id int
		fmt.Sscanf(mv.Name, "job-%d", &id)
		if j, ok := d.jobs[id]; ok {
			j.settled = d.now // it lost its cached lines: judge it again from now on
		}
		g, _ := d.acct.Group(mv.Name)
		for i := range out.Probe { // a buffer reserved earlier this tick moved: its probe follows
			if out.Probe[i].Job == id {
				out.Probe[i].Buffer = mv.To
			}
		}
		out.Allocate = append(out.Allocate, Allocation{Job: id, Socket: mv.Socket, Mask: mv.To, MBA: g.MBA, Reason: "consolidate"})
		out.ConsolidatedWays += mv.LostWays
		logf("consolidate socket %d: job %d %#x -> %#x (loses %d ways of cached lines)", mv.Socket, id, mv.From, mv.To, mv.LostWays)
	}
}

// sorted lists the jobs by ID so that float sums and ties are deterministic.
func (d *Dynamic) sorted() []*djob {
	return slices.SortedFunc(maps.Values(d.jobs), func(a, b *djob) int { return cmp.Compare(a.ID, b.ID) })
}

func (d *Dynamic) forget(id int) {
	d.acct.Release(groupName(id))
	delete(d.jobs, id)
	for i, q := range d.qalloc {
		if q == id {
			d.qalloc = append(d.qalloc[:i], d.qalloc[i+1:]...)
			break
		}
	}
}

// prioritySocket ranks sockets by assumed committed ways, then MBA (a priority job
// without a probe result is assumed to hold a full buffer), then fewer priority jobs,
// then more free cores (seed000.md §2.3 [repo] "priority-socket ranking").
func (d *Dynamic) prioritySocket(q Job, free [][]int) int {
	for _, s := range d.priorityRanking(free) {
		if Fits(q, s, free) {
			return s
		}
	}
	return -1
}

// priorityRanking orders all sockets best first for a priority job (see prioritySocket).
func (d *Dynamic) priorityRanking(free [][]int) []int {
	bw, bm := d.bufferSize()
	type rank struct{ s, ways, mba, prio int }
	var rs []rank
	for s := range free {
		ways, mba, prio := bits.OnesCount64(d.acct.AllocatedMask(s)), d.acct.MBABudget()-d.acct.FreeMBA(s), 0
		for _, j := range d.sorted() {
			if j.socket != s || !j.Priority {
				continue
			}
			prio++
			if j.state == waitingProbe {
				ways += bw
				mba += bm
			}
		}
		rs = append(rs, rank{s, ways, mba, prio})
	}
	sort.SliceStable(rs, func(a, b int) bool {
		x, y := rs[a], rs[b]
		if x.ways != y.ways {
			return x.ways < y.ways
		}
		if x.mba != y.mba {
			return x.mba < y.mba
		}
		if x.prio != y.prio {
			return x.prio < y.prio
		}
		return len(free[x.s]) > len(free[y.s])
	})
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.s
	}
	return out
}

func (d *Dynamic) loads() []float64 {
	l := make([]float64, d.acct.Sockets())
	for _, j := range d.sorted() {
		if !j.Priority && j.socket < len(l) {
			l[j.socket] += j.load
		}
	}
	return l
}

// batchSocket is the socket with the least summed StallsL3Miss% of its batch jobs among
// those where q fits; ties to more free cores, then the lower index.
func (d *Dynamic) batchSocket(q Job, free [][]int) int {
	l := d.loads()
	best := -1
	for s := range free {
		if !Fits(q, s, free) {
			continue
		}
		if best < 0 || l[s] < l[best] || l[s] == l[best] && len(free[s]) > len(free[best]) {
			best = s
		}
	}
	return best
}

func (d *Dynamic) rebalance(free [][]int) (Migration, bool) {
	l := d.loads()
	hi, lo := 0, 0
	for s := range l {
		if l[s] > l[hi] {
			hi = s
		}
		if l[s] < l[lo] {
			lo = s
		}
	}
	diff := l[hi] - l[lo]
	if hi == lo || diff <= d.cfg.RebalanceThreshold {
		return Migration{}, false
	}
	var cands []*djob
	for _, j := range d.sorted() {
		if j.socket == hi && !j.Priority && len(j.CPUs) == 0 {
			cands = append(cands, j)
		}
	}
	// youngest first, ties by ID for determinism
	sort.Slice(cands, func(a, b int) bool {
		if cands[a].placed != cands[b].placed {
			return cands[a].placed > cands[b].placed
		}
		return cands[a].ID > cands[b].ID
	})
	for _, j := range cands {
		if !Fits(j.Job, lo, free) {
			continue
		}
		nd := (l[hi] - j.load) - (l[lo] + j.load)
		if nd < 0 {
			nd = -nd
		}
		if diff-nd >= d.cfg.RebalanceMinGain {
			Take(j.Job, lo, free)
			return Migration{Job: j.ID, Socket: lo}, true
		}
	}
	return Migration{}, false
}
