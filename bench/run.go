package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"colo/counter"
	"colo/machine"
	"colo/metric"
	"colo/platform"
	"colo/policy/mbps"
	"colo/sched"
)

// Options tune one run.
type Options struct {
	// Warn receives warnings (a job that can never be admitted, a failed allocation).
	Warn func(string)
	// Recorder receives jobs, samples, allocations, events and probe segments.
	Recorder Recorder
	// Hooks watch the run as it goes (progress, interval metrics).
	Hooks Hooks
	// Ctx cancels the run (SIGINT/SIGTERM): the loop stops at its next step, running jobs
	// are recorded as killed ("interrupted") and Run returns what it has with an error
	// wrapping ErrInterrupted. nil: never cancelled.
	Ctx context.Context
}

// ErrInterrupted is wrapped by the error of a run stopped through Options.Ctx.
var ErrInterrupted = errors.New("interrupted")

// interrupted returns an error wrapping ErrInterrupted and ctx's cause.
func interrupted(ctx context.Context) error {
	return fmt.Errorf("%w: %v", ErrInterrupted, context.Cause(ctx))
}

type rjob struct {
	spec     *JobSpec
	state    string
	reason   string
	socket   int
	cpus     []int
	start    time.Duration
	stop     time.Duration
	end      time.Duration // planned end, -1: until max_t
	last     counter.Reading
	lastT    time.Duration
	next     time.Duration // next collector sample
	series   []metric.Sample
	lastSamp *sched.Sample
	reserved uint64 // mask the scheduler gave the job (a probe buffer or its allocation)
	mba      int
	// appliedMask/MBA are what was last written to resctrl for the job (a probe
	// segment's sub-mask while probing)
	appliedMask uint64
	appliedMBA  int
	probe       *activeProbe
	probes      int
	violations  []Violation // samples of a server over its SLO
	// the MB/s loop of a job with mba_mbps (holdBandwidth)
	bw      *mbps.Controller
	bwSeen  *sched.Sample
	bwState mbps.State
	bwQuota float64
}

// Violation is one collector interval, ending at At, in which a server's p99 latency
// exceeded its SLO.
type Violation struct {
	At, Interval time.Duration
	LatencyMs    float64
}

// JobResult is one job's outcome.
type JobResult struct {
	ID             int
	Name           string
	Priority       bool
	Target         float64 // fraction; 0 none
	State          string
	Reason         string
	Arrival        time.Duration
	Start          time.Duration // -1: never started
	Stop           time.Duration
	IPCE           float64 // time-weighted mean over its collector samples (fraction)
	TimeOverTarget float64 // fraction of its life with IPCE ≥ target (NaN without target)
	Duration       time.Duration
	Samples        int
	Cores          int
	// SLOms is the server's SLO (0: not a server); Violations its intervals over it.
	SLOms      float64
	Violations []Violation
	Antagonist bool
}

// Result is one scheduler's run of a trace.
type Result struct {
	Scheduler        string
	Jobs             []JobResult
	Virtual          time.Duration
	Samples          int
	Probes           int
	ProbesFailed     int
	Reprobes         int // probes of a job that had been probed before
	Migrations       int // jobs moved to another socket (rebalancing, forced moves)
	Consolidations   int
	ConsolidatedWays int
	// AllocationMismatches counts collector read-backs that disagreed with what the
	// scheduler applied (a failed or lost allocation).
	AllocationMismatches int
	AllocationErrors     int
	// StartFailures counts jobs the platform could not start (recorded as rejected):
	// `colo run` exits 1 when there are any.
	StartFailures int
	Warnings      []string
}

type runner struct {
	bm      *Benchmark
	m       *machine.Profile // the platform's machine (on linux the detected host)
	pf      Platform
	sch     sched.Scheduler
	rec     Recorder
	warn    func(string)
	jobs    []*rjob
	byID    map[int]*rjob
	queue   []*rjob
	busy    map[int]int // cpu -> job
	res     *Result
	results []sched.ProbeResult
	done    []int
	defMask map[int]uint64
	live    []*rjob // running jobs by ID
	// bwWarned: a job's mba_mbps could not be held (no MBA) and that was said
	bwWarned bool
	err      error
	ctx      context.Context
	obs      *observer
}

func (r *runner) fail(err error) {
	if err != nil && r.err == nil {
		r.err = err
	}
}

func (r *runner) warnf(f string, a ...any) {
	s := fmt.Sprintf(f, a...)
	r.res.Warnings = append(r.res.Warnings, s)
	if r.warn != nil {
		r.warn(s)
	}
}

func (r *runner) event(kind string, job int, text string) {
	r.fail(r.rec.Event(EventRecord{T: r.pf.Now(), Kind: kind, Job: job, Text: text}))
}

func (r *runner) recordJob(j *rjob) {
	tgt := math.NaN()
	if j.spec.IPCETarget > 0 {
		tgt = j.spec.IPCETarget
	}
	model := j.spec.Workload
	if model == "" {
		model = j.spec.Image
	}
	r.fail(r.rec.Job(JobRecord{ID: j.spec.ID, Name: j.spec.Name, Kind: j.spec.Kind, Model: model,
		Priority: j.spec.Priority, IPCETarget: tgt, Cores: j.spec.Cores, CoreList: machine.FormatCPUList(j.cpus),
		Socket: j.socket, Arrival: j.spec.Arrival, Start: j.start, Stop: j.stop, State: j.state, Reason: j.reason}))
}

// Run replays the benchmark's trace on pf under sch until max_t (or until every job has
// finished or been rejected) and returns the per-job outcomes. It checks every job with
// the platform before anything starts.
func Run(bm *Benchmark, pf Platform, sch sched.Scheduler, opt Options) (*Result, error) {
	for i := range bm.Jobs {
		if err := pf.Check(bm.Jobs[i]); err != nil {
			return nil, &Error{File: bm.Jobs[i].Source, Msg: fmt.Sprintf("job %s: %v", bm.Jobs[i].Name, err)}
		}
	}
	r := &runner{bm: bm, m: pf.Machine(), pf: pf, sch: sch, rec: opt.Recorder, warn: opt.Warn, byID: map[int]*rjob{},
		busy: map[int]int{}, res: &Result{Scheduler: sch.Name()}, defMask: map[int]uint64{}, obs: newObserver(opt.Hooks, sch.Name()), ctx: opt.Ctx}
	if r.ctx == nil {
		r.ctx = context.Background()
	}
	if r.rec == nil {
		r.rec = Discard{}
	}
	for i := range bm.Jobs {
		j := &rjob{spec: &bm.Jobs[i], state: StateQueued, socket: -1, start: -1, stop: -1, end: -1}
		r.jobs = append(r.jobs, j)
		r.byID[j.spec.ID] = j
	}
	m := r.m
	for s := 0; s < m.Sockets; s++ {
		r.defMask[s] = m.FullMask()
	}
	err := r.loop()
	r.fail(err)
	if r.err != nil {
		return r.res, r.err
	}
	return r.res, nil
}

func (r *runner) loop() error {
	bm, pf := r.bm, r.pf
	tick := bm.Sched.Tick
	if tick <= 0 {
		tick = time.Second
	}
	nextArrival := 0
	nextTick := time.Duration(0)
	idleTicks := 0
	stopped := false // cancelled through Options.Ctx
	for r.err == nil {
		if r.ctx.Err() != nil {
			stopped = true
			break
		}
		now := pf.Now()
		if bm.MaxT > 0 && now >= bm.MaxT {
			// a job whose planned end is max_t (or came before it) completed: only jobs
			// still running past max_t are killed
			for _, j := range r.running() {
				if j.end >= 0 && j.end <= bm.MaxT {
					r.collect(j, now)
					r.finish(j, StateCompleted, "")
				}
			}
			break
		}
		// arrivals
		for nextArrival < len(r.jobs) && r.jobs[nextArrival].spec.Arrival <= now {
			j := r.jobs[nextArrival]
			r.queue = append(r.queue, j)
			r.recordJob(j)
			nextArrival++
		}
		// planned stops
		for _, j := range r.running() {
			if j.end >= 0 && j.end <= now {
				r.collect(j, now)
				r.finish(j, StateCompleted, "")
			}
		}
		// jobs whose absolute stop_t passed while queued
		q := r.queue[:0]
		for _, j := range r.queue {
			if j.spec.StopAt > 0 && j.spec.StopAt <= now {
				j.state, j.reason = StateExpired, "stop_t passed before admission"
				r.recordJob(j)
				r.warnf("job %s (%s) expired in the queue: stop_t passed before it could be admitted", j.spec.Name, j.spec.Source)
				continue
			}
			q = append(q, j)
		}
		r.queue = q
		// collectors and probes
		for _, j := range r.live {
			if j.next <= now {
				r.collect(j, now)
			}
			if j.probe != nil {
				r.stepProbe(j, now)
			}
		}
		// scheduler
		if now >= nextTick {
			placed := r.schedule(now)
			nextTick = now + tick
			if len(r.live) == 0 && nextArrival == len(r.jobs) && len(r.queue) > 0 && !placed {
				idleTicks++
				if idleTicks >= 2 {
					for _, j := range r.queue {
						j.state, j.reason = StateRejected, "the scheduler did not admit it on an idle machine"
						r.warnf("job %s (%s) rejected: %s", j.spec.Name, j.spec.Source, j.reason)
						r.recordJob(j)
					}
					r.queue = nil
				}
			} else {
				idleTicks = 0
			}
		}
		if nextArrival == len(r.jobs) && len(r.queue) == 0 && len(r.live) == 0 {
			break
		}
		// next event
		next := nextTick
		if nextArrival < len(r.jobs) {
			next = min(next, r.jobs[nextArrival].spec.Arrival)
		}
		for _, j := range r.live {
			next = min(next, j.next)
			if j.end >= 0 {
				next = min(next, j.end)
			}
			if j.probe != nil {
				next = min(next, j.probe.next, j.probe.segEnd)
			}
		}
		for _, j := range r.queue {
			if j.spec.StopAt > 0 {
				next = min(next, j.spec.StopAt)
			}
		}
		if bm.MaxT > 0 {
			next = min(next, bm.MaxT)
		}
		if cur := pf.Now(); next <= cur { // starts and reads take platform time (linux)
			next = cur + time.Millisecond
		}
		r.obs.step(r, now, false)
		if err := pf.Advance(next); err != nil {
			return fmt.Errorf("platform: %w", err)
		}
	}
	end := pf.Now()
	atEnd := "at max_t"
	if stopped {
		atEnd = "when the run was interrupted"
	}
	for _, j := range r.running() {
		r.collect(j, end)
		r.finish(j, StateKilled, "still running "+atEnd)
	}
	for _, j := range r.queue {
		j.reason = "still queued " + atEnd
		r.recordJob(j)
	}
	for _, j := range r.jobs[nextArrival:] { // arrive at or after max_t: never admitted
		j.state = StateNotStarted
		j.reason = fmt.Sprintf("arrives at %v, not before max_t (%v)", j.spec.Arrival, bm.MaxT)
		if stopped {
			j.reason = fmt.Sprintf("arrives at %v, after the run was interrupted at %v", j.spec.Arrival, end)
		}
		r.recordJob(j)
	}
	r.res.Virtual = end
	r.obs.step(r, end, true)
	for _, j := range r.jobs {
		r.res.Jobs = append(r.res.Jobs, j.result())
	}
	if stopped {
		return interrupted(r.ctx)
	}
	return nil
}

func (j *rjob) result() JobResult {
	jr := JobResult{ID: j.spec.ID, Name: j.spec.Name, Priority: j.spec.Priority, Target: j.spec.IPCETarget,
		State: j.state, Reason: j.reason, Arrival: j.spec.Arrival, Start: j.start, Stop: j.stop,
		IPCE: math.NaN(), TimeOverTarget: math.NaN(), Cores: j.spec.Cores,
		SLOms: j.spec.SLOms, Violations: j.violations, Antagonist: j.spec.Antagonist}
	if len(j.series) > 0 {
		s := append(j.series, metric.Sample{T: j.lastT.Seconds(), Value: math.NaN()})
		jr.IPCE = metric.TimeWeightedMean(s)
		if jr.Target > 0 {
			jr.TimeOverTarget = metric.TimeOverTarget(s, jr.Target)
		}
		jr.Samples = len(j.series)
		jr.Duration = j.lastT - time.Duration(j.series[0].T*float64(time.Second))
	}
	return jr
}

// running is a snapshot of the running jobs in ID order (safe to iterate while jobs stop).
func (r *runner) running() []*rjob {
	return append([]*rjob(nil), r.live...)
}

func (r *runner) setLive(j *rjob, on bool) {
	i := sort.Search(len(r.live), func(k int) bool { return r.live[k].spec.ID >= j.spec.ID })
	has := i < len(r.live) && r.live[i] == j
	switch {
	case on && !has:
		r.live = append(r.live, nil)
		copy(r.live[i+1:], r.live[i:])
		r.live[i] = j
	case !on && has:
		r.live = append(r.live[:i], r.live[i+1:]...)
	}
}

// collect takes one collector sample of j, due at now. The sample covers (lastT, t],
// t being the platform's time when the counters were read: on linux, starting other
// jobs and reading their counters takes time since the loop's turn began.
func (r *runner) collect(j *rjob, now time.Duration) {
	freq := j.spec.Data.Frequency
	if freq <= 0 {
		freq = time.Second
	}
	for j.next <= now {
		j.next += freq
	}
	if now <= j.lastT {
		return
	}
	c, err := r.pf.Read(j.spec.ID)
	if err != nil {
		r.warnf("job %s: reading counters: %v", j.spec.Name, err)
		return
	}
	now = max(now, r.pf.Now())
	c.At, c.CPUAt, c.MonAt = now, now, now // read together, at the platform's time
	d, ok := counter.Between(j.last, c)
	if !ok {
		return
	}
	memTotal := c.MBMTotalBytes - j.last.MBMTotalBytes
	if sp := j.spec; sp.Rate > 0 && sp.RequestMInstr > 0 {
		// a simulated server: requests are served at the rate its instructions retire
		mu := d.Instructions / d.Interval.Seconds() / (sp.RequestMInstr * 1e6)
		d.LatencyMs = metric.MM1P99(sp.Rate, mu)
		if sp.SLOms > 0 && d.LatencyMs > sp.SLOms {
			j.violations = append(j.violations, Violation{At: now, Interval: d.Interval, LatencyMs: d.LatencyMs})
		}
	}
	ipce := d.IPCE()
	// the series covers the job's whole life, probe segments included (the thesis counts
	// the low IPCE of an ascending sweep against the job too, seed000.md §4.4)
	j.series = append(j.series, metric.Sample{T: j.lastT.Seconds(), Value: ipce})
	j.lastSamp = &d
	r.obs.sample(d, memTotal)
	r.res.Samples++
	if j.spec.Data.Perf {
		r.fail(r.rec.Sample(SampleRecord{Job: j.spec.ID, T: now, Interval: d.Interval, Socket: j.socket,
			Instructions: d.Instructions, Cycles: d.Cycles, StallsTotal: d.StallsTotal, StallsL3Miss: d.StallsL3Miss,
			LLCRefs: d.LLCReferences, LLCMisses: d.LLCMisses, OccupancyBytes: d.LLCOccupancy,
			MemBytesLocal: c.MBMLocalBytes - j.last.MBMLocalBytes, MemBytesTotal: memTotal,
			IPC: d.IPC(), IPCE: ipce, Stalled: metric.StalledFraction(d.StallsTotal, d.Cycles)}))
	}
	j.last, j.lastT = c, now
	if j.spec.Data.RDT {
		r.readback(j, now)
	}
}

// readback reads the job's allocation from resctrl, independently of the scheduler, and
// counts disagreements with what was applied.
func (r *runner) readback(j *rjob, now time.Duration) {
	a, err := r.pf.ReadAllocation(j.spec.ID)
	if err != nil {
		r.warnf("job %s: reading its allocation back: %v", j.spec.Name, err)
		return
	}
	wantMask, wantMBA := j.appliedMask, j.appliedMBA
	if wantMask == 0 {
		if a.Group != "" {
			r.res.AllocationMismatches++
		}
		return
	}
	if a.Mask != wantMask || a.MBA != wantMBA {
		r.res.AllocationMismatches++
		r.event("allocation-mismatch", j.spec.ID, fmt.Sprintf("applied %#x/%d%%, read back %#x/%d%% in %q", wantMask, wantMBA, a.Mask, a.MBA, a.Group))
		r.fail(r.rec.Allocation(AllocationRecord{T: now, Socket: j.socket, CLOS: a.Group, Mask: a.Mask, MBA: float64(a.MBA), Members: []int{j.spec.ID}, Source: "readback"}))
	}
}

func (r *runner) finish(j *rjob, state, reason string) {
	if j.probe != nil {
		j.probe.sweep.Fail("the job stopped during its probe")
		r.endProbe(j)
	}
	if err := r.pf.Stop(j.spec.ID); err != nil {
		r.warnf("job %s: stop: %v", j.spec.Name, err)
	}
	r.applied(j, 0, 0) // Stop removed its class
	for _, c := range j.cpus {
		delete(r.busy, c)
	}
	if j.reserved != 0 {
		j.reserved, j.mba = 0, 0
		r.updateDefaults(nil)
	}
	j.state, j.reason, j.stop = state, reason, r.pf.Now()
	r.setLive(j, false)
	r.done = append(r.done, j.spec.ID)
	r.recordJob(j)
}

func (r *runner) freeCPUs() [][]int {
	m := r.m
	out := make([][]int, m.Sockets)
	for c := 0; c < m.Cores(); c++ {
		if _, b := r.busy[c]; !b {
			s := m.SocketOfCore(c)
			out[s] = append(out[s], c)
		}
	}
	return out
}

func (r *runner) observation(now time.Duration) *sched.Observation {
	obs := &sched.Observation{Now: now, FreeCPUs: r.freeCPUs(), Finished: r.done, ProbeResults: r.results}
	if b, ok := r.pf.(platform.CLOSBudgeter); ok {
		obs.CLOS = b.CLOSBudget()
	}
	r.done, r.results = nil, nil
	for _, j := range r.queue {
		obs.Queue = append(obs.Queue, r.schedJob(j))
	}
	for _, j := range r.live {
		obs.Running = append(obs.Running, sched.Running{Job: r.schedJob(j), Socket: j.socket,
			Placed: append([]int(nil), j.cpus...), Started: j.start, Mask: j.reserved, MBA: j.mba, Last: j.lastSamp})
	}
	return obs
}

func (r *runner) schedJob(j *rjob) sched.Job {
	return sched.Job{ID: j.spec.ID, Name: j.spec.Name, Cores: j.spec.Cores, CPUs: j.spec.CPUs,
		Priority: j.spec.Priority, IPCETarget: j.spec.IPCETarget, Arrival: j.spec.Arrival,
		SLOms: j.spec.SLOms, MBAMBps: j.spec.MBAMBps}
}

// schedule runs one scheduler tick and applies its decisions. It reports whether a job
// was placed.
func (r *runner) schedule(now time.Duration) bool {
	d := r.sch.Tick(r.observation(now))
	r.holdBandwidth(&d)
	for _, l := range d.Log {
		r.event("decision", -1, l)
	}
	for _, e := range d.Events {
		r.event(e.Kind, e.Job, e.Text)
	}
	if d.ConsolidatedWays > 0 {
		r.res.Consolidations++
		r.res.ConsolidatedWays += d.ConsolidatedWays
	}
	for _, rej := range d.Reject {
		j := r.byID[rej.Job]
		if j == nil || j.state != StateQueued {
			continue
		}
		r.dequeue(j)
		j.state, j.reason = StateRejected, rej.Reason
		r.warnf("job %s (%s) can never be admitted: %s; rejected", j.spec.Name, j.spec.Source, rej.Reason)
		r.event("reject", j.spec.ID, rej.Reason)
		r.recordJob(j)
	}
	placed := false
	for _, p := range d.Place {
		j := r.byID[p.Job]
		if j == nil || j.state != StateQueued {
			continue
		}
		cpus, ok := r.pickCPUs(j, p.Socket)
		if !ok {
			r.warnf("scheduler %s placed job %s on socket %d without room; it stays queued", r.sch.Name(), j.spec.Name, p.Socket)
			continue
		}
		if err := r.pf.Start(*j.spec, cpus); err != nil {
			r.dequeue(j)
			j.state, j.reason = StateRejected, "start failed: "+err.Error()
			r.res.StartFailures++
			r.warnf("job %s: %s", j.spec.Name, j.reason)
			r.recordJob(j)
			continue
		}
		r.dequeue(j)
		placed = true
		for _, c := range cpus {
			r.busy[c] = j.spec.ID
		}
		// the job runs from when Start returned: a container start takes ~0.5 s on
		// linux (the simulator's Start takes no time)
		now := r.pf.Now()
		j.cpus, j.socket, j.start, j.state = cpus, p.Socket, now, StateRunning
		r.setLive(j, true)
		j.lastT, j.last = now, counter.Reading{At: now, CPUAt: now, MonAt: now}
		j.next = now + max(j.spec.Data.Frequency, time.Millisecond)
		switch {
		case j.spec.Length > 0:
			j.end = now + j.spec.Length
		case j.spec.StopAt > 0:
			j.end = j.spec.StopAt
		}
		if j.spec.StopAt > 0 && j.end > j.spec.StopAt {
			j.end = j.spec.StopAt
		}
		r.event("place", j.spec.ID, fmt.Sprintf("socket %d cores %s", p.Socket, machine.FormatCPUList(cpus)))
		r.recordJob(j)
	}
	migratedHeld := false
	for _, mv := range moves(d, r.m) {
		j := r.byID[mv.Job]
		if j == nil || j.state != StateRunning || j.probe != nil || (j.socket == mv.Socket && len(mv.CPUs) == 0) ||
			(len(mv.CPUs) > 0 && sameCPUs(mv.CPUs, j.cpus)) {
			continue
		}
		old := j.cpus
		for _, c := range old {
			delete(r.busy, c)
		}
		cpus, ok := r.pickCPUs(j, mv.Socket)
		if len(mv.CPUs) > 0 {
			if cpus, ok = r.exactCPUs(j, mv); !ok {
				r.warnf("job %s: scheduler %s re-pinned it to cores %s, which are not %d free cores of one socket; it stays on %s",
					j.spec.Name, r.sch.Name(), machine.FormatCPUList(mv.CPUs), len(old), machine.FormatCPUList(old))
			}
		}
		if !ok {
			for _, c := range old {
				r.busy[c] = j.spec.ID
			}
			continue
		}
		if err := r.pf.Move(j.spec.ID, cpus); err != nil {
			for _, c := range old {
				r.busy[c] = j.spec.ID
			}
			r.warnf("job %s: move: %v", j.spec.Name, err)
			continue
		}
		for _, c := range cpus {
			r.busy[c] = j.spec.ID
		}
		if j.socket != mv.Socket {
			r.res.Migrations++
			r.event("migrate", j.spec.ID, fmt.Sprintf("socket %d -> %d cores %s", j.socket, mv.Socket, machine.FormatCPUList(cpus)))
		} else {
			r.event("repin", j.spec.ID, fmt.Sprintf("socket %d cores %s -> %s", j.socket, machine.FormatCPUList(old), machine.FormatCPUList(cpus)))
		}
		r.applied(j, 0, 0) // the job left its class on the old socket (Platform.Move)
		j.cpus, j.socket = cpus, mv.Socket
		if j.reserved != 0 { // the group stays behind: back to system/default
			j.reserved, j.mba = 0, 0
			migratedHeld = true
		}
		r.recordJob(j)
	}
	if migratedHeld && len(d.Allocate) == 0 && len(d.DefaultMask) == 0 {
		r.updateDefaults(nil) // system/default takes back the ways the moved jobs held
	}
	r.applyQuotas(d.Quota)
	r.applyAllocations(d)
	for _, pr := range d.Probe {
		r.startProbe(pr, now)
	}
	return placed
}

// moveReq is a migration (CPUs nil: the run loop picks cores) or a re-pin (exact CPUs).
type moveReq struct {
	Job, Socket int
	CPUs        []int
}

// moves lists the tick's migrations, then its re-pins.
func moves(d sched.Decisions, m *machine.Profile) []moveReq {
	var out []moveReq
	for _, mv := range d.Migrate {
		out = append(out, moveReq{Job: mv.Job, Socket: mv.Socket})
	}
	for _, rp := range d.Repin {
		if len(rp.CPUs) > 0 && rp.CPUs[0] >= 0 && rp.CPUs[0] < m.Cores() {
			out = append(out, moveReq{Job: rp.Job, Socket: m.SocketOfCore(rp.CPUs[0]), CPUs: rp.CPUs})
		}
	}
	return out
}

// exactCPUs checks a re-pin's cores: on one socket, free (the job's own cores are already
// released), distinct, as many as the job has.
func (r *runner) exactCPUs(j *rjob, mv moveReq) ([]int, bool) {
	if len(mv.CPUs) != len(j.cpus) {
		return nil, false
	}
	seen := map[int]bool{}
	for _, c := range mv.CPUs {
		if _, b := r.busy[c]; b || seen[c] || c < 0 || c >= r.m.Cores() || r.m.SocketOfCore(c) != mv.Socket {
			return nil, false
		}
		seen[c] = true
	}
	return append([]int(nil), mv.CPUs...), true
}

func sameCPUs(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[int]bool{}
	for _, c := range a {
		in[c] = true
	}
	for _, c := range b {
		if !in[c] {
			return false
		}
	}
	return true
}

// applyQuotas applies the tick's CPU-quota changes through the platform (QuotaSetter).
func (r *runner) applyQuotas(qs []sched.QuotaChange) {
	for _, q := range qs {
		j := r.byID[q.Job]
		if j == nil || j.state != StateRunning {
			continue
		}
		p, ok := r.pf.(platform.QuotaSetter)
		if !ok {
			r.warnf("job %s: scheduler %s set a CPU quota, but %s; ignored", j.spec.Name, r.sch.Name(), platform.CPUQuotaUnavailable(r.pf))
			continue
		}
		if err := p.SetQuota(j.spec.ID, q.Quota); err != nil {
			r.warnf("job %s: CPU quota %v: %v", j.spec.Name, q.Quota, err)
			continue
		}
		r.event("quota", j.spec.ID, fmt.Sprintf("%.0f %% of its cores' time", 100*q.Quota))
	}
}

func (r *runner) dequeue(j *rjob) {
	for i, q := range r.queue {
		if q == j {
			r.queue = append(r.queue[:i], r.queue[i+1:]...)
			return
		}
	}
}

func (r *runner) pickCPUs(j *rjob, socket int) ([]int, bool) {
	free := r.freeCPUs()
	if socket < 0 || socket >= len(free) {
		return nil, false
	}
	if len(j.spec.CPUs) > 0 {
		for _, c := range j.spec.CPUs {
			if _, b := r.busy[c]; b || r.m.SocketOfCore(c) != socket {
				return nil, false
			}
		}
		return append([]int(nil), j.spec.CPUs...), true
	}
	if len(free[socket]) < j.spec.Cores {
		return nil, false
	}
	return append([]int(nil), free[socket][:j.spec.Cores]...), true
}
