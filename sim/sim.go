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

	dirty   bool
	domWls  [][]*workload   // per domain: workloads whose cores are there
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

func (m *Machine) mbaMax() int {
	if m.p.MBA == nil {
		return 100
	}
	return m.p.MBA.Max
}

// SetCLOS sets the capacity bitmask and MBA value of a class on every LLC domain
// (masks[d], mba[d]; mba nil keeps the current values). Masks obey the profile: within
// the full mask, at least min_cbm_bits ones, contiguous unless the vendor allows sparse
// masks; MBA values within the profile's range. Nothing changes on error.
func (m *Machine) SetCLOS(clos int, masks []uint64, mba []int) error {
	if clos < 0 || clos >= len(m.clos) {
		return fmt.Errorf("CLOS %d out of range 0..%d (num_closids %d)", clos, len(m.clos)-1, len(m.clos))
	}
	if len(masks) != m.D {
		return fmt.Errorf("CLOS %d: %d masks given, the machine has %d LLC domains", clos, len(masks), m.D)
	}
	for d, mk := range masks {
		if err := m.p.CheckMask(mk); err != nil {
			return fmt.Errorf("CLOS %d domain %d: %w", clos, d, err)
		}
	}
	if mba != nil {
		if len(mba) != m.D {
			return fmt.Errorf("CLOS %d: %d MBA values given, the machine has %d domains", clos, len(mba), m.D)
		}
		if m.p.MBA == nil {
			return fmt.Errorf("machine %s has no MBA", m.p.Name)
		}
		for d, v := range mba {
			if v < m.p.MBA.Min || v > m.p.MBA.Max {
				return fmt.Errorf("CLOS %d domain %d: MBA %d outside %d..%d %s", clos, d, v, m.p.MBA.Min, m.p.MBA.Max, m.p.MBA.Unit)
			}
		}
		copy(m.clos[clos].mba, mba)
	}
	copy(m.clos[clos].masks, masks)
	m.dirty = true
	return nil
}

// CLOS returns a copy of a class's masks and MBA values.
func (m *Machine) CLOS(clos int) (masks []uint64, mba []int) {
	c := m.clos[clos]
	return append([]uint64(nil), c.masks...), append([]int(nil), c.mba...)
}

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

// Assign moves a workload to a class of service.
func (m *Machine) Assign(id ID, clos int) error {
	w, _, err := m.find(id)
	if err != nil {
		return err
	}
	if clos < 0 || clos >= len(m.clos) {
		return fmt.Errorf("CLOS %d out of range 0..%d", clos, len(m.clos)-1)
	}
	w.clos = clos
	m.dirty = true
	return nil
}

// Move re-pins a workload's threads to cores (the same number, one LLC domain). Lines in
// its former domain stay until evicted; its memory stays where it was first touched, so
// a move to another socket turns its traffic remote.
func (m *Machine) Move(id ID, cores []int) error {
	w, _, err := m.find(id)
	if err != nil {
		return err
	}
	if len(cores) != len(w.cores) {
		return fmt.Errorf("workload %d has %d threads, %d cores given", id, len(w.cores), len(cores))
	}
	if err := m.checkCores(cores, w); err != nil {
		return err
	}
	for _, c := range w.cores {
		m.coreOwner[c] = nil
	}
	for _, c := range cores {
		m.coreOwner[c] = w
	}
	w.cores = append(w.cores[:0], cores...)
	w.domain = m.p.DomainOfCore(cores[0])
	w.socket = m.p.SocketOfCore(cores[0])
	m.dirty = true
	return nil
}

// SetQuota sets a workload's CPU quota, the fraction q ∈ (0, 1] of its cores' time it may
// run (a CFS bandwidth quota, cpu.max = q·period per core; the Xen credit-scheduler cap of
// seed004.md §2.5). Its threads run at full speed when they run, so per second it executes
// q times the cycles — and the instructions, LLC insertions and memory traffic — it would
// without the quota; its share of a contended way (Split) and its bus demand shrink alike.
func (m *Machine) SetQuota(id ID, q float64) error {
	w, _, err := m.find(id)
	if err != nil {
		return err
	}
	if !(q > 0 && q <= 1) {
		return fmt.Errorf("workload %d: CPU quota %v must be in (0, 1]", id, q)
	}
	w.quota = q
	return nil
}

// Quota returns a workload's CPU quota (1 unless SetQuota lowered it).
func (m *Machine) Quota(id ID) (float64, error) {
	w, _, err := m.find(id)
	if err != nil {
		return 0, err
	}
	return w.quota, nil
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

// Occupancy is a workload's current LLC occupancy in bytes on one domain (noise-free).
func (m *Machine) Occupancy(id ID, domain int) (float64, error) {
	w, _, err := m.find(id)
	if err != nil {
		return 0, err
	}
	if domain < 0 || domain >= m.D {
		return 0, fmt.Errorf("domain %d out of range 0..%d", domain, m.D-1)
	}
	s := 0.0
	for j := 0; j < m.W; j++ {
		s += w.occ[domain*m.W+j]
	}
	return s, nil
}

func (m *Machine) rebuild() {
	if m.domWls == nil {
		m.domWls = make([][]*workload, m.D)
		m.sharers = make([][][]*workload, m.D)
		m.order = make([][]int, m.D)
		for d := range m.sharers {
			m.sharers[d] = make([][]*workload, m.W)
			m.order[d] = make([]int, m.W)
		}
	}
	for d := 0; d < m.D; d++ {
		m.domWls[d] = m.domWls[d][:0]
		for j := 0; j < m.W; j++ {
			m.sharers[d][j] = m.sharers[d][j][:0]
		}
	}
	for _, w := range m.wls {
		d := w.domain
		m.domWls[d] = append(m.domWls[d], w)
		mask := m.clos[w.clos].masks[d]
		for j := 0; j < m.W; j++ {
			if mask&(1<<uint(j)) != 0 {
				m.sharers[d][j] = append(m.sharers[d][j], w)
			}
		}
	}
	for d := 0; d < m.D; d++ {
		o := m.order[d]
		for j := range o {
			o[j] = j
		}
		// insertion sort: ways with fewer sharers first (exclusive ways before shared ones)
		for i := 1; i < len(o); i++ {
			for k := i; k > 0 && len(m.sharers[d][o[k]]) < len(m.sharers[d][o[k-1]]); k-- {
				o[k], o[k-1] = o[k-1], o[k]
			}
		}
	}
	n := len(m.wls)
	if cap(m.out) < n {
		m.out = make([]Counters, n)
		m.occBuf = make([]uint64, n*m.D)
	}
	m.out = m.out[:n]
	for i := range m.out {
		m.out[i].Occupancy = m.occBuf[i*m.D : (i+1)*m.D]
	}
	if cap(m.busD) < n {
		m.busD = make([]float64, n)
		m.busT = make([]float64, n)
		m.busM = make([]float64, n)
		m.busF = make([]float64, n)
	}
	m.dirty = false
}

// Split shares the ways of one LLC domain among the workloads whose masks hold them,
// generalising PBBCache's Whirlpool split (MODEL.md §3.1) to overlapping masks: ways are
// taken one at a time, exclusive ways first (fewest sharers first, then by index), and
// way j is divided among its sharers S_j in proportion to
//
//	m_i = threads_i · quota_i · LLCMPKC_i(min(s_i + 1, W_i)),   s_i ← s_i + m_i / Σ_{l∈S_j} m_l
//
// (equal split if every m_i is 0). When all sharers hold the same mask this is exactly
// perfmodel.Shares. Every way held by some mask is handed out in full, so the shares of a
// domain sum to the number of ways covered by at least one mask: overlapping masks
// conserve capacity.
func (m *Machine) Split(d int) {
	for _, w := range m.domWls[d] {
		w.s = 0
		for j := range w.share {
			w.share[j] = 0
		}
	}
	for _, j := range m.order[d] {
		sh := m.sharers[d][j]
		switch len(sh) {
		case 0:
			continue
		case 1:
			sh[0].share[j] = 1
			sh[0].s++
			continue
		}
		tot := 0.0
		for _, w := range sh {
			c := w.phases[w.phase].mpkc
			w.weight = w.cpus() * profile.Interp(c, math.Min(w.s+1, float64(len(c))))
			tot += w.weight
		}
		for _, w := range sh {
			f := 1 / float64(len(sh))
			if tot > 0 {
				f = w.weight / tot
			}
			w.share[j] = f
			w.s += f
		}
	}
}

// EffectiveWays is the way count at which a workload's table is read, from the ways s it
// is entitled to, the bytes target it would hold there and the bytes resident it holds in
// its domain now (lines outside its mask still hit until evicted):
//
//	eff = max( s · min(1, resident/target),  env⁻¹(resident) )
//
// where env is the running maximum of its llc_usage curve (env(0) = 0) and env⁻¹ its
// piecewise-linear inverse: the fewest ways whose solo run held as much. The first term
// makes a table workload alone in k ways read row k once warm; the second makes resident
// lines — not the mask — decide performance while a partition fills or after it moved.
func EffectiveWays(s, target, resident float64, env []float64) float64 {
	a := 0.0
	if target > 0 {
		a = s * math.Min(1, resident/target)
	}
	b := float64(len(env) - 1)
	for w := 1; w < len(env); w++ {
		if env[w] >= resident {
			lo, hi := env[w-1], env[w]
			b = float64(w - 1)
			if hi > lo {
				b += (resident - lo) / (hi - lo)
			}
			break
		}
	}
	return math.Max(a, b)
}

// MBACeiling is the per-core bandwidth ceiling in MB/s of an MBA value (+Inf when
// unthrottled). Intel's MBA inserts a delay on L2→memory requests that caps a core's
// request rate; it is modelled as a roofline: a thread whose demand exceeds the ceiling
// runs at CPI' = CPI · demand/ceiling, the extra cycles being L3-miss stalls.
// Percent: value/100 · MBACoreMBps (100 % = no throttle); AMD 1/8 GB/s: value · 125 MB/s
// per core (the maximum = no limit); mba_MBps: the value per core.
func (m *Machine) MBACeiling(value int) float64 {
	mb := m.p.MBA
	if mb == nil || value >= mb.Max && mb.Unit != MBAUnitMBps {
		return math.Inf(1)
	}
	switch mb.Unit {
	case machine.MBAPercent:
		return float64(value) / 100 * m.o.MBACoreMBps
	case machine.MBAEighthGBps:
		return float64(value) * 125
	}
	return float64(value)
}

// MBAUnitMBps is machine.MBAMBps (mba_MBps mount option).
const MBAUnitMBps = machine.MBAMBps

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
	// 1–3: split and solo behaviour at the effective ways.
	for d := 0; d < m.D; d++ {
		m.Split(d)
	}
	for _, w := range m.wls {
		pm := &w.phases[w.phase]
		t := pm.t
		w.target = 0
		if w.s > 0 {
			w.target = math.Min(profile.Interp(pm.usage, w.s), w.s*m.wayBytes)
		}
		res := 0.0
		for j := 0; j < m.W; j++ {
			res += w.occ[w.domain*m.W+j]
		}
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
	// counters and occupancy fill rates
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
	// 6: occupancy.
	if sec > 0 {
		for d := 0; d < m.D; d++ {
			for j := 0; j < m.W; j++ {
				m.updateWay(d, j, sec)
			}
		}
	}
	for i, w := range m.wls {
		for d := 0; d < m.D; d++ {
			s := 0.0
			for j := 0; j < m.W; j++ {
				s += w.occ[d*m.W+j]
			}
			if m.o.Noise > 0 && s > 0 {
				s *= m.noise()
			}
			m.out[i].Occupancy[d] = uint64(s)
		}
	}
	// phases
	for _, w := range m.wls {
		m.advancePhase(w, dt)
	}
	m.now += dt
	return m.out
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

// updateWay moves the occupancy of way j of domain d toward the split for one step of
// sec seconds. A workload sharing the way with fraction f = share_j/s of its entitlement
// aims at t = f·target bytes there and fills lines at f·insRate (its misses × line size).
// Lines above their holder's aim (including lines of workloads whose mask left the way,
// and of removed workloads) are evicted as others insert: with R the total insertion rate
// into the way and C its capacity, random replacement gives
//
//	occ ← t + (occ − t)·exp(−R·sec/C).
//
// Holders below their aim then grow by min(t − occ, f·insRate·sec), scaled down together
// if that exceeds the free space. The way never holds more than C.
func (m *Machine) updateWay(d, j int, sec float64) {
	C := m.wayBytes
	k := d*m.W + j
	R := 0.0
	for _, w := range m.wls {
		if w.domain == d && w.share[j] > 0 && w.s > 0 {
			R += w.share[j] / w.s * w.insRate
		}
	}
	decay := 1.0
	if R > 0 {
		decay = math.Exp(-R * sec / C)
	}
	total := m.orphan[k] * decay
	m.orphan[k] = total
	need := 0.0
	for _, w := range m.wls {
		t := 0.0
		if w.domain == d && w.share[j] > 0 && w.s > 0 {
			t = w.share[j] / w.s * w.target
		}
		o := w.occ[k]
		if o > t {
			o = t + (o-t)*decay
			w.occ[k] = o
		} else if o < t {
			need += math.Min(t-o, w.share[j]/w.s*w.insRate*sec)
		}
		total += o
	}
	if need <= 0 {
		return
	}
	scale := 1.0
	if free := C - total; need > free {
		scale = math.Max(0, free) / need
	}
	for _, w := range m.wls {
		if w.domain != d || w.share[j] <= 0 || w.s <= 0 {
			continue
		}
		t := w.share[j] / w.s * w.target
		if o := w.occ[k]; o < t {
			w.occ[k] = o + scale*math.Min(t-o, w.share[j]/w.s*w.insRate*sec)
		}
	}
}

func (m *Machine) advancePhase(w *workload, dt time.Duration) {
	w.inPhase += dt
	for {
		dur := w.spec.Phases[w.phase].Duration
		if dur <= 0 || w.inPhase < dur {
			return
		}
		last := w.phase == len(w.phases)-1
		if last && !w.spec.Loop {
			return
		}
		w.inPhase -= dur
		if last {
			w.phase = 0
		} else {
			w.phase++
		}
	}
}
