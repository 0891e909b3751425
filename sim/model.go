package sim

import (
	"fmt"
	"math"

	"colo/machine"
	"colo/profile"
)

// A Model is the solo behaviour of one thread of a workload phase: its per-ways table
// (metrics.csv columns at 1..W ways of machine p, alone, without bandwidth contention). The
// simulator reads every column at fractional effective ways with profile.Interp, so table
// workloads (measured) and analytic workloads (computed here) follow one path.
type Model interface {
	// Name identifies the model in messages.
	Name() string
	// Table is the solo per-ways table on machine p with simulator options o.
	Table(p *machine.Profile, o Options) (*profile.Table, error)
	// LoadsPerInstruction is l1_ref/ret_ins, dCat's phase signature (seed003.md §1.7): a
	// property of the code, independent of the cache allocation.
	LoadsPerInstruction() float64
}

// Pattern is the access pattern of an analytic workload.
type Pattern int

const (
	// Random: independent accesses uniformly over the working set; every resident line is
	// equally likely to be hit (hit ratio = resident bytes / working set).
	Random Pattern = iota
	// PointerChase: like Random, but each access depends on the previous one (tree
	// searches, linked lists); set MLP ≈ 1.
	PointerChase
	// Sequential: cyclic sweeps over the working set. Under LRU a sweep larger than the
	// capacity evicts every line before its reuse: a cliff, no partial hits
	// (dCat's MLOAD is flat at any way count, seed003.md §3.3 Fig. 13).
	Sequential
	// Strided: cyclic sweeps touching one line per StrideBytes; the footprint and the usable
	// capacity both shrink by line/stride (a 4 KiB stride uses 1/64 of the sets), so it
	// behaves like Sequential on the touched lines.
	Strided
)

func (p Pattern) String() string {
	switch p {
	case Random:
		return "random"
	case PointerChase:
		return "pointer-chasing"
	case Sequential:
		return "sequential"
	case Strided:
		return "strided"
	}
	return fmt.Sprintf("Pattern(%d)", int(p))
}

// Page sizes backing a working set.
const (
	Page4K int64 = 4 << 10
	Page2M int64 = 2 << 20
	Page1G int64 = 1 << 30
)

// Analytic is a workload phase described by a few parameters; Table turns it into the
// per-ways table of a machine.
type Analytic struct {
	Label string
	// WorkingSetBytes is the data the phase reuses.
	WorkingSetBytes int64
	Pattern         Pattern
	StrideBytes     int64 // Strided only; default 4096
	// PageBytes backs the working set: Page4K, Page2M or Page1G (see UsableBytes).
	PageBytes int64
	// BaseCPI is cycles per instruction when every LLC reference hits (core work, L1/L2
	// and L3-hit time).
	BaseCPI float64
	// BaseStallFrac is the fraction of BaseCPI cycles that are stall cycles
	// (cycle_activity.stalls_total: branch mispredictions, L3 hits that are not hidden).
	BaseStallFrac float64
	// APKI is LLC references per kilo-instruction (L2 misses reaching the LLC).
	APKI float64
	// MLP is the number of LLC misses in flight (1 for dependent loads; prefetched streams
	// 8-10): the miss latency is divided by it.
	MLP float64
	// BytesPerMiss is DRAM traffic per LLC miss: the line, plus adjacent-line prefetch and
	// dirty write-backs. Default: the line size.
	BytesPerMiss float64
	// Loads is l1_ref/ret_ins (LoadsPerInstruction). Default DefaultLoads.
	Loads float64
}

// Name implements Model.
func (a *Analytic) Name() string { return a.Label }

// DefaultLoads is the l1_ref/ret_ins (retired loads per instruction, dCat's phase signature,
// seed003.md §1.7) of a model that does not set its own. The papers give no value; 0.3 is
// colo's assumption (roughly one load in three instructions, a common mix for integer and
// memory-bound code). Only its changes matter to dCat, so the absolute value is secondary.
const DefaultLoads = 0.3

func loadsOr(v float64) float64 {
	if v <= 0 {
		return DefaultLoads
	}
	return v
}

// LoadsPerInstruction implements Model.
func (a *Analytic) LoadsPerInstruction() float64 { return loadsOr(a.Loads) }

func (a *Analytic) validate() error {
	switch {
	case a.WorkingSetBytes <= 0:
		return fmt.Errorf("analytic model %q: working set %d bytes must be > 0", a.Label, a.WorkingSetBytes)
	case a.BaseCPI <= 0:
		return fmt.Errorf("analytic model %q: base CPI %v must be > 0", a.Label, a.BaseCPI)
	case a.BaseStallFrac < 0 || a.BaseStallFrac >= 1:
		return fmt.Errorf("analytic model %q: base stall fraction %v must be in [0, 1)", a.Label, a.BaseStallFrac)
	case a.APKI < 0 || a.MLP <= 0:
		return fmt.Errorf("analytic model %q: APKI %v must be ≥ 0 and MLP %v > 0", a.Label, a.APKI, a.MLP)
	case a.PageBytes != Page4K && a.PageBytes != Page2M && a.PageBytes != Page1G:
		return fmt.Errorf("analytic model %q: page size %d is not 4K, 2M or 1G", a.Label, a.PageBytes)
	case a.Pattern < Random || a.Pattern > Strided:
		return fmt.Errorf("analytic model %q: unknown pattern %d", a.Label, int(a.Pattern))
	}
	return nil
}

// UsableBytes is how much of a working set of ws bytes, backed by pages of pageBytes, a
// partition of k ways of wayBytes each (a "way row": sets × line) can hold.
//
// With 1 GiB pages the set and slice index bits all lie inside the page offset, so lines
// spread evenly over the sets and a partition holds min(ws, k·wayBytes) (seed000.md §7.1).
// The same holds for a working set inside one 2 MiB page (seed003.md §3.2: a 2 MB working
// set on one huge page has no conflict misses). Otherwise (4 KiB pages; 2 MiB pages whose
// frames feed the undocumented slice hash through bits above the page) physical frames are
// scattered and the number of working-set lines falling into one set is Poisson with mean
// λ = ws / wayBytes; a set keeps at most k of them (way partitioning cuts associativity to
// k), so the partition holds
//
//	U = wayBytes · E[min(X, k)],  X ~ Poisson(λ),  E[min(X, k)] = Σ_{j<k} P(X > j).
//
// These are the conflict misses of seed000.md §7.2 (4 KiB and 2 MiB pages miss orders of
// magnitude more in 3–4-way partitions of a 6 MB buffer; 2 MiB needs 6–7 ways) and of
// seed003.md §3.2 (29–32.5 % of sets over-subscribed when capacity = working set).
func UsableBytes(ws int64, pageBytes int64, k int, wayBytes int64) float64 {
	c := float64(k) * float64(wayBytes)
	if pageBytes >= Page1G || (pageBytes >= Page2M && ws <= pageBytes) {
		return math.Min(float64(ws), c)
	}
	lambda := float64(ws) / float64(wayBytes)
	// Σ_{j<k} (1 − CDF(j)) with the pmf computed iteratively.
	p := math.Exp(-lambda)
	cdf := p
	s := 0.0
	for j := 0; j < k; j++ {
		s += 1 - cdf
		p *= lambda / float64(j+1)
		cdf += p
	}
	return float64(wayBytes) * s
}

// HitRatio is the LLC hit ratio of a pattern over a working set ws when usable bytes of it
// can stay resident (see UsableBytes): uniform reuse (Random, PointerChase) hits on the
// resident fraction; cyclic sweeps (Sequential, Strided) hit only when the sweep fits, and
// a sweep that overflows keeps (U/ws)^32 of its hits — the LRU cliff, steep but continuous.
// Under true LRU a cyclic sweep larger than the cache hits never; the exponent 32 is colo's
// choice (no paper gives one) so the cliff stays continuous for the controllers' ways search.
func HitRatio(p Pattern, usable float64, ws int64) float64 {
	f := math.Min(1, usable/float64(ws))
	switch p {
	case Sequential, Strided:
		if f >= 0.999 {
			return 1
		}
		return math.Pow(f, 32)
	}
	return f
}

// Table implements Model. At w ways (w = 1..W of machine p; line L, clock f):
//
//	h      = HitRatio(pattern, UsableBytes(ws, page, w, wayBytes), ws)
//	MPKI   = APKI·(1 − h)
//	CPI    = BaseCPI + MPKI/1000 · lat·f / MLP          (lat = o.MemLatencyNs)
//	stalls_total = (BaseCPI·BaseStallFrac + MPKI/1000·lat·f/MLP) / CPI,  stalls_l3_miss = (miss term)/CPI
//	bandwidth = IPC·f · MPKI/1000 · BytesPerMiss        (MB/s per thread)
//	llc_usage = min(ws, U) for uniform reuse, min(ws, w·wayBytes) for sweeps (a stream fills its partition)
//
// The memory-stall term is the solo one; the simulator stretches it for bandwidth
// contention (bus model) and MBA throttling.
func (a *Analytic) Table(p *machine.Profile, o Options) (*profile.Table, error) {
	if err := a.validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	W := p.LLC.Ways
	wayBytes := p.BytesPerWay()
	line := float64(p.LLC.LineBytes)
	bpm := a.BytesPerMiss
	if bpm <= 0 {
		bpm = line
	}
	ws := a.WorkingSetBytes
	scale := 1.0 // Strided: fraction of lines and sets touched
	if a.Pattern == Strided {
		stride := a.StrideBytes
		if stride <= 0 {
			stride = 4096
		}
		scale = math.Min(1, line/float64(stride))
	}
	latCycles := o.MemLatencyNs * p.ClockGHz
	cols := map[profile.Column][]float64{}
	for c := profile.IPC; c < profile.Slowdown; c++ {
		cols[c] = make([]float64, W)
	}
	for w := 1; w <= W; w++ {
		foot := int64(math.Max(1, float64(ws)*scale))
		u := UsableBytes(foot, a.PageBytes, w, wayBytes)
		h := HitRatio(a.Pattern, u, foot)
		mpki := a.APKI * (1 - h)
		miss := mpki / 1000 * latCycles / a.MLP
		cpi := a.BaseCPI + miss
		ipc := 1 / cpi
		usage := math.Min(float64(ws), u/scale)
		if a.Pattern == Sequential || a.Pattern == Strided {
			usage = math.Min(float64(ws), float64(w)*float64(wayBytes))
		}
		i := w - 1
		cols[profile.IPC][i] = ipc
		cols[profile.LLCRPKI][i] = a.APKI
		cols[profile.LLCMPKI][i] = mpki
		cols[profile.LLCRPKC][i] = a.APKI * ipc
		cols[profile.LLCMPKC][i] = mpki * ipc
		cols[profile.LLCUsageKB][i] = usage / 1024
		cols[profile.BandwidthMBps][i] = ipc * p.ClockGHz * 1e9 * mpki / 1000 * bpm / 1e6
		cols[profile.LLCMBandwidth][i] = ipc * p.ClockGHz * 1e9 * mpki / 1000 * line / 1e6
		cols[profile.StallsL3Miss][i] = miss / cpi
		cols[profile.StallsL2Miss][i] = miss / cpi
		cols[profile.StallsTotal][i] = (a.BaseCPI*a.BaseStallFrac + miss) / cpi
		cols[profile.StallsStoreBuf][i] = 0
	}
	return profile.NewTable(a.Label, cols)
}

// L2MPKI is the L2 misses per kilo-instruction of a workload phase whose solo table is t, at
// eff effective ways: the sim's L2-miss counter (VP's memory factor MF = L3 misses / L2
// misses, seed004.md §2.1). Every request that misses the private L2 (demand read, RFO, code
// fetch, L2 prefetch) is looked up in the LLC, so the L2 misses are the LLC references
// (Intel's LONGEST_LAT_CACHE.REFERENCE counts the core requests that missed the L2):
//
//	L2MPKI(w) = LLCRPKI(w)
//
// Table workloads (FromTable) take it from the measured llcrpki column of PBBCache's
// metrics.csv; analytic workloads (Analytic.Table) from their APKI, which is defined as the L2
// misses reaching the LLC. On hardware the two events differ slightly in what they count
// (the exact request types of each); the models make no such distinction.
func L2MPKI(t *profile.Table, eff float64) float64 { return t.At(profile.LLCRPKI, eff) }

// TableModel is a measured workload: a per-ways table such as a row group of PBBCache's
// metrics.csv (profile.Set.Get). On a machine with more ways than the table, columns hold
// their last row (profile.Interp).
type TableModel struct {
	T *profile.Table
	// Loads is l1_ref/ret_ins, which metrics.csv lacks; default DefaultLoads.
	Loads float64
}

// FromTable wraps a measured table as a Model.
func FromTable(t *profile.Table) *TableModel { return &TableModel{T: t} }

// Name implements Model.
func (t *TableModel) Name() string { return t.T.Name }

// Table implements Model.
func (t *TableModel) Table(*machine.Profile, Options) (*profile.Table, error) { return t.T, nil }

// LoadsPerInstruction implements Model.
func (t *TableModel) LoadsPerInstruction() float64 { return loadsOr(t.Loads) }
