// Package sim is the simulated machine: a deterministic state machine on a virtual clock
// that behaves like a multi-socket server with CAT and MBA. Workloads are pinned to cores;
// each belongs to a class of service (CLOS) with an L3 capacity bitmask and an MBA value
// per LLC domain (masks may overlap). Every Step(dt) produces, per workload, the counters
// a real run reads from perf and resctrl: instructions, cycles, stall cycles (total and
// L3-miss), LLC references and misses, L1 references, LLC occupancy per domain, memory
// traffic (total and local).
//
// Per tick and LLC domain:
//  1. split: every way is shared among the workloads whose mask holds it, Whirlpool-style
//     in proportion to the miss rate each would have with one more way (Split);
//  2. effective ways: what a workload's resident lines are worth (EffectiveWays), so that
//     occupancy — not the mask — decides performance, and moving ways has a cost;
//  3. solo behaviour at the effective ways from the workload's per-ways table
//     (profile.Interp; analytic models compute their table, model.go);
//  4. MBA: a per-core bandwidth ceiling (MBACeiling);
//  5. bus contention per socket: perfmodel's simple, morad or stalls model;
//  6. occupancy moves toward the split: lines fill at the miss rate × line size and are
//     evicted at the rate others insert into the same way (UpdateWay).
//
// See docs/sim.md.
package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"colo/machine"
	"colo/perfmodel"
	"colo/profile"
)

// Options tune the simulated machine. The zero value is usable.
type Options struct {
	// Seed drives the measurement noise; the same seed gives the same counters.
	Seed uint64
	// Noise is the relative standard deviation of multiplicative Gaussian noise applied to
	// every reported counter except cycles (0: exact counters).
	Noise float64
	// BWModel is the memory-bus contention model (default perfmodel.Stalls).
	BWModel perfmodel.BWModel
	// MemBWPerSocketMBps overrides the profile's sustainable bandwidth per socket.
	MemBWPerSocketMBps float64
	// MemLatencyNs is the unloaded DRAM latency of an LLC miss (default 90 ns, Ice Lake-SP).
	MemLatencyNs float64
	// MBACoreMBps is the per-core bandwidth that MBA percentages are taken of (default
	// 8000 MB/s): 10 % allows 800 MB/s per core, 20 % 1600 MB/s. Calibrated so that the
	// thesis's MBA observations hold on icx-4314-2s (seed000.md §5.1, §7.5: tsearch 2^20
	// and 7-Zip -mx=5 gain nothing above 20 %, resp. 10 %, and suffer at 10 %).
	MBACoreMBps float64
	// MBACurve, when set, replaces the linear rule of percentage MBA: the per-core ceiling
	// at value v is MBACurve[k]·MBACoreMBps for v = Min + k·Gran, linear in between (the
	// maximum stays unthrottled). Nil keeps value/100 · MBACoreMBps, the rule the thesis
	// calibrations use. UnderThrottleMBACurve is one such curve.
	MBACurve []float64
}

func (o Options) withDefaults() Options {
	if o.BWModel == "" {
		o.BWModel = perfmodel.Stalls
	}
	if o.MemLatencyNs <= 0 {
		o.MemLatencyNs = 90
	}
	if o.MBACoreMBps <= 0 {
		o.MBACoreMBps = 8000
	}
	return o
}

// ID names a workload of a Machine.
type ID int

// Counters are one workload's events during one Step (deltas), plus its LLC occupancy at
// the end of the step. Counts are integers as real counters are: fractional parts carry
// over to the next step.
type Counters struct {
	ID     ID
	Phase  int // index of the phase that ran
	Domain int // LLC domain of the workload's cores (where MBM counts its traffic)
	Socket int
	CLOS   int

	Instructions  uint64
	Cycles        uint64 // unhalted core cycles, all threads
	StallCycles   uint64 // cycle_activity.stalls_total
	StallsL3Miss  uint64 // cycle_activity.stalls_l3_miss
	LLCReferences uint64
	LLCMisses     uint64
	// L2Misses are the requests that missed the private L2 (L2_RQSTS.MISS), see L2MPKI.
	L2Misses      uint64
	L1References  uint64 // retired loads: dCat's l1_ref
	MemBytesTotal uint64 // mbm_total_bytes delta
	MemBytesLocal uint64 // mbm_local_bytes delta (memory on the cores' socket)
	// Occupancy is llc_occupancy in bytes per LLC domain (index = domain id); the slice
	// is reused by the next Step.
	Occupancy []uint64

	resident float64 // the resident bytes the rates were computed from
}

// OccupancyBytes is the occupancy summed over domains.
func (c *Counters) OccupancyBytes() uint64 {
	var s uint64
	for _, o := range c.Occupancy {
		s += o
	}
	return s
}

const (
	cInstr = iota
	cCycles
	cStalls
	cStallsL3
	cRefs
	cMisses
	cL1
	cMemTotal
	cMemLocal
	cL2
	nCounters
)

type closState struct {
	masks []uint64
	mba   []int
}

type phaseModel struct {
	t      *profile.Table
	mpkc   []float64 // LLCMPKC, the Whirlpool weight curve
	usage  []float64 // llc_usage in bytes per ways
	env    []float64 // env[w] = max_{v≤w} usage(v), env[0] = 0: for EffectiveWays
	loads  float64
	maxIPC float64
}

type workload struct {
	id      ID
	spec    Workload
	phases  []phaseModel
	phase   int
	inPhase time.Duration
	cores   []int
	threads float64
	quota   float64 // CPU quota: the fraction of its cores' time it may run (SetQuota)
	domain  int
	socket  int
	memNode int
	clos    int
	occ     []float64 // bytes per (domain, way): occ[d*W+j]
	occSum  []float64 // Σ_j occ[d*W+j] per domain, valid unless occMoved
	// occMoved: some occ entry changed since occSum was summed
	occMoved bool

	// per-step scratch
	share   []float64 // fraction of each way of its domain given by the split
	s       float64   // Σ share: ways it is entitled to
	weight  float64
	target  float64 // bytes it would hold at s ways
	insRate float64 // bytes/s of lines filled (misses × line)
	cpiSolo float64
	cpiMBA  float64
	stT     float64 // solo stall fractions
	stM     float64
	stL3    float64
	bpi     float64 // DRAM bytes per instruction
	rpki    float64
	l2pki   float64
	mpki    float64
	demand  float64 // MB/s on the bus after MBA
	stTm    float64 // stall fractions after MBA
	stMm    float64
	busF    float64

	cum [nCounters]float64
	rep [nCounters]uint64
}

// Machine is the simulated server. It is not safe for concurrent use.
type Machine struct {
	p        *machine.Profile
	o        Options
	W, D     int
	wayBytes float64
	line     float64
	clockHz  float64
	busLimit float64
	now      time.Duration

	clos      []closState
	wls       []*workload // in ID order
	nextID    ID
	coreOwner []*workload
	orphan    []float64 // lines of removed workloads, per (domain, way)
	rng       *rand.Rand

	dirty bool
	// stale: the split, the solo rates and the bus factors (steps 1–5 of Step) must be
	// computed again; when false they are exactly what the previous Step computed, because
	// nothing they read has changed since (see Step).
	stale bool
	// settled[d*W+j]: updating way j of domain d is a no-op (no orphan lines, every holder
	// exactly at its aim) until the split changes.
	settled []bool
	// ratesRuns counts the steps that computed the rates (the tests see the reuse)
	ratesRuns int
	domWls    [][]*workload // per domain: workloads whose cores are there
	// holders[d]: workloads (in ID order) that may hold lines in domain d: its own
	// workloads and any moved away that still had lines there at the last rebuild.
	holders [][]*workload
	sharers [][][]*workload // [domain][way]
	order   [][]int         // [domain] ways by ascending sharer count

	out    []Counters
	occBuf []uint64
	busIdx [][]*workload
	busD   []float64
	busT   []float64
	busM   []float64
	busF   []float64
}

// New builds a simulated machine from a profile. Every CLOS starts with the full mask and
// no MBA throttle on every domain; workloads start in CLOS 0.
func New(p *machine.Profile, opt Options) (*Machine, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	o := opt.withDefaults()
	if _, err := perfmodel.ParseBWModel(string(o.BWModel)); err != nil {
		return nil, err
	}
	if o.Noise < 0 || o.Noise > 0.5 {
		return nil, fmt.Errorf("noise %v: want a relative standard deviation in [0, 0.5]", o.Noise)
	}
	m := &Machine{
		p: p, o: o, W: p.LLC.Ways, D: p.LLCDomains(),
		wayBytes:  float64(p.BytesPerWay()),
		line:      float64(p.LLC.LineBytes),
		clockHz:   p.ClockGHz * 1e9,
		busLimit:  p.MemBWPerSocketMBps,
		coreOwner: make([]*workload, p.Cores()),
		rng:       rand.New(rand.NewPCG(o.Seed, 0x636f6c6f)),
		dirty:     true,
	}
	if o.MemBWPerSocketMBps > 0 {
		m.busLimit = o.MemBWPerSocketMBps
	}
	m.orphan = make([]float64, m.D*m.W)
	m.settled = make([]bool, m.D*m.W)
	m.clos = make([]closState, p.CAT.NumCLOSIDs)
	for i := range m.clos {
		m.clos[i] = closState{masks: make([]uint64, m.D), mba: make([]int, m.D)}
		for d := 0; d < m.D; d++ {
			m.clos[i].masks[d] = p.FullMask()
			m.clos[i].mba[d] = m.mbaMax()
		}
	}
	m.busIdx = make([][]*workload, p.Sockets)
	return m, nil
}

// Profile is the machine's profile.
func (m *Machine) Profile() *machine.Profile { return m.p }

// Now is the virtual time elapsed since New.
func (m *Machine) Now() time.Duration { return m.now }

// AddWorkload starts a workload with one thread on each of cores (all in one LLC domain,
// each core free) in CLOS 0. Its memory is placed on the socket of its cores (first
// touch); it stays there if the workload is moved.
func (m *Machine) AddWorkload(w Workload, cores []int) (ID, error) {
	if len(w.Phases) == 0 {
		return 0, fmt.Errorf("workload %q has no phases", w.Name)
	}
	if err := m.checkCores(cores, nil); err != nil {
		return 0, fmt.Errorf("workload %q: %w", w.Name, err)
	}
	wl := &workload{id: m.nextID, spec: w, cores: append([]int(nil), cores...), threads: float64(len(cores)), quota: 1}
	for i, ph := range w.Phases {
		if ph.Model == nil {
			return 0, fmt.Errorf("workload %q phase %d has no model", w.Name, i)
		}
		if ph.Duration < 0 {
			return 0, fmt.Errorf("workload %q phase %d: negative duration %v", w.Name, i, ph.Duration)
		}
		pm, err := m.compile(ph.Model)
		if err != nil {
			return 0, fmt.Errorf("workload %q phase %d: %w", w.Name, i, err)
		}
		wl.phases = append(wl.phases, pm)
	}
	wl.domain = m.p.DomainOfCore(cores[0])
	wl.socket = m.p.SocketOfCore(cores[0])
	wl.memNode = wl.socket
	wl.occ = make([]float64, m.D*m.W)
	wl.occSum = make([]float64, m.D)
	wl.share = make([]float64, m.W)
	for _, c := range cores {
		m.coreOwner[c] = wl
	}
	m.nextID++
	m.wls = append(m.wls, wl)
	m.dirty = true
	return wl.id, nil
}

func (m *Machine) compile(mod Model) (phaseModel, error) {
	t, err := mod.Table(m.p, m.o)
	if err != nil {
		return phaseModel{}, err
	}
	pm := phaseModel{t: t, mpkc: t.Col(profile.LLCMPKC), loads: mod.LoadsPerInstruction()}
	kb := t.Col(profile.LLCUsageKB)
	pm.usage = make([]float64, len(kb))
	pm.env = make([]float64, len(kb)+1)
	for i, v := range kb {
		pm.usage[i] = math.Min(v*1024, float64(i+1)*m.wayBytes)
		pm.env[i+1] = math.Max(pm.env[i], pm.usage[i])
	}
	for _, v := range t.Col(profile.IPC) {
		pm.maxIPC = math.Max(pm.maxIPC, v)
	}
	return pm, nil
}

func (m *Machine) checkCores(cores []int, self *workload) error {
	if len(cores) == 0 {
		return fmt.Errorf("no cores given")
	}
	seen := map[int]bool{}
	d0 := -1
	for _, c := range cores {
		if c < 0 || c >= len(m.coreOwner) {
			return fmt.Errorf("core %d out of range 0..%d", c, len(m.coreOwner)-1)
		}
		if seen[c] {
			return fmt.Errorf("core %d given twice", c)
		}
		seen[c] = true
		if o := m.coreOwner[c]; o != nil && o != self {
			return fmt.Errorf("core %d already runs workload %d (one thread per core)", c, o.id)
		}
		d := m.p.DomainOfCore(c)
		if d0 >= 0 && d != d0 {
			return fmt.Errorf("cores %v span LLC domains %d and %d; pin a workload within one domain", cores, d0, d)
		}
		d0 = d
	}
	return nil
}

func (m *Machine) find(id ID) (*workload, int, error) {
	for i, w := range m.wls {
		if w.id == id {
			return w, i, nil
		}
	}
	return nil, -1, fmt.Errorf("no workload %d", id)
}

// RemoveWorkload stops a workload. Its cached lines stay valid until other workloads
// evict them.
func (m *Machine) RemoveWorkload(id ID) error {
	w, i, err := m.find(id)
	if err != nil {
		return err
	}
	for k, v := range w.occ {
		m.orphan[k] += v
	}
	for _, c := range w.cores {
		m.coreOwner[c] = nil
	}
	m.wls = append(m.wls[:i], m.wls[i+1:]...)
	m.dirty = true
	return nil
}

func (w *workload) cpus() float64 { return w.threads * w.quota }

// Workloads lists the running workloads' IDs in the order Step reports them.
func (m *Machine) Workloads() []ID {
	out := make([]ID, len(m.wls))
	for i, w := range m.wls {
		out[i] = w.id
	}
	return out
}

// Step advances the virtual clock by dt and returns every workload's counters for the
// interval, in ID order. The returned slice is reused by the next Step.
func (m *Machine) Step(dt time.Duration) []Counters {
	if m.dirty {
		m.rebuild()
	}
	sec := dt.Seconds()
	if sec <= 0 {
		sec = 0
	}
	if m.stale {
		m.ratesRuns++
		m.rates()
		m.stale = false
		clear(m.settled)
	}
	m.counters(sec)
	// 6: occupancy.
	if sec > 0 {
		for d := 0; d < m.D; d++ {
			for j := 0; j < m.W; j++ {
				if !m.settled[d*m.W+j] {
					m.updateWay(d, j, sec)
				}
			}
		}
	}
	for i, w := range m.wls {
		if w.occMoved {
			w.sumOcc(m.W)
			// its resident lines in its own domain feed EffectiveWays: recompute the rates
			m.stale = m.stale || w.occSum[w.domain] != m.out[i].resident
		}
		for d := 0; d < m.D; d++ {
			s := w.occSum[d]
			if m.o.Noise > 0 && s > 0 {
				s *= m.noise()
			}
			m.out[i].Occupancy[d] = uint64(s)
		}
	}
	// phases
	for _, w := range m.wls {
		if m.advancePhase(w, dt) {
			m.stale = true
		}
	}
	m.now += dt
	return m.out
}

// sumOcc sums the workload's occupancy per domain (ways in index order).
func (w *workload) sumOcc(W int) {
	for d := range w.occSum {
		s := 0.0
		for j := 0; j < W; j++ {
			s += w.occ[d*W+j]
		}
		w.occSum[d] = s
	}
	w.occMoved = false
}

// rates computes steps 1–5 of Step: the split, every workload's solo behaviour at its
// effective ways, the MBA ceilings and the bus factors. They depend only on the workloads
// and their cores, classes, quotas and phases, the classes' masks and MBA values and each
// workload's resident bytes in its domain; Step calls rates again only after one of those
// changed (m.stale), and otherwise reuses the values of the previous step, which are
// bit-for-bit what rates would compute (TestSteadyStepsAreExact).
func (m *Machine) rates() {
	// 1–3: split and solo behaviour at the effective ways.
	for d := 0; d < m.D; d++ {
		m.Split(d)
	}
	for i, w := range m.wls {
		pm := &w.phases[w.phase]
		t := pm.t
		w.target = 0
		if w.s > 0 {
			w.target = math.Min(profile.Interp(pm.usage, w.s), w.s*m.wayBytes)
		}
		res := w.occSum[w.domain]
		m.out[i].resident = res
		eff := EffectiveWays(w.s, w.target, res, pm.env)
		ipc := t.At(profile.IPC, eff)
		w.cpiSolo = 1 / ipc
		w.rpki = t.At(profile.LLCRPKI, eff)
		w.l2pki = L2MPKI(t, eff)
		w.mpki = t.At(profile.LLCMPKI, eff)
		bw := t.At(profile.BandwidthMBps, eff) // per thread, MB/s
		w.stT = math.Min(1, t.At(profile.StallsTotal, eff))
		w.stL3 = math.Min(w.stT, t.At(profile.StallsL3Miss, eff))
		w.stM = perfmodel.MemStalls(w.stT, w.stL3, t.At(profile.StallsStoreBuf, eff))
		w.bpi = bw * 1e6 / (ipc * m.clockHz)
		// 4: MBA ceiling.
		w.cpiMBA = w.cpiSolo
		if ceil := m.MBACeiling(m.clos[w.clos].mba[w.domain]); bw > ceil {
			w.cpiMBA = w.cpiSolo * bw / ceil
		}
		extra := w.cpiMBA - w.cpiSolo
		w.stTm = (w.stT*w.cpiSolo + extra) / w.cpiMBA
		w.stMm = (w.stM*w.cpiSolo + extra) / w.cpiMBA
		w.demand = w.cpus() * bw * w.cpiSolo / w.cpiMBA
	}
	// 5: bus contention per memory node.
	for s := range m.busIdx {
		m.busIdx[s] = m.busIdx[s][:0]
	}
	for _, w := range m.wls {
		m.busIdx[w.memNode] = append(m.busIdx[w.memNode], w)
	}
	for _, ws := range m.busIdx {
		m.bus(ws)
	}
}

// counters computes every workload's counters for a step of sec seconds from the rates,
// and its fill rate.
func (m *Machine) counters(sec float64) {
	for i, w := range m.wls {
		pm := &w.phases[w.phase]
		cpi := w.cpiMBA * w.busF
		cycles := w.cpus() * m.clockHz * sec
		instr := cycles / cpi
		var d [nCounters]float64
		d[cInstr] = instr
		d[cCycles] = cycles
		d[cStalls] = instr * (w.cpiSolo*w.stT + (cpi - w.cpiSolo))
		d[cStallsL3] = instr * (w.cpiSolo*w.stL3 + (cpi - w.cpiSolo))
		d[cRefs] = instr * w.rpki / 1000
		d[cMisses] = instr * w.mpki / 1000
		d[cL1] = instr * pm.loads
		d[cL2] = instr * w.l2pki / 1000
		d[cMemTotal] = instr * w.bpi
		if w.memNode == w.socket {
			d[cMemLocal] = d[cMemTotal]
		}
		if sec > 0 {
			w.insRate = d[cMisses] / sec * m.line
		} else {
			w.insRate = 0
		}
		c := &m.out[i]
		c.ID, c.Phase, c.Domain, c.Socket, c.CLOS = w.id, w.phase, w.domain, w.socket, w.clos
		vals := [nCounters]*uint64{&c.Instructions, &c.Cycles, &c.StallCycles, &c.StallsL3Miss, &c.LLCReferences,
			&c.LLCMisses, &c.L1References, &c.MemBytesTotal, &c.MemBytesLocal, &c.L2Misses}
		if m.o.Noise > 0 {
			refsF := 1.0
			for k := range d {
				if k != cCycles && k != cL2 {
					f := m.noise()
					d[k] *= f
					if k == cRefs {
						refsF = f
					}
				}
			}
			// the L2 misses are the requests the LLC sees as references: one draw for both
			// (and no extra draw, so the noise stream of the other counters is unchanged)
			d[cL2] *= refsF
			// noisy counts stay consistent: stalls ≤ cycles, L3 stalls ≤ stalls, misses ≤
			// references, local ≤ total traffic
			d[cStalls] = math.Min(d[cStalls], d[cCycles])
			d[cStallsL3] = math.Min(d[cStallsL3], d[cStalls])
			d[cMisses] = math.Min(d[cMisses], d[cRefs])
			d[cMisses] = math.Min(d[cMisses], d[cL2])
			d[cMemLocal] = math.Min(d[cMemLocal], d[cMemTotal])
		}
		for k := 0; k < nCounters; k++ {
			v := d[k]
			w.cum[k] += v
			r := uint64(w.cum[k])
			*vals[k] = r - w.rep[k]
			w.rep[k] = r
		}
	}
}

// noise draws a multiplicative factor 1 + σ·N(0,1), clipped at 0.
func (m *Machine) noise() float64 {
	return math.Max(0, 1+m.o.Noise*m.rng.NormFloat64())
}

// bus applies the bandwidth model to the workloads whose memory is on one socket:
// perfmodel.ContendedFactors, the factors colo eval computes, and outside the model's
// domain (one demand at the limit, the simple rule breaking down) the saturated bus.
func (m *Machine) bus(ws []*workload) {
	n := len(ws)
	if n == 0 {
		return
	}
	dem, T, M, F := m.busD[:n], m.busT[:n], m.busM[:n], m.busF[:n]
	for i, w := range ws {
		dem[i], T[i], M[i] = w.demand, w.stTm, w.stMm
	}
	F, _ = perfmodel.ContendedFactors(F, m.o.BWModel, dem, T, M, m.busLimit)
	for i, w := range ws {
		w.busF = math.Max(1, F[i])
	}
}

// advancePhase moves w's clock on by dt and reports whether its phase changed.
func (m *Machine) advancePhase(w *workload, dt time.Duration) bool {
	w.inPhase += dt
	p0 := w.phase
	for {
		dur := w.spec.Phases[w.phase].Duration
		if dur <= 0 || w.inPhase < dur {
			return w.phase != p0
		}
		last := w.phase == len(w.phases)-1
		if last && !w.spec.Loop {
			return w.phase != p0
		}
		w.inPhase -= dur
		if last {
			w.phase = 0
		} else {
			w.phase++
		}
	}
}
