package stress

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"colo/internal/testenv"
)

func TestLFSRIsTheBubbleUpGaloisLFSR(t *testing.T) {
	// 0xACE1 has its low bit set: (0xACE1 >> 1) ^ 0xd0000001 = 0x5670 ^ 0xd0000001.
	if got := lfsrNext(0xACE1); got != 0xD0005671 {
		t.Fatalf("lfsrNext(0xACE1) = %#x, want 0xD0005671", got)
	}
	// Low bit clear: a plain shift.
	if got := lfsrNext(0x5670); got != 0x2B38 {
		t.Fatalf("lfsrNext(0x5670) = %#x, want 0x2B38", got)
	}
	// Maximal-length LFSRs never reach 0 and do not repeat early.
	l, seen := uint32(lfsrSeed), map[uint32]bool{}
	for i := 0; i < 100000; i++ {
		l = lfsrNext(l)
		if l == 0 || seen[l] {
			t.Fatalf("LFSR degenerate after %d steps", i)
		}
		seen[l] = true
	}
}

func TestRandomAccessStaysInBoundsAndCoversTheWorkingSet(t *testing.T) {
	// A guard element after the slice's end must never change (the original SoI ran 320 KB
	// past its buffer, seed002.md §1.3).
	for _, n := range []int{1, 7, 1000, 4096} {
		backing := make([]uint32, n+1)
		backing[n] = 0xDEAD
		data := backing[:n:n]
		var dump [10]uint32
		accesses := 30 * n
		randomAccess(data, &dump, lfsrSeed, accesses)
		if backing[n] != 0xDEAD {
			t.Fatalf("n=%d: wrote past the slice", n)
		}
		var sum, touched int
		for _, v := range data {
			sum += int(v)
			if v > 0 {
				touched++
			}
		}
		if sum != accesses {
			t.Fatalf("n=%d: %d increments, want %d", n, sum, accesses)
		}
		if float64(touched) < 0.99*float64(n) {
			t.Fatalf("n=%d: only %d elements touched; the dial would overstate the working set", n, touched)
		}
	}
}

func TestLBMOffsetsStayInsideTheMargins(t *testing.T) {
	lo, hi := 0, 0
	for k, o := range lbmOffsets {
		lo, hi = min(lo, o), max(hi, o)
		if ((o-k)%20+20)%20 != 0 {
			t.Fatalf("offset %d for k=%d is not k plus whole cells", o, k)
		}
	}
	if lo < -lbmMargin || hi+20 > lbmMargin {
		t.Fatalf("offsets [%d,%d] exceed margin %d", lo, hi, lbmMargin)
	}
	if lo > -200000 || hi < 200000 {
		t.Fatalf("the lattice should reach about ±200 000 elements (seed002.md §1.3), got [%d,%d]", lo, hi)
	}
	// A full sweep on the smallest grid runs without an index panic.
	w, _, err := newHybrid(int64(2*(2*lbmMargin+40)) * 8)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		w.step()
	}
}

func TestTouchedBytesMatchTheDial(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
	}{
		{Config{Kind: KindSoI, MB: 4, StreamThreads: 3, RandomThreads: 2}},
		{Config{Kind: KindSoI, MB: 112}},
		{Config{Kind: KindSoI, MB: 48, StreamThreads: 1, RandomThreads: 1}},
		{Config{Kind: KindStream, MB: 8, Workers: 3}},
		{Config{Kind: KindRandom, MB: 8, Workers: 2}},
		{Config{Kind: KindHybrid, MB: 16}},
		{Config{Kind: KindLLC, MB: 2, Workers: 2}},
		{Config{Kind: KindMemRead, MB: 3}},
		{Config{Kind: KindMemWrite, MB: 3}},
		{Config{Kind: KindPrefetch, MB: 3}},
	} {
		l, err := New(tc.cfg)
		if err != nil {
			t.Fatalf("%+v: %v", tc.cfg, err)
		}
		want := int64(tc.cfg.MB * MB)
		// Rounding to whole elements (≤ 24 B, or a 64 B line, or a 20-double lbm cell per worker).
		slack := int64(160 * l.Workers())
		if l.Touched > want || want-l.Touched > slack {
			t.Errorf("%s %g MB: touches %d bytes, want %d (−%d at most)", tc.cfg.Kind, tc.cfg.MB, l.Touched, want, slack)
		}
	}
	// The SoI splits its dial half streaming, half random, and 3+2 threads by default.
	l, _ := New(Config{Kind: KindSoI, MB: 40})
	if l.Workers() != 5 {
		t.Fatalf("default SoI has %d threads, want 3+2", l.Workers())
	}
	var streamB, randB int64
	for _, w := range l.workers {
		switch x := w.(stepCount).w.(type) {
		case *streamWorker:
			streamB += int64(len(x.a)+len(x.b)) * 8
		case *randomWorker:
			randB += int64(len(x.data)) * 4
		}
	}
	if math.Abs(float64(streamB-20*MB)) > 64 || math.Abs(float64(randB-20*MB)) > 64 {
		t.Fatalf("SoI split stream %d / random %d bytes, want 20 MB each", streamB, randB)
	}
	// Dial 0 is the isolated point: no threads at all.
	if l, _ := New(Config{Kind: KindSoI}); l.Workers() != 0 || l.Touched != 0 {
		t.Fatalf("SoI at 0 MB has %d threads", l.Workers())
	}
}

func TestBadConfigs(t *testing.T) {
	for _, c := range []Config{
		{Kind: "bubble"},
		{Kind: KindRandom, MB: -1},
		{Kind: KindCompute, MB: 5},
		{Kind: KindHybrid, MB: 1},
		{Kind: KindLLC},              // no --mb and no detected LLC
		{Kind: KindStream, MB: 1e-6}, // less than one element
		{Kind: KindRandom, Workers: -2},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
	if _, err := New(Config{Kind: "bubble"}); err == nil || !strings.Contains(err.Error(), "soi") {
		t.Errorf("unknown kind error should list the kinds: %v", err)
	}
}

func TestRunEveryKindDoesWorkAndStops(t *testing.T) {
	for _, k := range Kinds() {
		cfg := Config{Kind: k}
		switch k {
		case KindSoI:
			cfg.MB, cfg.StreamThreads, cfg.RandomThreads = 2, 1, 1
		case KindLLC, KindMemRead, KindMemWrite, KindPrefetch, KindStream, KindRandom:
			cfg.MB = 2
		case KindHybrid:
			cfg.MB = 8
		}
		l, err := New(cfg)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		// runs until a periodic report shows work (an event, however loaded the host)
		ctx, cancel := context.WithCancel(context.Background())
		var lines []Report
		r := Run(ctx, l, 5*time.Millisecond, time.Now, func(r Report) {
			lines = append(lines, r)
			if r.Work > 0 {
				cancel()
			}
		})
		cancel()
		if !r.Final || r.Work <= 0 || r.Rate <= 0 || r.Kind != k || r.Unit != l.Unit {
			t.Errorf("%s: final report %+v", k, r)
		}
		for _, p := range lines {
			if p.Final || p.Work > r.Work {
				t.Errorf("%s: periodic report %+v after final %+v", k, p, r)
			}
		}
	}
	// The SoI at dial 0 idles and still reports.
	l, _ := New(Config{Kind: KindSoI})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := Run(ctx, l, 0, time.Now, nil); !r.Final || r.Work != 0 {
		t.Fatalf("idle SoI: %+v", r)
	}
}

func TestReporterScoreIsTheMeanOfTheMedians(t *testing.T) {
	// reporter_sensitivity.csv, 0 MB row: avg 6607014.5 = (rand 6565760 + stream 6648269)/2.
	if got := ReporterScore([]float64{6565760.0, 6648269.0}); got != 6607014.5 {
		t.Fatalf("score %v, want 6607014.5", got)
	}
}

// stepClock advances by d on every call: each timed iteration then lasts exactly d.
func stepClock(d time.Duration) func() time.Time {
	t := time.Unix(0, 0)
	return func() time.Time { t = t.Add(d); return t }
}

func TestMeasureReporterAllTypes(t *testing.T) {
	for _, typ := range ReporterTypes {
		mb := 1.0
		if typ == ReporterHybrid {
			mb = 8
		}
		res, err := MeasureReporter(context.Background(), ReporterConfig{Type: typ, MB: mb, Reps: 5, Warmup: 1}, stepClock(time.Millisecond))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		wantFns := 1
		if typ == ReporterAlternating {
			wantFns = 2
		}
		if len(res.Medians) != wantFns || res.Score != 1e6 || res.MB > mb || res.MB < mb*0.99 {
			t.Fatalf("%s: %+v", typ, res)
		}
	}
	if _, err := MeasureReporter(context.Background(), ReporterConfig{Type: "type5"}, time.Now); err == nil {
		t.Fatal("unknown reporter type accepted")
	}
	// Real timing: only positivity can be asserted.
	res, err := MeasureReporter(context.Background(), ReporterConfig{Type: ReporterAlternating, MB: 2, Reps: 3}, time.Now)
	if err != nil || res.Score <= 0 || res.Medians["stream"] <= 0 || res.Medians["random"] <= 0 {
		t.Fatalf("real reporter: %+v %v", res, err)
	}
}

func TestStressNGThesisCommands(t *testing.T) {
	want := map[string]string{
		KindLLC:      "--cache 0 --cache-level 3",
		KindMemRead:  "--memrate 0 --memrate-rd-mbs 1000000 --memrate-wr-mbs 0 --memrate-bytes 500M",
		KindMemWrite: "--memrate 0 --memrate-wr-mbs 1000000 --memrate-rd-mbs 0 --memrate-method write64nt",
		KindSyscall:  "--futex 0",
		KindPrefetch: "--stream 0 --stream-madvise hugepage --stream-index 0",
	}
	for k, w := range want {
		a, err := StressNGArgs(k, 0, 0)
		if err != nil || strings.Join(a, " ") != w {
			t.Errorf("%s: %q, want %q", k, strings.Join(a, " "), w)
		}
	}
	a, _ := StressNGArgs(KindLLC, 1, 12*time.Second)
	if strings.Join(a, " ") != "--cache 1 --cache-level 3 --timeout 12s" {
		t.Errorf("with workers and timeout: %q", a)
	}
	if _, err := StressNGArgs(KindCompute, 0, 0); err == nil {
		t.Error("compute has no thesis stress-ng command")
	}
	// thesisStressNG must not be mutated by StressNGArgs.
	if thesisStressNG[KindLLC][1] != "0" {
		t.Fatal("StressNGArgs mutated the thesis table")
	}
}

func TestParseStressNGYAML(t *testing.T) {
	y := []byte("---\nsystem-info:\n  cpus: 2\nmetrics:\n    - stressor: cache\n      bogo-ops: 1379579\n      bogo-ops-per-second-real-time: 689675.220187\n      wall-clock-time: 2.000331\n...\n")
	r, err := parseStressNGYAML(KindLLC, y)
	if err != nil || r.Work != 1379579 || r.Rate != 689675.220187 || r.Elapsed != 2.000331 {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := parseStressNGYAML(KindLLC, []byte("metrics: []\n")); err == nil {
		t.Fatal("empty metrics accepted")
	}
}

func TestRunStressNGWhenInstalled(t *testing.T) {
	if _, ok := StressNGAvailable(); !ok {
		testenv.Need(t, "stress-ng (apt-get install stress-ng; scripts/setup.sh installs it)", errors.New("not on PATH"))
	}
	r, err := RunStressNG(context.Background(), KindSyscall, 1, time.Second, nil, nil)
	if err != nil || r.Work <= 0 || r.Unit != "bogo-ops" || r.Workers != 1 {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestDetectLLC(t *testing.T) {
	dir := t.TempDir()
	for i, s := range []string{"48K", "2048K", "32768K", "64K"} {
		d := filepath.Join(dir, "index"+string(rune('0'+i)))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "size"), []byte(s+"\n"), 0o644)
	}
	if got := detectLLCBytes(dir); got != 32<<20 {
		t.Fatalf("LLC %d, want 32 MiB", got)
	}
	if got := detectLLCBytes(filepath.Join(dir, "none")); got != 0 {
		t.Fatalf("missing sysfs: %d", got)
	}
	if !slices.Contains(ThesisStressors, KindPrefetch) || len(ThesisStressors) != 5 {
		t.Fatal("five thesis stressors")
	}
}

func TestPinnedLoadRuns(t *testing.T) {
	l, err := New(Config{Kind: KindCompute, CPUs: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	until := func(r Report) { // runs until a periodic report shows work
		if r.Work > 0 {
			cancel()
		}
	}
	if r := Run(ctx, l, time.Millisecond, time.Now, until); r.Work <= 0 {
		t.Fatalf("pinned load did no work: %+v", r)
	}
	if _, err := New(Config{Kind: KindCompute, CPUs: []int{-1}}); err == nil {
		t.Fatal("CPU -1 accepted")
	}
	if err := OnThread([]int{5000}, func() error { return nil }); err == nil {
		t.Fatal("CPU 5000 accepted")
	}
}

// Work (what --metrics serves) follows the running load and ends equal to its final report.
func TestWorkIsLiveAndMatchesTheFinalReport(t *testing.T) {
	l, err := New(Config{Kind: KindCompute})
	if err != nil {
		t.Fatal(err)
	}
	if l.Work() != 0 {
		t.Fatalf("work %g before Run", l.Work())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Report)
	go func() { done <- Run(ctx, l, 0, time.Now, nil) }()
	for l.Work() == 0 {
		runtime.Gosched()
	}
	cancel()
	r := <-done
	if r.Work != l.Work() || r.Work == 0 {
		t.Errorf("final work %g, Work() %g", r.Work, l.Work())
	}
}
