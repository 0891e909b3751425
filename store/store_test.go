package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sameFloat treats NaN == NaN (unavailable stays unavailable) and otherwise needs equality.
func sameFloat(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}

// eqNaN compares two values field by field with NaN == NaN.
func eqNaN(a, b any) bool {
	return reflect.DeepEqual(nanToSentinel(a), nanToSentinel(b))
}

// nanToSentinel replaces every NaN float inside v (structs, slices, maps) by a sentinel
// so reflect.DeepEqual can compare.
func nanToSentinel(v any) any {
	rv := reflect.ValueOf(v)
	out := reflect.New(rv.Type()).Elem()
	copyNaN(out, rv)
	return out.Interface()
}

const sentinel = -1.2345e308

func copyNaN(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Float64:
		f := src.Float()
		if math.IsNaN(f) {
			f = sentinel
		}
		dst.SetFloat(f)
	case reflect.Struct:
		if src.Type() == reflect.TypeOf(time.Time{}) {
			dst.Set(src)
			return
		}
		for i := 0; i < src.NumField(); i++ {
			copyNaN(dst.Field(i), src.Field(i))
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
		for i := 0; i < src.Len(); i++ {
			copyNaN(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeMap(src.Type()))
		for _, k := range src.MapKeys() {
			e := reflect.New(src.Type().Elem()).Elem()
			copyNaN(e, src.MapIndex(k))
			dst.SetMapIndex(k, e)
		}
	default:
		dst.Set(src)
	}
}

func TestEqNaNCanFail(t *testing.T) {
	a := Sample{IPC: math.NaN()}
	b := Sample{IPC: 0}
	if eqNaN(a, b) {
		t.Fatal("NaN compared equal to 0")
	}
	if !eqNaN(a, Sample{IPC: math.NaN()}) {
		t.Fatal("NaN did not compare equal to NaN")
	}
}

// fixture is a small, plausible two-scheduler run used by several tests.
type fixture struct {
	jobs    []Job
	samples []Sample
	allocs  []Allocation
	events  []Event
	probes  []ProbeSegment
	parts   []PartitionResult
	sum     Summary
}

func makeFixture(seed uint64, nJobs, ticks int) fixture {
	r := rand.New(rand.NewPCG(seed, 7))
	var f fixture
	for j := 0; j < nJobs; j++ {
		job := Job{ID: j, Name: "job-" + string(rune('a'+j%26)), Kind: "single-thread", Model: "7zip-mx2",
			Priority: j%3 == 0, IPCETarget: math.NaN(), Cores: 1 + j%2, CoreList: "0-1", Socket: j % 2,
			Arrival: time.Duration(j) * 5 * time.Second, Start: time.Duration(j)*5*time.Second + 10*time.Millisecond,
			Stop: Unset, State: "running"}
		if job.Priority {
			job.IPCETarget = 0.9
		}
		if j == nJobs-1 {
			job.Start, job.State, job.Reason, job.Socket = Unset, "rejected", "needs 40 cores, the machine has 32", -1
		}
		f.jobs = append(f.jobs, job)
	}
	for k := 1; k <= ticks; k++ {
		for j := 0; j < nJobs-1; j++ {
			cyc := 2.4e8 * (0.9 + 0.2*r.Float64())
			ins := cyc * (0.5 + r.Float64())
			st := cyc * 0.4 * r.Float64()
			s := Sample{Job: j, T: time.Duration(k) * 100 * time.Millisecond, Interval: 100 * time.Millisecond,
				Socket: j % 2, Instructions: ins, Cycles: cyc, StallsTotal: st, StallsL3Miss: st * 0.3,
				LLCRefs: 1e6 * r.Float64(), LLCMisses: 3e5 * r.Float64(), OccupancyBytes: float64(r.IntN(12 << 20)),
				MemBytesLocal: 1e8 * r.Float64(), MemBytesTotal: 1.5e8 * r.Float64(),
				IPC: ins / cyc, IPCE: 1 - st/cyc, Stalled: st / cyc}
			if j == 1 { // a host without PMU: counters unavailable, RDT monitoring present
				s.Instructions, s.Cycles, s.StallsTotal, s.StallsL3Miss = math.NaN(), math.NaN(), math.NaN(), math.NaN()
				s.LLCRefs, s.LLCMisses, s.IPC, s.IPCE, s.Stalled = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
			}
			if j == 2 && k == 1 { // a genuine zero is not "unavailable"
				s.MemBytesLocal, s.MemBytesTotal = 0, 0
			}
			f.samples = append(f.samples, s)
		}
	}
	f.allocs = []Allocation{
		{T: 0, Socket: 0, CLOS: "system/default", Mask: 0x7ff, MBA: 100, Members: []int{}, Source: "sched"},
		{T: 2 * time.Second, Socket: 0, CLOS: "prio-0", Mask: 0x00f, MBA: 30, Members: []int{0}, Source: "sched"},
		{T: 2 * time.Second, Socket: 0, CLOS: "system/default", Mask: 0x7f0, MBA: 70, Members: []int{1, 2, 4}, Source: "sched"},
		{T: 3 * time.Second, Socket: 1, CLOS: "prio-3", Mask: 1 << 63, MBA: math.NaN(), Members: []int{3}, Source: "readback"},
		{T: 9 * time.Second, Socket: 0, CLOS: "prio-0", Mask: 0, MBA: math.NaN(), Members: []int{}, Source: "sched"},
	}
	f.events = []Event{
		{T: 0, Kind: "place", Job: 0, Text: "socket 0 (fewest committed cores)"},
		{T: time.Second, Kind: "rebalance", Job: -1, Text: "moved 2 → socket 1, gain 6"},
		{T: 2 * time.Second, Kind: "reject", Job: nJobs - 1, Text: "never fits"},
	}
	f.probes = []ProbeSegment{
		{Job: 0, Start: time.Second, End: 1500 * time.Millisecond, Kind: "allocation", Socket: 0, Ways: 2, Mask: 0x3, MBA: 20, IPC: 1.1, IPCE: 0.81, Result: "measured"},
		{Job: 0, Start: 1500 * time.Millisecond, End: 2 * time.Second, Kind: "allocation", Socket: 0, Ways: 4, Mask: 0xf, MBA: 30, IPC: 1.3, IPCE: 0.92, Result: "best"},
		{Job: 3, Start: 2 * time.Second, End: 3 * time.Second, Kind: "allocation", Socket: 1, Ways: 11, Mask: 0x7ff, MBA: math.NaN(), IPC: math.NaN(), IPCE: math.NaN(), Result: "failed"},
	}
	f.parts = []PartitionResult{
		{Workload: "W1", Policy: "lfoc+", STP: 4.62, ANTT: 1.31, Unfairness: 1.22, Jain: 0.98, Apps: []PartitionApp{
			{App: "lbm06", Cluster: 0, Ways: 1, Mask: 0x1, IPCAlone: 0.61, IPC: 0.55, Slowdown: 0.61 / 0.55},
			{App: "sphinx306", Cluster: 1, Ways: 5, Mask: 0x3e, IPCAlone: 1.9, IPC: 1.7, Slowdown: 1.9 / 1.7}}},
		{Workload: "W1", Policy: "ucp", STP: 4.5, ANTT: 1.4, Unfairness: 1.5, Jain: math.NaN(), Apps: []PartitionApp{}},
	}
	f.sum = Summary{Name: "dynamic", PriorityIPCE: 71.3, BatchIPCE: 60.2, GlobalIPCE: 64.0, TimeOverTarget: 0.82,
		TimeOverTargetP90: math.NaN(), JobsCompleted: nJobs - 1, JobsRejected: 1, QueueDelayMean: 0.4, QueueDelayP90: 1.2,
		VirtualSeconds: 3600, WallSeconds: 2.5, Extra: map[string]float64{"probes": 3, "missing": math.NaN()},
		Notes: []string{"IPC/IPCE unavailable on this platform (no PMU)", "second note, with \"quotes\""}}
	return f
}

func writeFixture(t testing.TB, w *RunWriter, f fixture) {
	t.Helper()
	for _, j := range f.jobs {
		if err := w.Job(j); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Samples(f.samples); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.allocs {
		if err := w.Allocation(a); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range f.events {
		if err := w.Event(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range f.probes {
		if err := w.Probe(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range f.parts {
		if err := w.Partition(p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	meta := Meta{Name: "exceeding-demand", Machine: "icx-4314-2s", Platform: "sim", Seed: 42,
		Created: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), Labels: map[string]string{"a": "b"}}
	st, err := Create(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	fa := makeFixture(1, 6, 1000) // 5000 samples: crosses no batch, then a second run crosses several
	fb := makeFixture(2, 5, 4000) // 16000 samples > 2 batches
	wa, err := st.BeginRun(Run{Scheduler: "least-loaded", Trace: "seed 42"})
	if err != nil {
		t.Fatal(err)
	}
	wb, err := st.BeginRun(Run{Scheduler: "dynamic", Trace: "seed 42", Start: meta.Created.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	writeFixture(t, wa, fa)
	writeFixture(t, wb, fb)
	// A job updated later (it stopped) replaces its earlier record.
	fb.jobs[0].Stop, fb.jobs[0].State = 150*time.Second, "completed"
	if err := wb.Job(fb.jobs[0]); err != nil {
		t.Fatal(err)
	}
	if err := wb.Finish(fb.sum); err != nil {
		t.Fatal(err)
	}
	if err := st.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, DatabaseFile+"-wal")); err == nil {
		if fi, _ := os.Stat(filepath.Join(dir, DatabaseFile+"-wal")); fi.Size() > 0 {
			t.Errorf("write-ahead log not folded into %s on Close", DatabaseFile)
		}
	}

	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := r.Manifest()
	if !m.Complete || m.Name != meta.Name || m.Seed != 42 || !m.Created.Equal(meta.Created) ||
		!reflect.DeepEqual(m.Schedulers, []string{"least-loaded", "dynamic"}) || m.Labels["a"] != "b" {
		t.Fatalf("manifest = %+v", m)
	}
	runs, err := r.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Scheduler != "least-loaded" || runs[0].Complete || !runs[1].Complete ||
		!runs[0].Start.Equal(meta.Created) || !runs[1].Start.Equal(meta.Created.Add(time.Hour)) {
		t.Fatalf("runs = %+v", runs)
	}
	for i, f := range []fixture{fa, fb} {
		id := runs[i].ID
		check := func(name string, got, want any, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !eqNaN(got, want) {
				t.Errorf("run %d %s: read back differs from written\n got %+v\nwant %+v", id, name, got, want)
			}
		}
		jobs, err := r.Jobs(id)
		check("jobs", jobs, f.jobs, err)
		samples, err := r.Samples(id)
		check("samples", samples, f.samples, err)
		allocs, err := r.Allocations(id)
		check("allocations", allocs, f.allocs, err)
		events, err := r.Events(id)
		check("events", events, f.events, err)
		probes, err := r.Probes(id)
		check("probes", probes, f.probes, err)
		parts, err := r.Partitions(id)
		check("partitions", parts, f.parts, err)
		k := 0
		err = r.EachSampleLight(id, func(x Sample) error {
			w := f.samples[k]
			k++
			if x.Job != w.Job || x.T != w.T || x.Interval != w.Interval || x.Socket != w.Socket || !sameFloat(x.IPC, w.IPC) ||
				!sameFloat(x.IPCE, w.IPCE) || !sameFloat(x.Stalled, w.Stalled) || !sameFloat(x.OccupancyBytes, w.OccupancyBytes) ||
				!sameFloat(x.MemBytesTotal, w.MemBytesTotal) || !math.IsNaN(x.Cycles) {
				t.Fatalf("light sample %d: %+v vs %+v", k, x, w)
			}
			return nil
		})
		if err != nil || k != len(f.samples) {
			t.Fatalf("light samples: %d, %v", k, err)
		}
	}
	if _, ok, _ := r.Summary(runs[0].ID); ok {
		t.Error("unfinished run has a summary")
	}
	sum, ok, err := r.Summary(runs[1].ID)
	if err != nil || !ok || !eqNaN(sum, fb.sum) {
		t.Errorf("summary = %+v, %v, %v; want %+v", sum, ok, err, fb.sum)
	}
	// Unavailable stays distinguishable from zero.
	samples, _ := r.Samples(runs[0].ID)
	var sawNaN, sawZero bool
	for _, s := range samples {
		if s.Job == 1 && math.IsNaN(s.IPC) {
			sawNaN = true
		}
		if s.Job == 2 && s.MemBytesTotal == 0 && !math.IsNaN(s.MemBytesTotal) {
			sawZero = true
		}
	}
	if !sawNaN || !sawZero {
		t.Errorf("NaN (%v) / zero (%v) not preserved", sawNaN, sawZero)
	}
	missing, err := r.Missing()
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != 1 || !strings.Contains(missing[0], "least-loaded") {
		t.Errorf("Missing() = %q, want one line naming the unfinished least-loaded run", missing)
	}
}

func TestCreateRefusesExistingRun(t *testing.T) {
	dir := t.TempDir()
	st, err := Create(dir, Meta{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := Create(dir, Meta{Name: "b"}); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Fatalf("Create over an existing run: %v", err)
	}
}

func TestOpenNotRunDir(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "not a colo run directory") {
		t.Fatalf("Open(empty dir) = %v", err)
	}
	if _, err := Open(filepath.Join(dir, "nope")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Open(absent) = %v", err)
	}
}

// TestKilledRun simulates a run killed mid-way: no Complete, no Close, rows flushed only up
// to the last batch. Opening it reports what is missing and reads what exists.
func TestKilledRun(t *testing.T) {
	dir := t.TempDir()
	st, err := Create(dir, Meta{Name: "killed"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.BeginRun(Run{Scheduler: "dynamic"})
	if err != nil {
		t.Fatal(err)
	}
	f := makeFixture(3, 3, 5000) // 10000 samples: one batch of BatchSize is written, the rest buffered
	for _, s := range f.samples {
		if err := w.Sample(s); err != nil {
			t.Fatal(err)
		}
	}
	// Simulate the kill: from here the writer writes nothing more, as a dead process would.
	// Holding its lock stops the commit loop (it waits for the lock); otherwise a tick
	// between the two reads below commits more rows and they disagree (seen under -race
	// and stress-ng --cpu 4: Missing counted all 10000 samples, SampleCount fewer). The
	// SQLite connection is left open, as it would be; a second opener sees committed rows.
	st.mu.Lock()
	t.Cleanup(func() { st.mu.Unlock(); st.Close() })
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	runs, _ := r.Runs()
	if len(runs) != 1 || runs[0].Complete {
		t.Fatalf("runs = %+v", runs)
	}
	n, err := r.SampleCount(runs[0].ID)
	// A full batch is committed at once, so fewer than BatchSize rows stay uncommitted;
	// which ones depends on when the commit loop (every second of wall-clock time) ran
	// meanwhile: none when writing took under a second, else any (seen under -race and
	// stress-ng --cpu 4: 7169).
	if total := int64(len(f.samples)); err != nil || n <= total-BatchSize || n > total {
		t.Fatalf("samples after kill = %d, %v; want fewer than %d of the %d uncommitted", n, err, BatchSize, total)
	}
	missing, _ := r.Missing()
	joined := strings.Join(missing, "\n")
	if !strings.Contains(joined, "not marked complete") || !strings.Contains(joined, "dynamic") ||
		!strings.Contains(joined, fmt.Sprintf("%d samples", n)) {
		t.Errorf("Missing() = %q", missing)
	}

	// A directory where only run.json exists (killed before the database): still opens.
	dir2 := t.TempDir()
	st2, err := Create(dir2, Meta{Name: "early"})
	if err != nil {
		t.Fatal(err)
	}
	st2.Close()
	for _, f := range []string{DatabaseFile, DatabaseFile + "-wal", DatabaseFile + "-shm"} {
		os.Remove(filepath.Join(dir2, f))
	}
	r2, err := Open(dir2)
	if err != nil {
		t.Fatal(err)
	}
	missing, _ = r2.Missing()
	if len(missing) != 1 || !strings.Contains(missing[0], "colo.db is missing") {
		t.Errorf("Missing() = %q", missing)
	}
	if runs, err := r2.Runs(); err != nil || len(runs) != 0 {
		t.Errorf("Runs() on a dir without database = %v, %v", runs, err)
	}
}

// Rows reach the database within CommitInterval without any Flush (a run killed with
// SIGKILL loses at most about a second), and a job's end commits at once.
func TestCommitsWithoutFlush(t *testing.T) {
	dir := t.TempDir()
	st, err := Create(dir, Meta{Name: "durable"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, _ := st.BeginRun(Run{Scheduler: "dynamic"})
	f := makeFixture(2, 2, 5)
	if err := w.Samples(f.samples); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir) // a second connection sees only committed rows
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// wait for the commit loop (an event: the rows appear), bounded by a generous deadline
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := r.SampleCount(w.ID())
		if err != nil {
			t.Fatal(err)
		}
		if n == int64(len(f.samples)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d samples committed without Flush after 30 s", n, len(f.samples))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkSamplesCommitPerTick is BenchmarkSamples with a commit after every tick: the
// most a commit interval can cost (a run's ticks are ≥ 100 ms apart, commits ≥ 1 s).
func BenchmarkSamplesCommitPerTick(b *testing.B) {
	st, err := Create(b.TempDir(), Meta{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	w, _ := st.BeginRun(Run{Scheduler: "dynamic"})
	tick := makeFixture(4, 29, 1).samples
	for i := 0; b.Loop(); i++ {
		for k := range tick {
			tick[k].T = time.Duration(i) * 100 * time.Millisecond
		}
		if err := w.Samples(tick); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st.Close()
	b.ReportMetric(float64(b.N*len(tick))/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkSamples writes one tick of 28 running jobs per op (the mean concurrency of the
// thesis's 1-hour scenarios) and reports bytes of colo.db per sample.
func BenchmarkSamples(b *testing.B) {
	dir := b.TempDir()
	st, err := Create(dir, Meta{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	w, _ := st.BeginRun(Run{Scheduler: "dynamic"})
	f := makeFixture(4, 29, 1)
	tick := f.samples
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for k := range tick {
			tick[k].T = time.Duration(i) * 100 * time.Millisecond
		}
		if err := w.Samples(tick); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	n := float64(b.N * len(tick))
	b.ReportMetric(float64(st.DatabaseBytes())/n, "bytes/sample")
	b.ReportMetric(n/b.Elapsed().Seconds(), "samples/s")
}

// A run directory written before summaries had notes (schema version 1) is still read:
// its summaries come back without notes; writing a note into it is refused, not dropped.
func TestReadsSchemaVersion1(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v1")
	st, err := Create(dir, Meta{Name: "old"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.BeginRun(Run{Scheduler: "least-loaded"})
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Name: "least-loaded", PriorityIPCE: 40, BatchIPCE: 50, GlobalIPCE: 45, TimeOverTarget: 0.5,
		TimeOverTargetP90: 0.9, JobsCompleted: 3, QueueDelayMean: 1, QueueDelayP90: 2, VirtualSeconds: 60, WallSeconds: 1,
		Extra: map[string]float64{"reprobes": 2}}
	if err := w.Finish(want); err != nil {
		t.Fatal(err)
	}
	if err := st.Complete(); err != nil {
		t.Fatal(err)
	}
	// Turn the database into a version-1 one, as the colo before notes wrote it.
	if _, err := st.db.Exec(`ALTER TABLE summaries DROP COLUMN notes; PRAGMA user_version=1`); err != nil {
		t.Fatal(err)
	}
	st.Close()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, ok, err := r.Summary(1)
	if err != nil || !ok || !eqNaN(got, want) {
		t.Fatalf("version-1 summary %+v, %v, %v; want %+v", got, ok, err, want)
	}
	w2, err := r.BeginRun(Run{Scheduler: "dynamic"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Finish(Summary{Name: "dynamic", Notes: []string{"x"}}); err == nil || !strings.Contains(err.Error(), "no notes column") {
		t.Errorf("a note into a version-1 database: %v, want a refusal", err)
	}
	if err := w2.Finish(Summary{Name: "dynamic"}); err != nil {
		t.Errorf("a summary without notes into a version-1 database: %v", err)
	}
}
