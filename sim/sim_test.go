package sim

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"testing"
	"time"

	"colo/internal/machinetest"
	"colo/metric"
	"colo/perfmodel"
	"colo/profile"
)

func icx(t testing.TB, o Options) *Machine {
	t.Helper()
	p := machinetest.Get(t, "icx-4314-2s")
	m, err := New(p, o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func add(t testing.TB, m *Machine, w Workload, cores ...int) ID {
	t.Helper()
	id, err := m.AddWorkload(w, cores)
	must(t, err)
	return id
}

// pool32 fills both sockets of icx-4314-2s (32 cores) with the thesis job pool: per socket
// two priority `neighbor` jobs in exclusive ways and MBA, and batch jobs (7-Zip, matrix-3d,
// tsearch, a CPU loop) sharing the remaining ways, some of them throttled.
func pool32(t testing.TB, m *Machine) {
	t.Helper()
	// CLOS 1,2: priority (4 and 3 exclusive ways); 3: batch (5 ways, overlapping 1 way
	// with CLOS 2); 4: throttled batch (same ways, MBA 30 %).
	must(t, m.SetCLOS(1, []uint64{0x00f, 0x00f}, []int{100, 100}))
	must(t, m.SetCLOS(2, []uint64{0x070, 0x070}, []int{80, 80}))
	must(t, m.SetCLOS(3, []uint64{0xfc0, 0xfc0}, []int{100, 100}))
	must(t, m.SetCLOS(4, []uint64{0xf80, 0xf80}, []int{30, 30}))
	for s := 0; s < 2; s++ {
		c := s * 16
		jobs := []struct {
			w     Workload
			n     int
			clos  int
			label string
		}{
			{Neighbor(6<<20, Page1G), 1, 1, ""},
			{Neighbor(4<<20, Page1G), 1, 2, ""},
			{SevenZip(1, 2), 2, 3, ""},
			{SevenZip(2, 1), 1, 3, ""},
			{SevenZip(3, 2), 2, 4, ""},
			{SevenZip(9, 1), 1, 4, ""},
			{StressMatrix3D(128), 1, 3, ""},
			{StressMatrix3D(196), 1, 4, ""},
			{StressMatrix3D(256), 2, 4, ""},
			{StressTsearch(1 << 17), 1, 3, ""},
			{StressTsearch(1 << 20), 2, 4, ""},
			{CPULoop(), 1, 0, ""},
		}
		for _, j := range jobs {
			cores := make([]int, j.n)
			for i := range cores {
				cores[i] = c
				c++
			}
			id := add(t, m, j.w, cores...)
			must(t, m.Assign(id, j.clos))
		}
		if c != s*16+16 {
			t.Fatalf("pool uses %d cores on socket %d", c-s*16, s)
		}
	}
}

func dump(cs []Counters) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%d %d %d %d %d %d %d %d %d %d %d %v\n", c.ID, c.Phase, c.Instructions, c.Cycles, c.StallCycles,
			c.StallsL3Miss, c.LLCReferences, c.LLCMisses, c.L1References, c.MemBytesTotal, c.MemBytesLocal, c.Occupancy)
	}
	return b.String()
}

func runPool(t testing.TB, seed uint64, noise float64) []byte {
	m := icx(t, Options{Seed: seed, Noise: noise})
	pool32(t, m)
	var out bytes.Buffer
	for i := 0; i < 200; i++ {
		if i == 100 { // repartition half way: the batch loses a way to priority CLOS 2
			must(t, m.SetCLOS(2, []uint64{0x0f0, 0x0f0}, []int{80, 80}))
			must(t, m.SetCLOS(3, []uint64{0xf00, 0xf00}, []int{100, 100}))
		}
		out.WriteString(dump(m.Step(100 * time.Millisecond)))
	}
	return out.Bytes()
}

func TestDeterministicBySeed(t *testing.T) {
	a, b := runPool(t, 7, 0.02), runPool(t, 7, 0.02)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different counters")
	}
	if c := runPool(t, 8, 0.02); bytes.Equal(a, c) {
		t.Fatal("different seeds gave identical noisy counters")
	}
	if x, y := runPool(t, 1, 0), runPool(t, 2, 0); !bytes.Equal(x, y) {
		t.Fatal("without noise the seed must not matter")
	}
}

// Overlapping masks conserve capacity: the split hands out exactly the ways covered by
// some mask, and no way ever holds more than its capacity.
func TestSharingConservesCapacity(t *testing.T) {
	m := icx(t, Options{})
	pool32(t, m)
	for i := 0; i < 50; i++ {
		m.Step(100 * time.Millisecond)
		for d := 0; d < m.D; d++ {
			var union uint64
			sum := 0.0
			for _, w := range m.domWls[d] {
				union |= m.clos[w.clos].masks[d]
				sum += w.s
			}
			if want := float64(bits.OnesCount64(union)); math.Abs(sum-want) > 1e-9 {
				t.Fatalf("tick %d domain %d: shares sum to %v, covered ways %v", i, d, sum, want)
			}
			for j := 0; j < m.W; j++ {
				occ := m.orphan[d*m.W+j]
				for _, w := range m.wls {
					if w.occ[d*m.W+j] < -1e-6 {
						t.Fatalf("negative occupancy")
					}
					occ += w.occ[d*m.W+j]
				}
				if occ > m.wayBytes*(1+1e-9) {
					t.Fatalf("tick %d domain %d way %d holds %.0f bytes > %.0f", i, d, j, occ, m.wayBytes)
				}
			}
		}
	}
}

// With identical masks the split is PBBCache's Whirlpool split (perfmodel.Shares), and
// in a partial overlap the exclusive ways go to their owner whole.
func TestSplitMatchesWhirlpool(t *testing.T) {
	set, err := profile.Default()
	must(t, err)
	p := machinetest.Get(t, "skx-6138")
	m, err := New(p, Options{})
	must(t, err)
	names := []string{"lbm06", "soplex06", "milc06"}
	var curves [][]float64
	for i, n := range names {
		tb, err := set.Get(n)
		must(t, err)
		curves = append(curves, tb.Col(profile.LLCMPKC))
		add(t, m, Single(FromTable(tb), 1), i)
	}
	must(t, m.SetCLOS(0, []uint64{0x7c}, nil)) // 5 shared ways
	m.Step(time.Millisecond)
	want := perfmodel.Shares(make([]float64, 3), curves, 5)
	for i, w := range m.wls {
		if math.Abs(w.s-want[i]) > 1e-12 {
			t.Errorf("%s: share %.9f, perfmodel.Shares %.9f", names[i], w.s, want[i])
		}
	}
	// 0x03f and 0x3f0 (seed000.md §7.3's 4 exclusive + 2 shared): each owns its 4 ways.
	must(t, m.SetCLOS(1, []uint64{0x03f}, nil))
	must(t, m.SetCLOS(2, []uint64{0x3f0}, nil))
	must(t, m.Assign(0, 1))
	must(t, m.Assign(1, 2))
	must(t, m.RemoveWorkload(2))
	m.Step(time.Millisecond)
	a, b := m.wls[0], m.wls[1]
	for j := 0; j < 4; j++ {
		if a.share[j] != 1 || b.share[j+6] != 1 {
			t.Fatalf("exclusive ways not owned whole: %v %v", a.share, b.share)
		}
	}
	if math.Abs(a.s+b.s-10) > 1e-12 || a.share[4]+b.share[4] != 1 {
		t.Fatalf("shares %v + %v must cover 10 ways", a.s, b.s)
	}
}

// A measured table workload alone in k ways reproduces its table row (MODEL.md §2: "an
// application alone in a cluster of k ways uses the table row k directly").
func TestTableWorkloadAloneReproducesRow(t *testing.T) {
	set, err := profile.Default()
	must(t, err)
	p := machinetest.Get(t, "skx-6138")
	for _, name := range []string{"lbm06", "sphinx306", "gcc06", "omnetpp06"} {
		tb, err := set.Get(name)
		must(t, err)
		for _, k := range []int{1, 2, 5, 11} {
			m, err := New(p, Options{})
			must(t, err)
			must(t, m.SetCLOS(1, []uint64{1<<uint(k) - 1}, nil))
			id := add(t, m, Single(FromTable(tb), 1), 0)
			must(t, m.Assign(id, 1))
			for i := 0; i < 10; i++ {
				m.Step(100 * time.Millisecond)
			}
			c := m.Step(10 * time.Second)[0]
			ipc := metric.IPC(float64(c.Instructions), float64(c.Cycles))
			mpki := 1000 * float64(c.LLCMisses) / float64(c.Instructions)
			l2mpki := 1000 * float64(c.L2Misses) / float64(c.Instructions)
			mbps := float64(c.MemBytesTotal) / 1e6 / 10
			stalls := float64(c.StallCycles) / float64(c.Cycles)
			l3 := float64(c.StallsL3Miss) / float64(c.Cycles)
			for _, chk := range []struct {
				what      string
				got, want float64
			}{
				{"ipc", ipc, tb.Value(profile.IPC, k)},
				{"llcmpki", mpki, tb.Value(profile.LLCMPKI, k)},
				{"l2 misses pki (llcrpki)", l2mpki, tb.Value(profile.LLCRPKI, k)},
				{"bandwidth_mbps", mbps, tb.Value(profile.BandwidthMBps, k)},
				{"stalls_total", stalls, tb.Value(profile.StallsTotal, k)},
				{"stalls_l3_miss", l3, tb.Value(profile.StallsL3Miss, k)},
			} {
				if math.Abs(chk.got-chk.want) > 1e-4*math.Max(1, chk.want) {
					t.Errorf("%s alone in %d ways: %s %.6f, table %.6f", name, k, chk.what, chk.got, chk.want)
				}
			}
		}
	}
}

// A phased workload switches model at its phase boundaries, loops, and its dCat phase
// signature l1_ref/ret_ins changes by more than 10 % between phases and not within one.
func TestPhases(t *testing.T) {
	m := icx(t, Options{})
	w := SevenZip(9, 1)
	if len(w.Phases) != 2 || !w.Loop {
		t.Fatalf("7-Zip -mx=9 should have two looping phases")
	}
	add(t, m, w, 0)
	period := w.Phases[0].Duration + w.Phases[1].Duration
	step := time.Second
	var phases []int
	var sig []float64
	for i := 0; i < int(2*period/step); i++ {
		c := m.Step(step)[0]
		phases = append(phases, c.Phase)
		sig = append(sig, float64(c.L1References)/float64(c.Instructions))
	}
	n0 := int(w.Phases[0].Duration / step)
	n := int(period / step)
	for i, ph := range phases {
		want := 0
		if i%n >= n0 {
			want = 1
		}
		if ph != want {
			t.Fatalf("tick %d: phase %d, want %d", i, ph, want)
		}
		if i > 0 {
			change := math.Abs(sig[i]-sig[i-1]) / sig[i-1]
			if boundary := phases[i] != phases[i-1]; boundary != (change > 0.1) {
				t.Fatalf("tick %d: signature change %.3f, phase boundary %v", i, change, boundary)
			}
		}
	}
	// A single phase with a duration and no loop stays in its last phase.
	m2 := icx(t, Options{})
	add(t, m2, Workload{Name: "x", Phases: []Phase{{Model: CPULoop().Phases[0].Model, Duration: time.Second}}}, 0)
	for i := 0; i < 5; i++ {
		if c := m2.Step(time.Second)[0]; c.Phase != 0 {
			t.Fatal("a non-looping workload left its last phase")
		}
	}
}

// Occupancy evolves: a partition fills at the miss rate, and when it shrinks the lines
// outside the new mask stay until a neighbour inserting there evicts them — gradually, at
// the neighbour's insertion rate — so moving ways has a cost.
func TestOccupancyDecayAndMoveCost(t *testing.T) {
	m := icx(t, Options{})
	a := add(t, m, Neighbor(8<<20, Page1G), 0)
	must(t, m.SetCLOS(1, []uint64{0x0ff, 0xfff}, nil))
	must(t, m.Assign(a, 1))
	for i := 0; i < 20; i++ {
		m.Step(100 * time.Millisecond)
	}
	full, _ := m.Occupancy(a, 0)
	if math.Abs(full-8<<20) > 0.01*(8<<20) {
		t.Fatalf("8 MB buffer in 8 ways holds %.2f MB", full/(1<<20))
	}
	// Shrink to 2 ways with nobody else: the old lines stay valid and still hit.
	must(t, m.SetCLOS(1, []uint64{0x003, 0xfff}, nil))
	m.Step(100 * time.Millisecond)
	if o, _ := m.Occupancy(a, 0); o < 0.99*full {
		t.Fatalf("without a neighbour inserting, lines must stay: %.2f MB of %.2f", o/(1<<20), full/(1<<20))
	}
	// A streaming neighbour in the freed ways evicts them over time.
	b := add(t, m, MLOAD(60<<20), 1)
	must(t, m.SetCLOS(2, []uint64{0xffc, 0xfff}, nil))
	must(t, m.Assign(b, 2))
	// Lines in the ways A left (2..7) decay monotonically; A refills its 2 ways meanwhile.
	outside := func() float64 {
		s := 0.0
		for j := 2; j < 8; j++ {
			s += m.wls[0].occ[j]
		}
		return s / (1 << 20)
	}
	prev := outside()
	var trace []float64
	for i := 0; i < 40; i++ {
		m.Step(time.Millisecond)
		o := outside()
		trace = append(trace, o)
		if o > prev+1e-9 {
			t.Fatalf("lines outside the mask grew while being evicted: %v", trace)
		}
		prev = o
	}
	total, _ := m.Occupancy(a, 0)
	if trace[0] < 0.5*6 || trace[len(trace)-1] > 0.01 || total > 4.01*(1<<20) {
		t.Fatalf("decay must be gradual (%.2f of 6 MB left after 1 ms), complete (%.3f MB left) and end at the 2 ways' 4 MB (%.2f MB): %v",
			trace[0], trace[len(trace)-1], total/(1<<20), trace)
	}

	// Moving a fitting workload's mask onto ways a streamer just filled costs it a refill.
	m = icx(t, Options{})
	a = add(t, m, Neighbor(6<<20, Page1G), 0)
	b = add(t, m, MLOAD(60<<20), 1)
	must(t, m.SetCLOS(1, []uint64{0x00f, 0xfff}, nil))
	must(t, m.SetCLOS(2, []uint64{0xff0, 0xfff}, nil))
	must(t, m.Assign(a, 1))
	must(t, m.Assign(b, 2))
	ipcOf := func(c Counters) float64 { return metric.IPC(float64(c.Instructions), float64(c.Cycles)) }
	var before float64
	for i := 0; i < 20; i++ {
		before = ipcOf(m.Step(10 * time.Millisecond)[0])
	}
	must(t, m.SetCLOS(1, []uint64{0x0f0, 0xfff}, nil))
	must(t, m.SetCLOS(2, []uint64{0x00f, 0xfff}, nil))
	var after []float64
	for i := 0; i < 20; i++ {
		after = append(after, ipcOf(m.Step(10 * time.Millisecond)[0]))
	}
	// Performance in a step is that of the occupancy at its start, so the dip shows in the
	// first steps after the move (the old lines are evicted during the first).
	if dip := min(after[0], after[1], after[2]); dip > 0.9*before || math.Abs(after[len(after)-1]-before) > 0.01*before {
		t.Fatalf("move cost: IPC %.3f before, %.3f right after (want a dip), %.3f at the end (want recovered): %v", before, dip, after[len(after)-1], after)
	}
}

// Bandwidth contention: streaming neighbours on the same memory controller slow a
// bandwidth-bound workload under the stalls model, not under none; the other socket is
// unaffected; memory of a workload moved to the other socket becomes remote.
func TestBandwidthContentionAndRemoteMemory(t *testing.T) {
	ipcWith := func(model perfmodel.BWModel, streamers int, socket int) float64 {
		m := icx(t, Options{BWModel: model, MemBWPerSocketMBps: 40000})
		// the matrix in its own ways, so that only the bus is shared
		must(t, m.SetCLOS(1, []uint64{0x0ff, 0x0ff}, nil))
		must(t, m.SetCLOS(0, []uint64{0xf00, 0xf00}, nil))
		must(t, m.Assign(add(t, m, StressMatrix3D(256), 0), 1))
		for i := 0; i < streamers; i++ {
			add(t, m, MLOAD(60<<20), socket*16+1+i)
		}
		var c Counters
		for i := 0; i < 5; i++ {
			c = m.Step(100 * time.Millisecond)[0]
		}
		return metric.IPC(float64(c.Instructions), float64(c.Cycles))
	}
	alone := ipcWith(perfmodel.Stalls, 0, 0)
	crowded := ipcWith(perfmodel.Stalls, 12, 0)
	other := ipcWith(perfmodel.Stalls, 12, 1)
	none := ipcWith(perfmodel.None, 12, 0)
	simple := ipcWith(perfmodel.Simple, 12, 0)
	t.Logf("matrix-3d 256 IPC alone %.3f, 12 streamers same socket %.3f (simple %.3f), other socket %.3f, no model %.3f", alone, crowded, simple, other, none)
	if crowded > 0.95*alone || simple >= alone {
		t.Errorf("streamers on the same socket must slow it: %.3f (simple %.3f) vs %.3f", crowded, simple, alone)
	}
	if math.Abs(other-alone) > 1e-9 || math.Abs(none-alone) > 1e-9 {
		t.Errorf("other socket (%.3f) and no model (%.3f) must equal alone (%.3f)", other, none, alone)
	}

	m := icx(t, Options{})
	id := add(t, m, MLOAD(60<<20), 0)
	c := m.Step(100 * time.Millisecond)[0]
	if c.MemBytesLocal != c.MemBytesTotal || c.MemBytesTotal == 0 {
		t.Fatalf("local memory: local %d total %d", c.MemBytesLocal, c.MemBytesTotal)
	}
	must(t, m.Move(id, []int{20}))
	c = m.Step(100 * time.Millisecond)[0]
	if c.MemBytesLocal != 0 || c.MemBytesTotal == 0 || c.Domain != 1 {
		t.Fatalf("after moving to socket 1: local %d total %d domain %d", c.MemBytesLocal, c.MemBytesTotal, c.Domain)
	}
}

func TestBadInput(t *testing.T) {
	m := icx(t, Options{})
	for _, tc := range []struct {
		masks []uint64
		mba   []int
		want  string
	}{
		{[]uint64{0x1fff, 0xfff}, nil, "wider than the 12-way cache"},
		{[]uint64{0x0f0f, 0xfff}, nil, "not contiguous"},
		{[]uint64{0, 0xfff}, nil, "min_cbm_bits"},
		{[]uint64{0xfff}, nil, "2 LLC domains"},
		{[]uint64{0xfff, 0xfff}, []int{5, 100}, "MBA 5 outside 10..100"},
	} {
		err := m.SetCLOS(1, tc.masks, tc.mba)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetCLOS(%#x, %v): error %v, want %q", tc.masks, tc.mba, err, tc.want)
		}
	}
	if masks, _ := m.CLOS(1); masks[0] != 0xfff {
		t.Error("a rejected SetCLOS changed the class")
	}
	if err := m.SetCLOS(16, []uint64{1, 1}, nil); err == nil {
		t.Error("CLOS 16 of 16 accepted")
	}
	add(t, m, CPULoop(), 3)
	if _, err := m.AddWorkload(CPULoop(), []int{3}); err == nil || !strings.Contains(err.Error(), "already runs") {
		t.Errorf("core reuse: %v", err)
	}
	if _, err := m.AddWorkload(CPULoop(), []int{15, 16}); err == nil || !strings.Contains(err.Error(), "span LLC domains") {
		t.Errorf("cross-domain cores: %v", err)
	}
	if _, err := m.AddWorkload(Single(&Analytic{Label: "bad", WorkingSetBytes: 1 << 20, PageBytes: 12345, BaseCPI: 1, MLP: 1}, 1), []int{4}); err == nil || !strings.Contains(err.Error(), "page size") {
		t.Errorf("bad page size: %v", err)
	}
	// AMD accepts sparse and empty masks.
	p := machinetest.Get(t, "epyc-7543")
	a, err := New(p, Options{})
	must(t, err)
	masks := make([]uint64, p.LLCDomains())
	masks[0], masks[1] = 0xf0f0, 0
	for d := 2; d < len(masks); d++ {
		masks[d] = 0xffff
	}
	if err := a.SetCLOS(1, masks, nil); err != nil {
		t.Errorf("AMD sparse/empty masks: %v", err)
	}
}

func TestUsableBytesProperties(t *testing.T) {
	const way = 2 << 20
	for _, ws := range []int64{1 << 20, 6 << 20, 40 << 20} {
		prev := 0.0
		for k := 1; k <= 12; k++ {
			u4, u1 := UsableBytes(ws, Page4K, k, way), UsableBytes(ws, Page1G, k, way)
			if u4 > u1+1e-6 || u1 > float64(min(ws, int64(k)*way)) || u4 < prev {
				t.Fatalf("ws %d k %d: 4K %.0f, 1G %.0f, previous %.0f", ws, k, u4, u1, prev)
			}
			prev = u4
		}
	}
	// seed003.md §3.2: a working set inside one 2 MB huge page has no conflict misses.
	if u := UsableBytes(2<<20, Page2M, 1, way); u != 2<<20 {
		t.Fatalf("one 2 MB page in one 2 MB way: %v", u)
	}
}

// Under the simple model an oversubscribed socket serves exactly its bandwidth limit
// (MODEL.md §4.1: the reduced bandwidths sum to B), and heavier users lose more.
func TestSimpleModelServesTheLimit(t *testing.T) {
	const limit = 40000.0
	m := icx(t, Options{BWModel: perfmodel.Simple, MemBWPerSocketMBps: limit})
	for c := 0; c < 12; c++ {
		add(t, m, MLOAD(60<<20), c)
	}
	add(t, m, StressTsearch(1<<20), 12)
	m.Step(100 * time.Millisecond)
	const dt = 1.0
	cs := m.Step(time.Second)
	total := 0.0
	for _, c := range cs {
		total += float64(c.MemBytesTotal) / 1e6 / dt
	}
	if math.Abs(total-limit) > 1e-3*limit {
		t.Fatalf("oversubscribed socket serves %.0f MB/s, limit %.0f", total, limit)
	}
	if cs[12].Socket != 0 || m.wls[12].busF >= m.wls[0].busF {
		t.Fatalf("the light tsearch (factor %.3f) must lose less than the streams (%.3f)", m.wls[12].busF, m.wls[0].busF)
	}
}

// The L2-miss counter (VP's MF denominator): an analytic model reports its APKI as L2 misses
// per kilo-instruction at every allocation, whatever its hit ratio (MLR's pointer chase hits
// in 12 ways and misses in 1; MLOAD streams at any size); with noise the counter shares the
// LLC references' draw (they are the same requests) and every LLC miss was an L2 miss.
func TestL2MissCounter(t *testing.T) {
	wls := []Workload{MLR(8 << 20), MLOAD(60 << 20)}
	for _, k := range []int{1, 4, 12} {
		m := icx(t, Options{})
		must(t, m.SetCLOS(1, []uint64{1<<uint(k) - 1, 1<<uint(k) - 1}, nil))
		must(t, m.Assign(add(t, m, wls[0], 0), 1))
		must(t, m.Assign(add(t, m, wls[1], 1), 1))
		for i := 0; i < 20; i++ {
			m.Step(100 * time.Millisecond)
		}
		for i, c := range m.Step(time.Second) {
			l2 := 1000 * float64(c.L2Misses) / float64(c.Instructions)
			want := wls[i].Phases[0].Model.(*Analytic).APKI
			if math.Abs(l2-want) > 1e-3*want || c.LLCMisses > c.L2Misses || c.L2Misses != c.LLCReferences {
				t.Errorf("%d ways, %s: L2 MPKI %.4f, want APKI %.4f; misses %d, L2 misses %d, refs %d",
					k, wls[i].Name, l2, want, c.LLCMisses, c.L2Misses, c.LLCReferences)
			}
		}
	}
	m := icx(t, Options{Seed: 3, Noise: 0.05})
	pool32(t, m)
	for i := 0; i < 50; i++ {
		for _, c := range m.Step(100 * time.Millisecond) {
			// counts are integers rounded on the cumulative sums: a delta may differ by one
			if c.LLCMisses > c.L2Misses+1 || c.L2Misses != c.LLCReferences {
				t.Fatalf("noisy step %d: %d LLC misses, %d L2 misses, %d references", i, c.LLCMisses, c.L2Misses, c.LLCReferences)
			}
		}
	}
}

// CPU quota: a CPU-bound workload at quota q runs q of the cycles and instructions per second
// at the same IPC; a memory hog's quota shrinks its traffic and so the bus contention it
// causes to a bandwidth-sensitive neighbour.
func TestCPUQuota(t *testing.T) {
	m := icx(t, Options{})
	id := add(t, m, CPULoop(), 0)
	m.Step(time.Second) // its lines fill
	full := m.Step(time.Second)[0]
	must(t, m.SetQuota(id, 0.6))
	if q, _ := m.Quota(id); q != 0.6 {
		t.Fatalf("quota %v, want 0.6", q)
	}
	part := m.Step(time.Second)[0]
	ipc := func(c Counters) float64 { return metric.IPC(float64(c.Instructions), float64(c.Cycles)) }
	if r := float64(part.Cycles) / float64(full.Cycles); math.Abs(r-0.6) > 1e-6 {
		t.Errorf("cycles at quota 0.6: %.4f of full", r)
	}
	if math.Abs(ipc(part)-ipc(full)) > 1e-6 {
		t.Errorf("IPC changed with the quota: %.4f vs %.4f", ipc(part), ipc(full))
	}
	for _, q := range []float64{0, -0.5, 1.5, math.NaN()} {
		if err := m.SetQuota(id, q); err == nil {
			t.Errorf("quota %v accepted", q)
		}
	}
	if err := m.SetQuota(99, 0.5); err == nil {
		t.Error("quota of an unknown workload accepted")
	}

	victimIPC := func(q float64) (float64, float64) {
		m := icx(t, Options{MemBWPerSocketMBps: 40000})
		must(t, m.SetCLOS(1, []uint64{0x0ff, 0x0ff}, nil))
		must(t, m.SetCLOS(0, []uint64{0xf00, 0xf00}, nil))
		must(t, m.Assign(add(t, m, StressMatrix3D(256), 0), 1))
		for i := 1; i <= 12; i++ {
			must(t, m.SetQuota(add(t, m, MLOAD(60<<20), i), q))
		}
		var cs []Counters
		for i := 0; i < 5; i++ {
			cs = m.Step(100 * time.Millisecond)
		}
		bw := 0.0
		for _, c := range cs[1:] {
			bw += float64(c.MemBytesTotal) / 0.1 / 1e6
		}
		return ipc(cs[0]), bw
	}
	v1, bw1 := victimIPC(1)
	v5, bw5 := victimIPC(0.5)
	// the bus is saturated at quota 1, so halving the demand cuts the traffic by less than half
	t.Logf("matrix-3d next to 12 MLOAD streams: IPC %.3f at quota 1 (%.0f MB/s), %.3f at quota 0.5 (%.0f MB/s)", v1, bw1, v5, bw5)
	if !(bw5 < 0.9*bw1 && v5 > v1*1.02) {
		t.Errorf("halving the hogs' quota should cut their traffic and relieve the victim: %.0f → %.0f MB/s, IPC %.3f → %.3f", bw1, bw5, v1, v5)
	}
}
