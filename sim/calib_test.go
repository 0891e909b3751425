package sim

import (
	"testing"
	"time"

	"colo/internal/machinetest"
	"colo/metric"
)

// steady is a workload's behaviour over the last half of a run alone in an exclusive
// partition.
type steady struct {
	IPC, IPCE, MissRatio, MBps, Occupancy float64
}

// sweepPoint runs w alone on core 0 of machine name in CLOS 1 with the k lowest ways and
// MBA value mba on its domain, for 4 s of 100 ms ticks, and averages the last 2 s.
func sweepPoint(t testing.TB, name string, w Workload, k, mba int) steady {
	t.Helper()
	p := machinetest.Get(t, name)
	m, err := New(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	masks := make([]uint64, p.LLCDomains())
	mbas := make([]int, p.LLCDomains())
	for d := range masks {
		masks[d] = 1<<uint(k) - 1
		mbas[d] = mba
	}
	if err := m.SetCLOS(1, masks, mbas); err != nil {
		t.Fatal(err)
	}
	cores := make([]int, max(1, w.Threads))
	for i := range cores {
		cores[i] = i
	}
	id, err := m.AddWorkload(w, cores)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Assign(id, 1); err != nil {
		t.Fatal(err)
	}
	var instr, cyc, stalls, refs, miss, bytes float64
	const ticks = 40
	for i := 0; i < ticks; i++ {
		c := m.Step(100 * time.Millisecond)[0]
		if i >= ticks/2 {
			instr += float64(c.Instructions)
			cyc += float64(c.Cycles)
			stalls += float64(c.StallCycles)
			refs += float64(c.LLCReferences)
			miss += float64(c.LLCMisses)
			bytes += float64(c.MemBytesTotal)
		}
	}
	occ, _ := m.Occupancy(id, 0)
	return steady{
		IPC:       metric.IPC(instr, cyc),
		IPCE:      metric.IPCE(stalls, cyc),
		MissRatio: miss / refs,
		MBps:      bytes / 1e6 / (ticks / 2 * 0.1),
		Occupancy: occ,
	}
}

// sweepWays is sweepPoint for k = 1..W at MBA 100 %.
func sweepWays(t testing.TB, name string, w Workload) []steady {
	p := machinetest.Get(t, name)
	out := make([]steady, p.LLC.Ways+1)
	for k := 1; k <= p.LLC.Ways; k++ {
		out[k] = sweepPoint(t, name, w, k, 100)
	}
	return out
}

// firstWays is the smallest way count whose value satisfies ok (0 if none).
func firstWays(s []steady, ok func(steady) bool) int {
	for k := 1; k < len(s); k++ {
		if ok(s[k]) {
			return k
		}
	}
	return 0
}

func logSweep(t *testing.T, label string, s []steady) {
	t.Helper()
	for k := 1; k < len(s); k++ {
		t.Logf("%s %2d ways: IPC %.3f IPCE %.3f miss %.4f %6.0f MB/s occ %.1f MB", label, k, s[k].IPC, s[k].IPCE, s[k].MissRatio, s[k].MBps, s[k].Occupancy/(1<<20))
	}
}

// seed000.md §5.1 / §7.2: random `neighbor` over 6 MB reaches locality at 3–4 exclusive
// ways with 1 GB pages, only at 6–7 with 2 MB pages; at 3–4 ways the 2 MB variant misses
// orders of magnitude more.
func TestCalibNeighborPageSizes(t *testing.T) {
	g1 := sweepWays(t, "icx-4314-2s", Neighbor(6<<20, Page1G))
	g2 := sweepWays(t, "icx-4314-2s", Neighbor(6<<20, Page2M))
	logSweep(t, "1G", g1)
	logSweep(t, "2M", g2)
	local := func(s steady) bool { return s.MissRatio < 0.02 }
	if k := firstWays(g1, local); k < 3 || k > 4 {
		t.Errorf("1 GB pages: locality (miss ratio < 2 %%) first at %d ways, want 3–4", k)
	}
	if k := firstWays(g2, local); k < 6 || k > 7 {
		t.Errorf("2 MB pages: locality first at %d ways, want 6–7", k)
	}
	for _, k := range []int{4} {
		if g2[k].MissRatio < 100*g1[k].MissRatio || g2[k].MissRatio < 0.05 {
			t.Errorf("%d ways: 2 MB miss ratio %.4f is not orders of magnitude above 1 GB's %.6f", k, g2[k].MissRatio, g1[k].MissRatio)
		}
	}
	// With locality the priority job reaches the thesis's 90 % IPCE target; without it is far below.
	if g1[4].IPCE < 0.9 || g1[1].IPCE > 0.5 {
		t.Errorf("neighbor 1G IPCE: %.3f at 4 ways (want ≥ 0.9), %.3f at 1 way (want < 0.5)", g1[4].IPCE, g1[1].IPCE)
	}
	// Smaller pages fill a small partition worse: occupancy below the 6 MB buffer (Fig. 6.4).
	if g2[3].Occupancy >= 0.95*(6<<20) || g1[3].Occupancy < 0.99*(6<<20) {
		t.Errorf("occupancy in 3 ways: 2M %.2f MB (want < 5.7), 1G %.2f MB (want ≈ 6)", g2[3].Occupancy/(1<<20), g1[3].Occupancy/(1<<20))
	}
}

// seed000.md §5.1: tsearch 2^17 jumps at ≥ 8 ways (virtually no misses from there); 2^20
// never reaches locality, only bandwidth matters: every 10 % MBA is markedly worse and
// nothing is gained above 20 %.
func TestCalibTsearch(t *testing.T) {
	small := sweepWays(t, "icx-4314-2s", StressTsearch(1<<17))
	logSweep(t, "2^17", small)
	top := small[12].IPC
	knee := firstWays(small, func(s steady) bool { return s.IPC >= 0.9*top })
	if knee != 8 {
		t.Errorf("tsearch 2^17: IPC reaches 90 %% of its 12-way value at %d ways, want 8", knee)
	}
	if small[8].MissRatio > 0.02 || small[6].MissRatio < 2*small[8].MissRatio {
		t.Errorf("tsearch 2^17 miss ratio %.4f at 8 ways (want < 2 %%), %.4f at 6", small[8].MissRatio, small[6].MissRatio)
	}
	// Once the tree is in cache the 10 % MBA gap closes.
	in10, in100 := sweepPoint(t, "icx-4314-2s", StressTsearch(1<<17), 10, 10), sweepPoint(t, "icx-4314-2s", StressTsearch(1<<17), 10, 100)
	out10, out100 := sweepPoint(t, "icx-4314-2s", StressTsearch(1<<17), 3, 10), sweepPoint(t, "icx-4314-2s", StressTsearch(1<<17), 3, 100)
	t.Logf("tsearch 2^17 MBA 10 %%/100 %%: %.3f at 10 ways, %.3f at 3 ways", in10.IPC/in100.IPC, out10.IPC/out100.IPC)
	if gapIn, gapOut := 1-in10.IPC/in100.IPC, 1-out10.IPC/out100.IPC; gapIn > 0.02 || gapOut < 0.1 {
		t.Errorf("tsearch 2^17 MBA 10 %% gap: %.3f with the tree cached (want ≈ 0), %.3f at 3 ways (want > 0.1)", gapIn, gapOut)
	}

	big := sweepWays(t, "icx-4314-2s", StressTsearch(1<<20))
	logSweep(t, "2^20", big)
	if big[12].MissRatio < 0.3 {
		t.Errorf("tsearch 2^20 miss ratio %.3f at 12 ways: it must never reach locality", big[12].MissRatio)
	}
	for _, k := range []int{2, 6, 12} {
		ipc := map[int]float64{}
		for mba := 10; mba <= 100; mba += 10 {
			ipc[mba] = sweepPoint(t, "icx-4314-2s", StressTsearch(1<<20), k, mba).IPC
		}
		t.Logf("tsearch 2^20 at %d ways: IPC at MBA 10 %% / 20 %% / 100 %%: %.3f %.3f %.3f", k, ipc[10], ipc[20], ipc[100])
		if ipc[10] > 0.85*ipc[100] {
			t.Errorf("tsearch 2^20 at %d ways: MBA 10 %% IPC %.3f not markedly below 100 %%'s %.3f", k, ipc[10], ipc[100])
		}
		for mba := 20; mba <= 100; mba += 10 {
			if ipc[mba] < 0.99*ipc[100] {
				t.Errorf("tsearch 2^20 at %d ways: MBA %d %% IPC %.3f below 100 %%'s %.3f (nothing should be gained above 20 %%)", k, mba, ipc[mba], ipc[100])
			}
		}
	}
}

// seed000.md §5.1: matrix-3d 96³ mostly fits from 5 exclusive ways and is strongly
// MBA-dependent until locality; 128³ streams: it never fits and its MBA dependence is
// amplified.
func TestCalibMatrix3D(t *testing.T) {
	m96 := sweepWays(t, "icx-4314-2s", StressMatrix3D(96))
	m128 := sweepWays(t, "icx-4314-2s", StressMatrix3D(128))
	logSweep(t, "96", m96)
	logSweep(t, "128", m128)
	knee := firstWays(m96, func(s steady) bool { return s.IPC >= 0.85*m96[12].IPC })
	if knee < 4 || knee > 5 {
		t.Errorf("matrix-3d 96³ reaches 85 %% of its 12-way IPC at %d ways, want 5 (±1 below)", knee)
	}
	if m96[12].MissRatio > 0.01 {
		t.Errorf("matrix-3d 96³ must fit in 12 ways: miss ratio %.4f", m96[12].MissRatio)
	}
	if m128[12].MissRatio < 0.1 {
		t.Errorf("matrix-3d 128³ must never fit: miss ratio %.4f at 12 ways", m128[12].MissRatio)
	}
	amplified := 0
	for _, k := range []int{2, 5, 8, 12} {
		r96 := sweepPoint(t, "icx-4314-2s", StressMatrix3D(96), k, 10).IPC / m96[k].IPC
		r128 := sweepPoint(t, "icx-4314-2s", StressMatrix3D(128), k, 10).IPC / m128[k].IPC
		t.Logf("%d ways: IPC at MBA 10 %% / 100 %%: 96³ %.3f, 128³ %.3f", k, r96, r128)
		if r128 > r96+1e-9 {
			t.Errorf("%d ways: 128³ loses less to MBA 10 %% (%.3f) than 96³ (%.3f); its MBA dependence must be amplified", k, r128, r96)
		}
		if r128 < r96-0.05 {
			amplified++
		}
		if k <= 5 && r96 > 0.8 {
			t.Errorf("%d ways: 96³ must be strongly MBA-dependent before locality, MBA 10 %% keeps %.3f of its IPC", k, r96)
		}
	}
	if amplified == 0 {
		t.Error("128³'s MBA dependence is nowhere clearly larger than 96³'s")
	}
}

// seed000.md §5.1: 7-Zip -mx=2 depends only on ways; -mx=5 only on MBA (> 10 % enough).
func TestCalibSevenZip(t *testing.T) {
	for _, k := range []int{1, 2, 4, 12} {
		for _, mba := range []int{10, 20, 50} {
			a := sweepPoint(t, "icx-4314-2s", SevenZip(2, 1), k, mba).IPC
			b := sweepPoint(t, "icx-4314-2s", SevenZip(2, 1), k, 100).IPC
			if k == 1 && mba == 10 {
				t.Logf("7-Zip -mx=2 at 1 way: IPC at MBA 10 %% / 100 %%: %.3f %.3f", a, b)
			}
			if a < 0.99*b {
				t.Errorf("7-Zip -mx=2 at %d ways: MBA %d %% IPC %.3f vs %.3f at 100 %%; it must depend on ways only", k, mba, a, b)
			}
		}
	}
	z2 := sweepWays(t, "icx-4314-2s", SevenZip(2, 1))
	logSweep(t, "mx2", z2)
	if z2[12].IPC < 1.2*z2[1].IPC {
		t.Errorf("7-Zip -mx=2 must gain from ways: IPC %.3f at 1 way, %.3f at 12", z2[1].IPC, z2[12].IPC)
	}
	z5 := sweepWays(t, "icx-4314-2s", SevenZip(5, 1))
	logSweep(t, "mx5", z5)
	if z5[12].IPC > 1.1*z5[1].IPC {
		t.Errorf("7-Zip -mx=5 must be insensitive to ways: IPC %.3f at 1 way, %.3f at 12", z5[1].IPC, z5[12].IPC)
	}
	for _, k := range []int{1, 6, 12} {
		at := func(mba int) float64 { return sweepPoint(t, "icx-4314-2s", SevenZip(5, 1), k, mba).IPC }
		full := at(100)
		t.Logf("7-Zip -mx=5 at %d ways: IPC at MBA 10 %% / 20 %% / 100 %%: %.3f %.3f %.3f", k, at(10), at(20), full)
		if at(10) > 0.9*full {
			t.Errorf("7-Zip -mx=5 at %d ways: MBA 10 %% must hurt (IPC %.3f vs %.3f)", k, at(10), full)
		}
		for _, mba := range []int{20, 30, 60} {
			if at(mba) < 0.99*full {
				t.Errorf("7-Zip -mx=5 at %d ways: MBA %d %% should already give full performance (%.3f vs %.3f)", k, mba, at(mba), full)
			}
		}
	}
}

// dCat (seed003.md §3.3, §4): MLOAD-60MB's IPC is flat at any way count (streaming), while
// MLR-8MB on bdw-2697v4 (2.25 MB ways) stops gaining 5 % per way around 8 ways, its
// preferred size.
func TestCalibDCatMicrobenchmarks(t *testing.T) {
	ml := sweepWays(t, "bdw-2697v4", MLOAD(60<<20))
	if ml[20].IPC > 1.02*ml[1].IPC {
		t.Errorf("MLOAD-60MB must be flat: IPC %.3f at 1 way, %.3f at 20", ml[1].IPC, ml[20].IPC)
	}
	mlr := sweepWays(t, "bdw-2697v4", MLR(8<<20))
	pref := 0
	for k := 2; k <= 20; k++ {
		if mlr[k].IPC < 1.05*mlr[k-1].IPC {
			pref = k - 1
			break
		}
	}
	t.Logf("MLR-8MB preferred ways %d", pref)
	if pref < 7 || pref > 9 {
		t.Errorf("MLR-8MB stops gaining 5 %% per way at %d ways, want about 8 (7–9)", pref)
	}
}

// dCat Fig. 1 (seed003.md §3.2) on bdw-2697v4: MLR-6MB is badly hurt by two MLOAD-60MB
// neighbours in a shared cache and fully protected by CAT at 6 ways (13.5 MB); MLR-16MB is
// still severely hurt with CAT, because 13.5 MB < 16 MB.
func TestCalibDCatNoisyNeighbours(t *testing.T) {
	run := func(ws int64, cat bool, neighbours bool) float64 {
		p := machinetest.Get(t, "bdw-2697v4")
		m, err := New(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		id, err := m.AddWorkload(MLR(ws), []int{0})
		if err != nil {
			t.Fatal(err)
		}
		if cat {
			if err := m.SetCLOS(1, []uint64{0x3f}, nil); err != nil {
				t.Fatal(err)
			}
			if err := m.SetCLOS(0, []uint64{0xfffc0}, nil); err != nil {
				t.Fatal(err)
			}
			if err := m.Assign(id, 1); err != nil {
				t.Fatal(err)
			}
		}
		if neighbours {
			for c := 1; c <= 2; c++ {
				if _, err := m.AddWorkload(MLOAD(60<<20), []int{c}); err != nil {
					t.Fatal(err)
				}
			}
		}
		var instr, cyc float64
		for i := 0; i < 40; i++ {
			c := m.Step(100 * time.Millisecond)[0]
			if i >= 20 {
				instr += float64(c.Instructions)
				cyc += float64(c.Cycles)
			}
		}
		return instr / cyc
	}
	alone6 := run(6<<20, false, false)
	shared6 := run(6<<20, false, true)
	cat6 := run(6<<20, true, true)
	alone16 := run(16<<20, false, false)
	cat16 := run(16<<20, true, true)
	t.Logf("MLR-6MB IPC alone %.4f, shared with 2 MLOAD %.4f, CAT 6 ways %.4f; MLR-16MB alone %.4f, CAT %.4f", alone6, shared6, cat6, alone16, cat16)
	if shared6 > 0.7*alone6 {
		t.Errorf("MLR-6MB must be badly hurt in a shared cache: %.4f vs %.4f alone", shared6, alone6)
	}
	if cat6 < 0.9*alone6 { // residual conflict misses of 4 KiB pages (seed003.md §3.2) cost a few %
		t.Errorf("MLR-6MB must be protected by CAT at 6 ways: %.4f vs %.4f alone", cat6, alone6)
	}
	if cat16 > 0.7*alone16 {
		t.Errorf("MLR-16MB must still be severely hurt with CAT at 6 ways: %.4f vs %.4f alone", cat16, alone16)
	}
}
