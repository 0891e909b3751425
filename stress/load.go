package stress

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"colo/probe"
)

// Kinds of continuous load `colo stress KIND` runs (the reporters are measured separately,
// see MeasureReporter).
const (
	// KindSoI is the Bubble-Up source of interference: streaming-copy threads and LFSR
	// random-access threads sharing the dial's working set half and half (seed002.md §1.2).
	KindSoI = "soi"
	// KindStream is the streaming-copy kernel alone (an app or the SoI's streaming process).
	KindStream = "stream"
	// KindRandom is the LFSR random read-modify-write kernel alone: the cache-hungry app.
	KindRandom = "random"
	// KindHybrid is the lbm-like kernel (streaming reads, scattered writes).
	KindHybrid = "hybrid"
	// KindCompute is a register-only loop: the cache-insensitive app.
	KindCompute = "compute"
	// KindLLC, KindMemRead, KindMemWrite, KindSyscall and KindPrefetch are the thesis's
	// five sensitivity stressors (seed000.md §2.6, Table 4.2), built in, under the names
	// the sensitivity probe gives its segments.
	KindLLC      = probe.StressLLC
	KindMemRead  = probe.StressMemRead
	KindMemWrite = probe.StressMemWrite
	KindSyscall  = probe.StressSyscall
	KindPrefetch = probe.StressPrefetch
)

// ThesisStressors lists the five probe stressors in the thesis's segment order
// (probe.Stressors: LLC, MemRead, MemWrite, SysCall, Prefetch; seed000.md §2.6).
var ThesisStressors = probe.Stressors

type kindInfo struct {
	unit      string
	doc       string
	defaultMB float64 // 0: no working set (or, for llc, the detected LLC size)
	usesMB    bool
}

var kinds = map[string]kindInfo{
	KindSoI:      {"steps", "Bubble-Up SoI: streaming copy + LFSR random access over --mb (half each)", 0, true},
	KindStream:   {"bytes", "streaming copy a[i]=s*b[i] / b[i]=s*a[i] over --mb", 64, true},
	KindRandom:   {"accesses", "LFSR-indexed random read-modify-write over --mb (cache-hungry app)", 64, true},
	KindHybrid:   {"bytes", "lbm-like hybrid: streaming reads, 19 scattered writes per cell, over --mb", 64, true},
	KindCompute:  {"ops", "register-only xorshift-multiply loop (cache-insensitive app)", 0, false},
	KindLLC:      {"lines", "random 64-byte-line increments over an LLC-sized buffer (thesis LLC stressor)", 0, true},
	KindMemRead:  {"bytes", "sequential reads over --mb (thesis MemRead stressor)", 256, true},
	KindMemWrite: {"bytes", "sequential writes over --mb (thesis MemWrite stressor)", 256, true},
	KindSyscall:  {"syscalls", "futex wake/wait storm on one shared word (thesis SysCall stressor)", 0, false},
	KindPrefetch: {"bytes", "STREAM triad a[i]=b[i]+s*c[i] over --mb (thesis Prefetch stressor)", 256, true},
}

// Kinds returns the names of every load kind, sorted.
func Kinds() []string {
	return slices.Sorted(maps.Keys(kinds))
}

// Describe returns a one-line description of kind ("" if unknown).
func Describe(kind string) string { return kinds[kind].doc }

// Config selects and sizes a load.
type Config struct {
	Kind string
	// MB is the working set in MB (10^6 bytes) actually touched, summed over all workers.
	// 0 means the kind's default (llc: LLCBytes; soi: no load at all, the dial's zero).
	MB float64
	// Workers is the number of worker threads (default 1). For soi see StreamThreads and
	// RandomThreads instead.
	Workers int
	// StreamThreads and RandomThreads size the SoI (thesis: 3 and 2, seed002.md §1.2).
	StreamThreads, RandomThreads int
	// LLCBytes is the last-level cache size used by the llc stressor when MB is 0.
	LLCBytes int64
	// Seed perturbs the LFSR seeds (0 keeps the Bubble-Up seed 0xACE1 for worker 0).
	Seed uint32
	// CPUs, if set, pins every worker thread to these CPUs (Linux).
	CPUs []int
}

// worker does bounded chunks of work on memory it owns.
type worker interface {
	// step does one chunk (about a millisecond) and returns the work done in the kind's unit.
	step() int64
}

// Load is an allocated, pre-faulted load ready to Run.
type Load struct {
	Kind    string
	Unit    string
	Touched int64 // bytes the workers index, summed (the dial's meaning)
	workers []worker
	cpus    []int
	running atomic.Pointer[[]counter] // per-worker counts, set by Run
}

// Work returns the work done so far by the running load, in Unit (0 before Run starts).
// It is safe to call from any goroutine (a metrics endpoint).
func (l *Load) Work() float64 {
	c := l.running.Load()
	if c == nil {
		return 0
	}
	var s int64
	for i := range *c {
		s += (*c)[i].n.Load()
	}
	return float64(s)
}

// Workers returns the number of worker threads.
func (l *Load) Workers() int { return len(l.workers) }

// New validates cfg, allocates the working set and touches every page of it, so that no
// page fault or allocation happens while the load runs.
func New(cfg Config) (*Load, error) {
	info, ok := kinds[cfg.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown stress kind %q: use one of %s", cfg.Kind, strings.Join(Kinds(), ", "))
	}
	if cfg.MB < 0 {
		return nil, fmt.Errorf("--mb %g: the working set must be ≥ 0 MB", cfg.MB)
	}
	if cfg.MB != 0 && !info.usesMB {
		return nil, fmt.Errorf("--mb %g: kind %q has no working set", cfg.MB, cfg.Kind)
	}
	if cfg.Workers < 0 || cfg.StreamThreads < 0 || cfg.RandomThreads < 0 {
		return nil, fmt.Errorf("thread counts must be ≥ 0 (workers %d, stream %d, random %d)", cfg.Workers, cfg.StreamThreads, cfg.RandomThreads)
	}
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	mb := cfg.MB
	if mb == 0 {
		mb = info.defaultMB
	}
	if cfg.Kind == KindLLC && cfg.MB == 0 {
		if cfg.LLCBytes <= 0 {
			return nil, fmt.Errorf("llc stressor: give --mb or the LLC size (not detected)")
		}
		mb = float64(cfg.LLCBytes) / MB
	}
	bytes := int64(mb * MB)
	for _, c := range cfg.CPUs {
		if c < 0 || c >= 1024 {
			return nil, fmt.Errorf("cpu %d out of range 0-1023", c)
		}
	}
	l := &Load{Kind: cfg.Kind, Unit: info.unit, cpus: cfg.CPUs}
	seed := func(i int) uint32 {
		s := uint32(lfsrSeed) + cfg.Seed*0x9E3779B9 + uint32(i)*0x6D2B79F5
		if s == 0 {
			s = lfsrSeed
		}
		return s
	}
	add := func(w worker, touched int64) {
		l.workers = append(l.workers, w)
		l.Touched += touched
	}
	per := func(total int64, n int) int64 { return total / int64(n) }
	switch cfg.Kind {
	case KindSoI:
		if bytes == 0 {
			return l, nil // dial 0: no interference
		}
		st, rt := cfg.StreamThreads, cfg.RandomThreads
		if st == 0 && rt == 0 {
			st, rt = 3, 2
		}
		// The SoI mixes bytes copied and random accesses, so its unit is the step: one
		// 1 MiB streaming block or 65 536 random accesses.
		l.Unit = "steps"
		steps := func(w worker, touched int64) { add(stepCount{w}, touched) }
		if err := spawn(st, func(int) (*streamWorker, int64, error) { return newStream(per(bytes/2, st)) }, steps); err != nil {
			return nil, err
		}
		if err := spawn(rt, func(i int) (*randomWorker, int64, error) { return newRandom(per(bytes-bytes/2, rt), seed(i)) }, steps); err != nil {
			return nil, err
		}
	case KindStream:
		if err := spawn(cfg.Workers, func(int) (*streamWorker, int64, error) { return newStream(per(bytes, cfg.Workers)) }, add); err != nil {
			return nil, err
		}
	case KindRandom:
		if err := spawn(cfg.Workers, func(i int) (*randomWorker, int64, error) { return newRandom(per(bytes, cfg.Workers), seed(i)) }, add); err != nil {
			return nil, err
		}
	case KindHybrid:
		if err := spawn(cfg.Workers, func(int) (*hybridWorker, int64, error) { return newHybrid(per(bytes, cfg.Workers)) }, add); err != nil {
			return nil, err
		}
	case KindCompute:
		for i := 0; i < cfg.Workers; i++ {
			add(&computeWorker{x: uint64(seed(i)) | 1}, 0)
		}
	case KindLLC:
		for i := 0; i < cfg.Workers; i++ {
			n := per(bytes, cfg.Workers) / 64 * 8 // whole lines, in uint64s
			if n < 8 {
				return nil, fmt.Errorf("llc stressor: %g MB over %d workers is less than one cache line each", mb, cfg.Workers)
			}
			buf := make([]uint64, n)
			fill(buf, 1)
			add(&lineWorker{buf: buf, lfsr: seed(i)}, n*8)
		}
	case KindMemRead, KindMemWrite:
		for i := 0; i < cfg.Workers; i++ {
			n := per(bytes, cfg.Workers) / 8
			if n < 1 {
				return nil, fmt.Errorf("%s stressor: %g MB over %d workers is less than one word each", cfg.Kind, mb, cfg.Workers)
			}
			buf := make([]uint64, n)
			fill(buf, 0x0101010101010101)
			add(&seqWorker{buf: buf, write: cfg.Kind == KindMemWrite}, n*8)
		}
	case KindPrefetch:
		for i := 0; i < cfg.Workers; i++ {
			n := per(bytes, cfg.Workers) / 24
			if n < 1 {
				return nil, fmt.Errorf("prefetch stressor: %g MB over %d workers is less than one element each", mb, cfg.Workers)
			}
			w := &triadWorker{a: make([]float64, n), b: make([]float64, n), c: make([]float64, n), s: 1}
			for j := range w.a {
				w.a[j], w.b[j], w.c[j] = 1, 1, 1
			}
			add(w, n*24)
		}
	case KindSyscall:
		word := new(uint32)
		for i := 0; i < cfg.Workers; i++ {
			w, err := newFutexWorker(word)
			if err != nil {
				return nil, err
			}
			add(w, 0)
		}
	}
	return l, nil
}

// Block sizes of one step: about a millisecond of work each.
const (
	streamBlock = 1 << 16 // elements per array
	randomBlock = 1 << 16 // accesses
	seqBlock    = 1 << 17 // words (1 MiB)
	lineBlock   = 1 << 16 // lines
	hybridBlock = 20 * 2000
	computeIter = 1 << 20
)

// spawn makes n workers with mk (i: the worker's index) and adds each with the bytes it
// touches.
func spawn[W worker](n int, mk func(i int) (W, int64, error), add func(w worker, touched int64)) error {
	for i := 0; i < n; i++ {
		w, t, err := mk(i)
		if err != nil {
			return err
		}
		add(w, t)
	}
	return nil
}

// stepCount counts steps instead of the wrapped worker's unit.
type stepCount struct{ w worker }

func (s stepCount) step() int64 { s.w.step(); return 1 }

type streamWorker struct {
	a, b []float64
	s    float64
	c    int
	back bool
}

// newStream builds a streaming-copy worker over two arrays of bytes/16 doubles each.
func newStream(bytes int64) (*streamWorker, int64, error) {
	n := bytes / 16
	if n < 1 {
		return nil, 0, fmt.Errorf("streaming copy: %d bytes per thread is less than two doubles", bytes)
	}
	w := &streamWorker{a: make([]float64, n), b: make([]float64, n), s: 1}
	for i := range w.a {
		w.a[i], w.b[i] = 1, 1
	}
	return w, n * 16, nil
}

func (w *streamWorker) step() int64 {
	e := min(w.c+streamBlock, len(w.a))
	var moved int64
	if w.back {
		moved = streamCopy(w.b[w.c:e], w.a[w.c:e], w.s)
	} else {
		moved = streamCopy(w.a[w.c:e], w.b[w.c:e], w.s)
	}
	w.c = e
	if w.c == len(w.a) {
		w.c, w.back = 0, !w.back
	}
	return moved
}

type randomWorker struct {
	data []uint32
	dump [10]uint32
	lfsr uint32
}

// newRandom builds a random-access worker over bytes/4 uint32 elements.
func newRandom(bytes int64, seed uint32) (*randomWorker, int64, error) {
	n := bytes / 4
	if n < 1 {
		return nil, 0, fmt.Errorf("random access: %d bytes per thread is less than one element", bytes)
	}
	if n > 1<<32-1 {
		return nil, 0, fmt.Errorf("random access: %d bytes per thread exceeds the 32-bit LFSR's range (16 GB)", bytes)
	}
	w := &randomWorker{data: make([]uint32, n), lfsr: seed}
	for i := range w.data {
		w.data[i] = uint32(i)
	}
	return w, n * 4, nil
}

func (w *randomWorker) step() int64 {
	w.lfsr = randomAccess(w.data, &w.dump, w.lfsr, randomBlock)
	return randomBlock
}

type hybridWorker struct {
	src, dst []float64
	cells    int // interior elements (multiple of 20)
	c        int
}

// newHybrid builds an lbm-like worker whose two grids (interior plus margins) total bytes.
func newHybrid(bytes int64) (*hybridWorker, int64, error) {
	n := (bytes/16 - 2*lbmMargin) / 20 * 20
	if n < 20 {
		return nil, 0, fmt.Errorf("hybrid: %d bytes per thread is too small; the lbm-like grids need at least %.1f MB", bytes, float64(2*(2*lbmMargin+20)*8)/MB)
	}
	size := int(n) + 2*lbmMargin
	w := &hybridWorker{src: make([]float64, size), dst: make([]float64, size), cells: int(n)}
	for i := range w.src {
		w.src[i], w.dst[i] = 1, 1
	}
	return w, int64(size) * 16, nil
}

func (w *hybridWorker) step() int64 {
	e := min(w.c+hybridBlock, w.cells)
	moved := lbmSweep(w.dst, w.src, w.c, e)
	w.c = e
	if w.c == w.cells {
		w.c = 0
		w.src, w.dst = w.dst, w.src
	}
	return moved
}

type computeWorker struct{ x uint64 }

func (w *computeWorker) step() int64 {
	w.x = computeLoop(w.x, computeIter)
	return computeIter
}

type lineWorker struct {
	buf  []uint64
	lfsr uint32
}

func (w *lineWorker) step() int64 {
	w.lfsr = lineWalk(w.buf, w.lfsr, lineBlock)
	return lineBlock
}

type seqWorker struct {
	buf   []uint64
	write bool
	c     int
	sink  uint64
}

func (w *seqWorker) step() int64 {
	e := min(w.c+seqBlock, len(w.buf))
	if w.write {
		fill(w.buf[w.c:e], w.sink)
		w.sink++
	} else {
		w.sink += readSum(w.buf[w.c:e])
	}
	n := int64(e-w.c) * 8
	w.c = e
	if w.c == len(w.buf) {
		w.c = 0
	}
	return n
}

type triadWorker struct {
	a, b, c []float64
	s       float64
	i       int
}

func (w *triadWorker) step() int64 {
	e := min(w.i+streamBlock, len(w.a))
	moved := triad(w.a[w.i:e], w.b[w.i:e], w.c[w.i:e], w.s)
	w.i = e
	if w.i == len(w.a) {
		w.i = 0
	}
	return moved
}
