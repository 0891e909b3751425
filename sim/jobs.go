package sim

import (
	"fmt"
	"time"
)

// Workload is what AddWorkload runs: a sequence of phases, each a Model for a duration of
// virtual time. The last phase runs forever unless Loop restarts the sequence.
type Workload struct {
	Name   string
	Phases []Phase
	// Loop restarts at the first phase after the last one ends.
	Loop bool
	// Threads is the number of cores the job asks for (a hint for the orchestrator, e.g.
	// 7-Zip -mmt=2); the simulator runs one thread per core given to AddWorkload.
	Threads int
}

// Phase is one model for Duration of virtual time (0: until the end).
type Phase struct {
	Model    Model
	Duration time.Duration
}

// Single is a one-phase workload.
func Single(m Model, threads int) Workload {
	return Workload{Name: m.Name(), Phases: []Phase{{Model: m}}, Threads: max(1, threads)}
}

// The thesis job pool (seed000.md §4.2–4.3) and dCat's microbenchmarks (seed003.md §3.1).
// Parameters are engineering estimates from what the papers say about each program; the
// calibration tests in calib_test.go check that on icx-4314-2s each one reproduces the
// allocation-sweep shapes of seed000.md §5.1. Memory latency and MBA come from Options.

// Neighbor is the thesis's `neighbor` microbenchmark (seed000.md §4.3, Listing A.7):
// read-modify-writes at rand() % size over a buffer of bufBytes backed by pageBytes pages
// (Page1G for hugetlb-1g, Page2M for hugetlb-2m/THP, Page4K for malloc).
//
//	random, one RMW per rand() call (~25 instructions): APKI 40; independent addresses
//	behind the rand() dependency chain: MLP 4; BaseCPI 0.55 with 8 % stalls, so IPCE ≈ 0.92
//	with locality (the 90 % target of the priority jobs is reachable, seed000.md §4.2) and
//	≈ 0.25 without (priority jobs start near 20 %, §4.4); a dirty line written back per
//	miss: 128 bytes of traffic.
func Neighbor(bufBytes int64, pageBytes int64) Workload {
	return Single(&Analytic{
		Label:           fmt.Sprintf("neighbor-random-%dMB-%s", bufBytes>>20, pageName(pageBytes)),
		WorkingSetBytes: bufBytes, Pattern: Random, PageBytes: pageBytes,
		BaseCPI: 0.55, BaseStallFrac: 0.08, APKI: 40, MLP: 4, BytesPerMiss: 128, Loads: 0.3,
	}, 1)
}

// NeighborStride is `neighbor --pattern stride` (stride 4096, bursts of 1,000; seed000.md
// §4.3). Its parameters are Neighbor's adjusted by colo's estimate, not fitted to a paper
// figure: no rand() call between accesses (APKI 60, BaseCPI 0.5) and addresses known ahead
// (MLP 6).
func NeighborStride(bufBytes int64, pageBytes int64) Workload {
	return Single(&Analytic{
		Label:           fmt.Sprintf("neighbor-stride-%dMB-%s", bufBytes>>20, pageName(pageBytes)),
		WorkingSetBytes: bufBytes, Pattern: Strided, StrideBytes: 4096, PageBytes: pageBytes,
		BaseCPI: 0.5, BaseStallFrac: 0.08, APKI: 60, MLP: 6, BytesPerMiss: 128, Loads: 0.35,
	}, 1)
}

// SevenZip is 7-Zip `-mx=level -mmt=threads` compressing a random 1 GB blob
// (seed000.md §4.3, §5.1). The working set is the match finder's hash and chain/tree plus
// the dictionary: levels ≤ 3 use the hc4 finder with a dictionary < 1 MB (working set a few
// MB: -mx=2 depends only on ways); levels ≥ 4 use bt4 with 16–64 MB dictionaries and ~11.5
// bytes of tree per dictionary byte (hundreds of MB: insensitive to ways, latency- and
// bandwidth-bound with a demand between the 10 % and 20 % MBA ceilings, so any MBA > 10 %
// is enough for -mx=5). Level 9 alternates a match-finding phase with a branch-bound phase
// (misprediction ≈ 3 %, high stall fraction, few LLC references) — the phase behaviour
// that makes its IPC contradictory (§2.7 c).
func SevenZip(level, threads int) Workload {
	level = min(max(level, 1), 9)
	ws := [...]int64{0, 2 << 20, 3 << 20, 6 << 20, 96 << 20, 250 << 20, 250 << 20, 500 << 20, 500 << 20, 700 << 20}[level]
	name := fmt.Sprintf("7zip-mx%d-mmt%d", level, max(1, threads))
	var m *Analytic
	if level <= 3 {
		m = &Analytic{Label: name, WorkingSetBytes: ws, Pattern: Random, PageBytes: Page4K,
			BaseCPI: 0.75, BaseStallFrac: 0.12, APKI: 6, MLP: 2, BytesPerMiss: 64, Loads: 0.32}
	} else {
		m = &Analytic{Label: name, WorkingSetBytes: ws, Pattern: Random, PageBytes: Page4K,
			BaseCPI: 0.9, BaseStallFrac: 0.15, APKI: 6.5, MLP: 2.5, BytesPerMiss: 128, Loads: 0.32}
	}
	w := Single(m, threads)
	if level == 9 {
		branchy := &Analytic{Label: name + "-branch", WorkingSetBytes: 8 << 20, Pattern: Random, PageBytes: Page4K,
			BaseCPI: 1.6, BaseStallFrac: 0.45, APKI: 1.5, MLP: 2, BytesPerMiss: 64, Loads: 0.22}
		w.Phases = []Phase{{Model: m, Duration: 40 * time.Second}, {Model: branchy, Duration: 20 * time.Second}}
		w.Loop = true
	}
	return w
}

// StressMatrix3D is `stress-ng --matrix-3d 1 --matrix-3d-size n` (seed000.md §4.2, §5.1):
// three n³ float32 matrices (96³ ≈ 10.6 MB mostly fits from 5 ways; 128³ ≈ 25 MB, the
// default, streams). The 3-D loops reuse every element many times per sweep: uniform
// reuse with prefetched streams (MLP 8), 20 LLC references per kilo-instruction when the
// matrices are out of the L2, one of three matrices written back (85 bytes per miss).
func StressMatrix3D(n int) Workload {
	ws := 3 * int64(n) * int64(n) * int64(n) * 4
	return Single(&Analytic{Label: fmt.Sprintf("stress-ng-matrix-3d-%d", n), WorkingSetBytes: ws,
		Pattern: Random, PageBytes: Page4K, BaseCPI: 0.6, BaseStallFrac: 0.1, APKI: 20, MLP: 8,
		BytesPerMiss: 85, Loads: 0.4}, 1)
}

// StressTsearch is `stress-ng --tsearch 1 --tsearch-size nodes` (seed000.md §4.2, §5.1):
// a binary tree built with tsearch(3) and searched. Each node visit is a dependent load
// (MLP 1.2) of a malloc'd node plus its key: about 68 bytes of distinct lines per node
// (2^17 nodes ≈ 8.9 MB: locality at ≥ 8 ways with 4 KiB pages; 2^20 ≈ 71 MB never fits).
// The adjacent-line prefetcher doubles the traffic per miss (128 bytes), putting 2^20's
// demand between the 10 % and 20 % MBA ceilings ("no gain beyond 20 % MBA").
func StressTsearch(nodes int) Workload {
	return Single(&Analytic{Label: fmt.Sprintf("stress-ng-tsearch-%d", nodes), WorkingSetBytes: int64(nodes) * 68,
		Pattern: PointerChase, PageBytes: Page4K, BaseCPI: 0.7, BaseStallFrac: 0.1, APKI: 20, MLP: 1.2,
		BytesPerMiss: 128, Loads: 0.35}, 1)
}

// CPULoop is a CPU-bound loop (stress-ng's default cpu methods, insensitive to cache and
// bandwidth, seed000.md §5.2): L1-resident, almost no LLC references.
func CPULoop() Workload {
	return Single(&Analytic{Label: "cpu-loop", WorkingSetBytes: 32 << 10, Pattern: Random, PageBytes: Page4K,
		BaseCPI: 0.4, BaseStallFrac: 0.02, APKI: 0.05, MLP: 1, Loads: 0.25}, 1)
}

// Lookbusy is dCat's "polite neighbour" (seed003.md §3.1): consumes CPU without
// significant cache access.
func Lookbusy() Workload {
	return Single(&Analytic{Label: "lookbusy", WorkingSetBytes: 16 << 10, Pattern: Random, PageBytes: Page4K,
		BaseCPI: 0.5, BaseStallFrac: 0.02, APKI: 0.02, MLP: 1, Loads: 0.2}, 1)
}

// MLR is dCat's memory-latency-random microbenchmark (seed003.md §3.1): random reads over
// an array of wsBytes (4 KiB guest pages), each depending on the previous one, one load
// per 4 instructions (APKI 250 once the array leaves the L2). Its BaseCPI of 8.75 is the
// time of L3 hits (≈ 30 ns, 70 cycles at 2.4 GHz, per load, nothing overlapped).
func MLR(wsBytes int64) Workload {
	return Single(&Analytic{Label: fmt.Sprintf("MLR-%dMB", wsBytes>>20), WorkingSetBytes: wsBytes,
		Pattern: PointerChase, PageBytes: Page4K, BaseCPI: 0.25 + 0.25*35, BaseStallFrac: 0.9, APKI: 250, MLP: 1,
		BytesPerMiss: 64, Loads: 0.25}, 1)
}

// MLOAD is dCat's bandwidth microbenchmark (seed003.md §3.1): sequential reads over
// wsBytes (MLOAD-60MB streams at any allocation), 8-byte loads, 16 loads per line, two
// instructions per load (APKI 62), prefetched (MLP 10).
func MLOAD(wsBytes int64) Workload {
	return Single(&Analytic{Label: fmt.Sprintf("MLOAD-%dMB", wsBytes>>20), WorkingSetBytes: wsBytes,
		Pattern: Sequential, PageBytes: Page4K, BaseCPI: 0.5, BaseStallFrac: 0.05, APKI: 62, MLP: 10,
		BytesPerMiss: 64, Loads: 0.5}, 1)
}

func pageName(b int64) string {
	switch b {
	case Page1G:
		return "1G"
	case Page2M:
		return "2M"
	case Page4K:
		return "4K"
	}
	return fmt.Sprintf("%dB", b)
}
