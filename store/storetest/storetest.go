// Package storetest writes synthetic but plausible run directories through the store API,
// for tests and measurements of the report, exports and sink before (or without) a real
// orchestrator run. It is not a simulator: numbers follow simple, documented rules so that
// tests can predict them (e.g. the masks each socket holds at a given time).
package storetest

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"sort"
	"time"

	"colo/metric"
	"colo/store"
)

// Options shapes a synthetic run. Zero fields take the defaults of the thesis's scenarios
// (seed000.md, Table 5.1): inter-arrival N(5 s, 2), length N(140 s, 30) min 30, two
// sockets of 12 ways with one reserved way, 20 % priority jobs.
type Options struct {
	Seed       uint64
	Jobs       int           // number of arriving jobs (default 20)
	Duration   time.Duration // run length (default: until the last job ends)
	Tick       time.Duration // sampling period (default 1 s)
	Priority   float64       // share of priority jobs (default 0.2)
	Ways       int           // ways per socket (default 12)
	Sockets    int           // default 2
	Schedulers []string      // default {"least-loaded", "dynamic"}
	NoPMU      bool          // counters unavailable (NaN), RDT monitoring present
	Partitions bool          // also write partition results (colo partition style)
	Incomplete bool          // stop the last scheduler half-way without summary or Complete
	// Emulator records a linux run whose resctrl monitoring reads 0 (occupancy and memory
	// bytes), as on a resctrl emulator mount.
	Emulator bool
}

func (o *Options) defaults() {
	if o.Jobs == 0 {
		o.Jobs = 20
	}
	if o.Tick == 0 {
		o.Tick = time.Second
	}
	if o.Priority == 0 {
		o.Priority = 0.2
	}
	if o.Ways == 0 {
		o.Ways = 12
	}
	if o.Sockets == 0 {
		o.Sockets = 2
	}
	if len(o.Schedulers) == 0 {
		o.Schedulers = []string{"least-loaded", "dynamic"}
	}
}

// Written tells what Generate wrote, so tests can check what the report shows.
type Written struct {
	Samples     int64
	Allocations []store.Allocation // of the last scheduler run that uses RDT ("dynamic")
	Probes      int
	Events      int
}

type jobPlan struct {
	store.Job
	length   time.Duration
	baseIPCE float64
	peakIPC  float64
	probing  bool
}

// Plan returns the deterministic trace of o (same seed, same jobs).
func plan(o Options) []jobPlan {
	r := rand.New(rand.NewPCG(o.Seed, 0x5eed))
	var out []jobPlan
	t := 0.0
	for i := 0; i < o.Jobs; i++ {
		t += math.Max(0.5, 5+2*r.NormFloat64())
		l := math.Max(30, 140+30*r.NormFloat64())
		j := jobPlan{Job: store.Job{ID: i, Name: fmt.Sprintf("job-%03d", i), Kind: "single-thread",
			Model: []string{"7zip-mx2", "matrix-3d", "neighbor-6mb", "tsearch"}[i%4],
			Cores: 1 + r.IntN(2), Socket: -1, Arrival: time.Duration(t * float64(time.Second)),
			Start: store.Unset, Stop: store.Unset, State: "queued", IPCETarget: math.NaN()},
			length: time.Duration(l * float64(time.Second)), baseIPCE: 0.45 + 0.4*r.Float64(), peakIPC: 1.5 + r.Float64()}
		if r.Float64() < o.Priority {
			j.Priority = true
			j.IPCETarget = math.Round(100*math.Min(0.95, j.baseIPCE+0.05)) / 100
		}
		if j.Kind = "single-thread"; j.Cores > 1 {
			j.Kind = "multi-thread"
		}
		out = append(out, j)
	}
	return out
}

// Generate writes a synthetic run directory at dir and returns what it wrote.
// Under "dynamic" each priority job is probed (two 2 s segments), then holds an exclusive
// contiguous mask of 2 or 4 ways (first fit from way 0) on its socket until it stops;
// "system/default" holds the ways above the highest allocated way.
func Generate(dir string, o Options) (Written, error) {
	o.defaults()
	var wr Written
	st, err := store.Create(dir, store.Meta{Name: "synthetic", Description: "storetest synthetic run", Kind: "run",
		Machine: "icx-4314-2s", Platform: map[bool]string{false: "sim", true: "linux"}[o.Emulator], Seed: int64(o.Seed),
		Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		return wr, err
	}
	defer st.Close()
	jobs := plan(o)
	end := o.Duration
	if end == 0 {
		for _, j := range jobs {
			end = max(end, j.Arrival+j.length+o.Tick)
		}
	}
	for si, name := range o.Schedulers {
		w, err := st.BeginRun(store.Run{Scheduler: name, Trace: fmt.Sprintf("synthetic seed %d", o.Seed)})
		if err != nil {
			return wr, err
		}
		rdt := name != "least-loaded"
		runEnd := end
		last := si == len(o.Schedulers)-1
		if o.Incomplete && last {
			runEnd = end / 2
		}
		allocs, n, err := runOne(w, o, jobs, rdt, runEnd, o.Seed+uint64(si))
		if err != nil {
			return wr, err
		}
		wr.Samples += int64(n.samples)
		wr.Probes += n.probes
		wr.Events += n.events
		if rdt {
			wr.Allocations = allocs
		}
		if o.Partitions {
			for _, p := range partitions() {
				if err := w.Partition(p); err != nil {
					return wr, err
				}
			}
		}
		if o.Incomplete && last {
			return wr, w.Flush()
		}
		sum := summarize(w, st, name)
		sum.VirtualSeconds = runEnd.Seconds()
		if err := w.Finish(sum); err != nil {
			return wr, err
		}
	}
	if err := st.Complete(); err != nil {
		return wr, err
	}
	return wr, st.Close()
}

func runOne(w *store.RunWriter, o Options, plan []jobPlan, rdt bool, end time.Duration, seed uint64) ([]store.Allocation, struct{ samples, probes, events int }, error) {
	var n struct{ samples, probes, events int }
	r := rand.New(rand.NewPCG(seed, 0xcafe))
	jobs := make([]jobPlan, len(plan))
	copy(jobs, plan)
	reserve := uint64(1) << (o.Ways - 1) // the top way stays with system/default
	used := make([]uint64, o.Sockets)    // exclusive ways per socket
	owner := map[int]uint64{}            // job → mask
	load := make([]int, o.Sockets)
	var allocs []store.Allocation
	emitAlloc := func(a store.Allocation) error {
		allocs = append(allocs, a)
		return w.Allocation(a)
	}
	defaultMask := func(s int) uint64 {
		hi := 64 - bits.LeadingZeros64(used[s]) // first way above the highest allocated
		full := uint64(1)<<o.Ways - 1
		return full &^ (uint64(1)<<hi - 1)
	}
	if rdt {
		for s := 0; s < o.Sockets; s++ {
			if err := emitAlloc(store.Allocation{T: 0, Socket: s, CLOS: "system/default", Mask: defaultMask(s), MBA: 100, Members: []int{}, Source: "sched"}); err != nil {
				return nil, n, err
			}
		}
	}
	for _, j := range jobs {
		if err := w.Job(j.Job); err != nil {
			return nil, n, err
		}
	}
	running := map[int]bool{}
	var batch []store.Sample
	for t := time.Duration(0); t <= end; t += o.Tick {
		// Arrivals and stops (in job order: deterministic).
		for i := range jobs {
			j := &jobs[i]
			if j.State == "queued" && j.Arrival <= t {
				s := 0
				for k := 1; k < o.Sockets; k++ {
					if load[k] < load[s] {
						s = k
					}
				}
				j.Socket, j.Start, j.State = s, t, "running"
				load[s] += j.Cores
				running[j.ID] = true
				if err := w.Job(j.Job); err != nil {
					return nil, n, err
				}
				if err := w.Event(store.Event{T: t, Kind: "place", Job: j.ID, Text: fmt.Sprintf("socket %d (fewest committed cores)", s)}); err != nil {
					return nil, n, err
				}
				n.events++
				if rdt && j.Priority {
					ways := 2 + 2*(j.ID%2)
					for k, wy := range []int{ways / 2, ways} {
						seg := store.ProbeSegment{Job: j.ID, Start: t + time.Duration(k)*2*time.Second, End: t + time.Duration(k+1)*2*time.Second,
							Kind: "allocation", Socket: s, Ways: wy, Mask: uint64(1)<<wy - 1, MBA: float64(10 * wy),
							IPC: j.peakIPC * j.baseIPCE, IPCE: j.baseIPCE + 0.02*float64(wy), Result: "measured"}
						if k == 1 {
							seg.Result = "best"
						}
						if err := w.Probe(seg); err != nil {
							return nil, n, err
						}
						n.probes++
					}
					j.probing = true
				}
			}
			if j.probing && j.State == "running" && t >= j.Start+4*time.Second {
				j.probing = false
				s := j.Socket
				ways := 2 + 2*(j.ID%2)
				if m, ok := firstFit(used[s]|reserve, ways, o.Ways); ok {
					used[s] |= m
					owner[j.ID] = m
					if err := emitAlloc(store.Allocation{T: t, Socket: s, CLOS: fmt.Sprintf("prio-%d", j.ID), Mask: m, MBA: float64(10 * ways), Members: []int{j.ID}, Source: "sched"}); err != nil {
						return nil, n, err
					}
					if err := emitAlloc(store.Allocation{T: t, Socket: s, CLOS: "system/default", Mask: defaultMask(s), MBA: 100, Members: []int{}, Source: "sched"}); err != nil {
						return nil, n, err
					}
					if err := w.Event(store.Event{T: t, Kind: "allocate", Job: j.ID, Text: fmt.Sprintf("%d ways %#x", ways, m)}); err != nil {
						return nil, n, err
					}
					n.events++
				} else {
					if err := w.Event(store.Event{T: t, Kind: "no-fit", Job: j.ID, Text: fmt.Sprintf("%d ways do not fit on socket %d; runs unallocated", ways, s)}); err != nil {
						return nil, n, err
					}
					n.events++
				}
			}
			if j.State == "running" && j.Start+j.length <= t {
				j.Stop, j.State = t, "completed"
				load[j.Socket] -= j.Cores
				delete(running, j.ID)
				if err := w.Job(j.Job); err != nil {
					return nil, n, err
				}
				if m, ok := owner[j.ID]; ok {
					used[j.Socket] &^= m
					delete(owner, j.ID)
					if err := emitAlloc(store.Allocation{T: t, Socket: j.Socket, CLOS: fmt.Sprintf("prio-%d", j.ID), Mask: 0, MBA: math.NaN(), Members: []int{}, Source: "sched"}); err != nil {
						return nil, n, err
					}
					if err := emitAlloc(store.Allocation{T: t, Socket: j.Socket, CLOS: "system/default", Mask: defaultMask(j.Socket), MBA: 100, Members: []int{}, Source: "sched"}); err != nil {
						return nil, n, err
					}
				}
			}
		}
		if t == 0 {
			continue
		}
		batch = batch[:0]
		for i := range jobs {
			j := &jobs[i]
			if !running[j.ID] {
				continue
			}
			// IPCE: base, minus contention from the socket's load, plus 0.1 while holding ways.
			ipce := j.baseIPCE - 0.005*float64(load[j.Socket]) + 0.03*r.NormFloat64()
			if _, ok := owner[j.ID]; ok {
				ipce += 0.1
			}
			ipce = math.Max(0.05, math.Min(0.98, ipce))
			cyc := 2.4e9 * float64(j.Cores) * o.Tick.Seconds()
			stalls := (1 - ipce) * cyc
			ins := j.peakIPC * ipce * cyc
			occ := float64(1+j.ID%8) * (1 << 20)
			if m, ok := owner[j.ID]; ok {
				occ = float64(bits.OnesCount64(m)) * 1.5 * (1 << 20)
			}
			mem := (1 - ipce) * 2e9 * o.Tick.Seconds()
			if o.Emulator {
				occ, mem = 0, 0
			}
			s := store.Sample{Job: j.ID, T: t, Interval: o.Tick, Socket: j.Socket,
				Instructions: ins, Cycles: cyc, StallsTotal: stalls, StallsL3Miss: 0.4 * stalls,
				LLCRefs: ins / 50, LLCMisses: ins / 50 * (1 - ipce) / 2, OccupancyBytes: occ,
				MemBytesLocal: 0.9 * mem, MemBytesTotal: mem,
				IPC: metric.IPC(ins, cyc), IPCE: metric.IPCE(stalls, cyc), Stalled: metric.StalledFraction(stalls, cyc)}
			if o.NoPMU {
				s.Instructions, s.Cycles, s.StallsTotal, s.StallsL3Miss = math.NaN(), math.NaN(), math.NaN(), math.NaN()
				s.LLCRefs, s.LLCMisses, s.IPC, s.IPCE, s.Stalled = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
			}
			batch = append(batch, s)
		}
		if err := w.Samples(batch); err != nil {
			return nil, n, err
		}
		n.samples += len(batch)
	}
	return allocs, n, nil
}

// firstFit returns the lowest contiguous run of `ways` free bits below `total`.
func firstFit(used uint64, ways, total int) (uint64, bool) {
	m := uint64(1)<<ways - 1
	for sh := 0; sh+ways <= total; sh++ {
		if used&(m<<sh) == 0 {
			return m << sh, true
		}
	}
	return 0, false
}

// summarize computes the per-scheduler summary from what was written, with package metric.
func summarize(w *store.RunWriter, st *store.Store, name string) store.Summary {
	if err := w.Flush(); err != nil {
		return store.Summary{Name: name}
	}
	jobs, _ := st.Jobs(w.ID())
	series := map[int][]metric.Sample{}
	_ = st.EachSample(w.ID(), func(s store.Sample) error {
		series[s.Job] = append(series[s.Job], metric.Sample{T: s.T.Seconds(), Value: s.IPCE})
		return nil
	})
	var prio, batch, all, tot []float64
	done := 0
	for _, j := range jobs {
		m := metric.TimeWeightedMean(series[j.ID]) * 100
		if math.IsNaN(m) {
			continue
		}
		all = append(all, m)
		if j.Priority {
			prio = append(prio, m)
			tot = append(tot, metric.TimeOverTarget(series[j.ID], j.IPCETarget))
		} else {
			batch = append(batch, m)
		}
		if j.State == "completed" {
			done++
		}
	}
	sort.Float64s(tot)
	return store.Summary{Name: name, PriorityIPCE: metric.Mean(prio), BatchIPCE: metric.Mean(batch), GlobalIPCE: metric.Mean(all),
		TimeOverTarget: metric.Mean(tot), TimeOverTargetP90: metric.Percentile(tot, 90), JobsCompleted: done,
		QueueDelayMean: 0, QueueDelayP90: 0, VirtualSeconds: 0, WallSeconds: math.NaN()}
}

// partitions returns a few (workload, policy) results in the shape of colo partition,
// with STP, ANTT and unfairness computed by package metric from the per-app slowdowns.
func partitions() []store.PartitionResult {
	apps := []string{"lbm06", "sphinx306", "milc06", "soplex06"}
	var out []store.PartitionResult
	for wi, wl := range []string{"W1", "W2", "W3"} {
		for pi, pol := range []string{"lfoc+", "ucp", "kpart", "equal"} {
			p := store.PartitionResult{Workload: wl, Policy: pol}
			var sd []float64
			for ai, a := range apps {
				s := 1.05 + 0.1*float64((ai+pi+wi)%4) + 0.05*float64(pi) + 0.07*float64(wi*ai%3)
				if pol == "lfoc+" && ai == 0 {
					s = 1.02
				}
				sd = append(sd, s)
				p.Apps = append(p.Apps, store.PartitionApp{App: a, Cluster: ai % 2, Ways: 2 + ai, Mask: uint64(1)<<(2+ai) - 1,
					IPCAlone: 1.2, IPC: 1.2 / s, Slowdown: s})
			}
			p.STP, p.ANTT, p.Unfairness, p.Jain = metric.STP(sd), metric.ANTT(sd), metric.Unfairness(sd), metric.Jain(sd)
			out = append(out, p)
		}
	}
	return out
}

// MasksAt replays allocations and returns, for each socket, the mask each class holds at t
// (classes with mask 0 are dropped): what a bitmask panel must show at time t.
func MasksAt(allocs []store.Allocation, t time.Duration) map[int]map[string]uint64 {
	out := map[int]map[string]uint64{}
	for _, a := range allocs {
		if a.T > t {
			continue
		}
		if out[a.Socket] == nil {
			out[a.Socket] = map[string]uint64{}
		}
		if a.Mask == 0 {
			delete(out[a.Socket], a.CLOS)
		} else {
			out[a.Socket][a.CLOS] = a.Mask
		}
	}
	return out
}
