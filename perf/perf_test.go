package perf

import (
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"colo/metric"
)

func TestScaleDelta(t *testing.T) {
	// Eqs. 4.2/4.3: an event on the PMU half of the enabled time counts half its events.
	for _, c := range []struct {
		v, e, r uint64
		want    float64
		ok      bool
	}{
		{1000, 200, 100, 2000, true}, // multiplexed: ×2
		{1000, 300, 100, 3000, true}, // ×3
		{1000, 100, 100, 1000, true}, // always on the PMU
		{0, 0, 0, 0, true},           // cgroup not running on that CPU
		{5, 100, 0, math.NaN(), false},
	} {
		got, ok := ScaleDelta(c.v, c.e, c.r)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("ScaleDelta(%d,%d,%d) = %v,%v want %v,%v", c.v, c.e, c.r, got, ok, c.want, c.ok)
		}
	}
}

// fakePMU stands in for the kernel at the system-call boundary.
type fakePMU struct {
	mu     sync.Mutex
	fail   func(attr *unix.PerfEventAttr) error
	next   int
	fds    map[int]*fakeFD
	opened []openCall
	closed int
}

type fakeFD struct {
	ev                  Event
	cpu                 int
	val, enabled, runng uint64
	format              uint64
	members             []int
}

type openCall struct {
	attr                   unix.PerfEventAttr
	pid, cpu, group, flags int
}

// wantNoFDs requires every opened file descriptor to be closed.
func (f *fakePMU) wantNoFDs(t *testing.T, what string) {
	t.Helper()
	if len(f.fds) != 0 {
		t.Errorf("%d fds %s", len(f.fds), what)
	}
}

func newFake() *fakePMU { return &fakePMU{fds: map[int]*fakeFD{}, next: 100} }

func (f *fakePMU) Open(attr *unix.PerfEventAttr, pid, cpu, group, flags int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, openCall{*attr, pid, cpu, group, flags})
	if f.fail != nil {
		if err := f.fail(attr); err != nil {
			return -1, err
		}
	}
	if group != -1 {
		l, ok := f.fds[group]
		if !ok || l.cpu != cpu {
			return -1, unix.EINVAL
		}
	}
	f.next++
	f.fds[f.next] = &fakeFD{ev: Event{Type: attr.Type, Config: attr.Config}, cpu: cpu, format: attr.Read_format}
	if group != -1 {
		f.fds[group].members = append(f.fds[group].members, f.next)
	}
	return f.next, nil
}

func (f *fakePMU) Read(fd int, buf []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x, ok := f.fds[fd]
	if !ok {
		return 0, unix.EBADF
	}
	if x.format&unix.PERF_FORMAT_GROUP != 0 {
		n := 1 + len(x.members)
		if len(buf) < 24+8*n {
			return 0, unix.ENOSPC
		}
		binary.NativeEndian.PutUint64(buf[0:], uint64(n))
		binary.NativeEndian.PutUint64(buf[8:], x.enabled)
		binary.NativeEndian.PutUint64(buf[16:], x.runng)
		binary.NativeEndian.PutUint64(buf[24:], x.val)
		for i, m := range x.members {
			binary.NativeEndian.PutUint64(buf[32+8*i:], f.fds[m].val)
		}
		return 24 + 8*n, nil
	}
	binary.NativeEndian.PutUint64(buf[0:], x.val)
	binary.NativeEndian.PutUint64(buf[8:], x.enabled)
	binary.NativeEndian.PutUint64(buf[16:], x.runng)
	return 24, nil
}

func (f *fakePMU) Close(fd int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.fds[fd]; !ok {
		return unix.EBADF
	}
	delete(f.fds, fd)
	f.closed++
	return nil
}

// advance adds to the counter of (event type/config, cpu).
func (f *fakePMU) advance(typ uint32, config uint64, cpu int, dv, de, dr uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range f.fds {
		if x.ev.Type == typ && x.ev.Config == config && x.cpu == cpu {
			x.val += dv
			x.enabled += de
			x.runng += dr
		}
	}
}

// collectLogs resets the once-per-process warnings and returns a Logf that records each
// line (its first argument when it has one) and the lines recorded.
func collectLogs() (*[]string, func(string, ...any)) {
	resetWarnings()
	var lines []string
	return &lines, func(format string, args ...any) {
		lines = append(lines, format)
		if len(args) > 0 {
			lines[len(lines)-1] = args[0].(string)
		}
	}
}

func resetWarnings() {
	warnMu.Lock()
	warnSeen = map[string]bool{}
	warnMu.Unlock()
}

func TestHardwarePathFaked(t *testing.T) {
	resetWarnings()
	f := newFake()
	dir := t.TempDir()
	c, err := OpenCgroup(dir, []int{0, 2, 3}, Options{Sys: f, Microarch: "icelake-sp"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode() != ModeHardware || len(c.Events()) != 9 {
		t.Fatalf("mode %s events %v", c.Mode(), c.Events())
	}
	// Every event was opened once per CPU of the cpuset, filtered by cgroup.
	if len(f.opened) != 9*3 {
		t.Fatalf("opened %d fds", len(f.opened))
	}
	seenRaw := map[uint64]bool{}
	for _, o := range f.opened {
		if o.flags&unix.PERF_FLAG_PID_CGROUP == 0 || o.pid <= 0 || o.group != -1 ||
			o.attr.Read_format != unix.PERF_FORMAT_TOTAL_TIME_ENABLED|unix.PERF_FORMAT_TOTAL_TIME_RUNNING {
			t.Fatalf("open call %+v", o)
		}
		if o.cpu != 0 && o.cpu != 2 && o.cpu != 3 {
			t.Fatalf("opened on cpu %d outside the cpuset", o.cpu)
		}
		if o.attr.Type == unix.PERF_TYPE_RAW {
			seenRaw[o.attr.Config] = true
		}
	}
	// Ice Lake-SP encodings from the thesis repo (seed000.md §1.4), and L2_LINES_IN.ALL
	// (event F1H, umask 1FH) for L2 misses.
	if !seenRaw[0x40004a3] || !seenRaw[0x60006a3] || !seenRaw[0x1ff1] || len(seenRaw) != 3 {
		t.Fatalf("raw configs %v", seenRaw)
	}
	H := uint32(unix.PERF_TYPE_HARDWARE)
	// cpu0: instructions multiplexed half the time; cpu2: fully on; cpu3: cgroup idle.
	f.advance(H, unix.PERF_COUNT_HW_INSTRUCTIONS, 0, 1000, 200, 100)
	f.advance(H, unix.PERF_COUNT_HW_INSTRUCTIONS, 2, 500, 100, 100)
	f.advance(H, unix.PERF_COUNT_HW_CPU_CYCLES, 0, 1500, 200, 200)
	f.advance(H, unix.PERF_COUNT_HW_CPU_CYCLES, 2, 800, 100, 50)
	f.advance(unix.PERF_TYPE_RAW, 0x40004a3, 0, 600, 200, 100)
	f.advance(unix.PERF_TYPE_RAW, 0x40004a3, 2, 100, 100, 100)
	f.advance(unix.PERF_TYPE_RAW, 0x1ff1, 0, 40, 200, 50) // on the PMU a quarter of the time
	f.advance(unix.PERF_TYPE_RAW, 0x1ff1, 2, 30, 100, 100)
	s, err := c.Sample()
	if err != nil {
		t.Fatal(err)
	}
	ins, _ := s.Get(Instructions)
	cyc, _ := s.Get(Cycles)
	st, _ := s.Get(StallsTotal)
	if ins != 2500 || cyc != 3100 || st != 1300 {
		t.Fatalf("instructions %v cycles %v stalls %v", ins, cyc, st)
	}
	if l2, ok := s.Get(L2Misses); !ok || l2 != 40*4+30 {
		t.Fatalf("L2 misses %v %v, want 190 (40 scaled by 200/50, plus 30)", l2, ok)
	}
	if s.IPC() != metric.IPC(2500, 3100) || s.IPCE() != metric.IPCE(1300, 3100) {
		t.Errorf("IPC %v IPCE %v", s.IPC(), s.IPCE())
	}
	// The next sample sees only the new deltas.
	f.advance(H, unix.PERF_COUNT_HW_INSTRUCTIONS, 3, 70, 10, 10)
	s, _ = c.Sample()
	if v, _ := s.Get(Instructions); v != 70 {
		t.Errorf("second sample instructions %v", v)
	}
	if v, ok := s.Get(Cycles); !ok || v != 0 {
		t.Errorf("idle cycles %v %v", v, ok)
	}
	if tot := c.Totals()[Instructions]; tot != 2570 {
		t.Errorf("total %v", tot)
	}
	if tot := c.Totals()[L2Misses]; tot != 190 {
		t.Errorf("L2-miss total %v", tot)
	}
	// An event enabled but never scheduled on one CPU is unknown for that interval.
	f.advance(H, unix.PERF_COUNT_HW_CPU_CYCLES, 0, 0, 100, 0)
	f.advance(H, unix.PERF_COUNT_HW_CPU_CYCLES, 2, 100, 100, 100)
	s, _ = c.Sample()
	if _, ok := s.Get(Cycles); ok || !math.IsNaN(s.IPC()) {
		t.Errorf("cycles multiplexed out must be unavailable, IPC %v", s.IPC())
	}
	c.Close()
	f.wantNoFDs(t, "left open")
}

func TestFallbackToSoftware(t *testing.T) {
	logs, logf := collectLogs()
	f := newFake()
	f.fail = func(a *unix.PerfEventAttr) error {
		if a.Type == unix.PERF_TYPE_HARDWARE || a.Type == unix.PERF_TYPE_RAW {
			return unix.ENOENT // no PMU: what this VM answers
		}
		return nil
	}
	for i := 0; i < 3; i++ {
		// different CPUs give different error details: still one warning
		c, err := OpenCgroup(t.TempDir(), []int{i, i + 1}, Options{Sys: f, Microarch: "skylake-sp", Logf: logf})
		if err != nil {
			t.Fatal(err)
		}
		if c.Mode() != ModeSoftware || strings.Join(c.Events(), ",") != "task-clock,context-switches,cpu-migrations,page-faults" {
			t.Fatalf("mode %s events %v", c.Mode(), c.Events())
		}
		f.advance(unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_TASK_CLOCK, i+1, 5e6, 5e6, 5e6)
		f.advance(unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CONTEXT_SWITCHES, i+1, 7, 0, 0)
		f.advance(unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CONTEXT_SWITCHES, i, 2, 0, 0)
		f.advance(unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_TASK_CLOCK, i, 1e6, 1e6, 1e6)
		s, _ := c.Sample()
		if v, ok := s.Get(TaskClock); !ok || v != 6e6 {
			t.Errorf("task-clock %v", v)
		}
		if v, ok := s.Get(ContextSwitches); !ok || v != 9 {
			t.Errorf("context switches %v (group members summed over CPUs)", v)
		}
		if _, ok := s.Get(Instructions); ok || !math.IsNaN(s.IPC()) || !math.IsNaN(s.IPCE()) {
			t.Errorf("IPC must be unavailable in software mode, got %v", s.IPC())
		}
		c.Close()
	}
	// Software events are read as one group per CPU: members name the leader.
	leaders := 0
	for _, o := range f.opened {
		if o.attr.Type == unix.PERF_TYPE_SOFTWARE && o.group == -1 {
			leaders++
		}
	}
	if leaders != 3*2 {
		t.Errorf("%d group leaders, want one per CPU per counter (6)", leaders)
	}
	if len(*logs) != 1 || !strings.Contains((*logs)[0], "no hardware PMU") {
		t.Errorf("want one warning naming the missing PMU, got %q", *logs)
	}
	f.wantNoFDs(t, "leaked by the failed hardware attempt")
}

func TestParanoidForbidsEverything(t *testing.T) {
	logs, logf := collectLogs()
	f := newFake()
	f.fail = func(*unix.PerfEventAttr) error { return unix.EACCES }
	c, err := OpenCgroup(t.TempDir(), []int{0}, Options{Sys: f, Logf: logf})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Sample()
	if c.Mode() != ModeNone || err != nil || len(s.Names) != 0 || !math.IsNaN(s.IPC()) {
		t.Fatalf("mode %s sample %+v %v", c.Mode(), s, err)
	}
	if len(*logs) != 1 || !strings.Contains((*logs)[0], "perf_event_paranoid") || !strings.Contains(c.Reason(), "CAP_PERFMON") {
		t.Errorf("logs %q reason %q", *logs, c.Reason())
	}
}

func TestRawEventsMissingKeepsHardware(t *testing.T) {
	logs, logf := collectLogs()
	f := newFake()
	f.fail = func(a *unix.PerfEventAttr) error {
		if a.Type == unix.PERF_TYPE_RAW {
			return unix.EINVAL
		}
		return nil
	}
	c, err := OpenCgroup(t.TempDir(), []int{0}, Options{Sys: f, Microarch: "icelake-sp", Logf: logf})
	if err != nil || c.Mode() != ModeHardware || len(c.Events()) != 6 {
		t.Fatalf("%v %s %v", err, c.Mode(), c.Events())
	}
	f.advance(unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_INSTRUCTIONS, 0, 10, 1, 1)
	f.advance(unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CPU_CYCLES, 0, 20, 1, 1)
	s, _ := c.Sample()
	if s.IPC() != 0.5 || !math.IsNaN(s.IPCE()) {
		t.Errorf("IPC %v IPCE %v", s.IPC(), s.IPCE())
	}
	if len(*logs) != 3 || !strings.Contains(strings.Join(*logs, "\n"), "L2 misses stay 0 (unavailable") {
		t.Errorf("one warning per raw event (2 stall events, L2 misses) expected, got %q", *logs)
	}
	if _, ok := s.Get(L2Misses); ok || c.Totals()[L2Misses] != 0 {
		t.Errorf("an L2-miss event that failed to open must be absent (total 0), got %v", c.Totals())
	}
}

func TestBadCgroup(t *testing.T) {
	_, err := OpenCgroup("/sys/fs/cgroup/does-not-exist-colo", []int{0}, Options{Sys: newFake()})
	if err == nil || !strings.Contains(err.Error(), "does-not-exist-colo") {
		t.Fatalf("err = %v", err)
	}
	if _, err := OpenCgroup(t.TempDir(), nil, Options{Sys: newFake()}); err == nil {
		t.Fatal("no CPUs accepted")
	}
}

func TestRawTables(t *testing.T) {
	ev := RawEvents("icelake-sp")
	want := map[string]uint64{"cycle_activity.stalls_total": 0x40004a3, "cycle_activity.stalls_l3_miss": 0x60006a3,
		"cycle_activity.stalls_l2_miss": 0x50005a3, "cycle_activity.stalls_l1d_miss": 0xc000ca3,
		"cycle_activity.stalls_mem_any": 0x140014a3, "resource_stalls.sb": 0x8a2, "resource_stalls.scoreboard": 0x2a2,
		"l2_lines_in.all": 0x1ff1}
	if len(ev) != len(want) {
		t.Fatalf("%v", ev)
	}
	for _, e := range ev {
		if want[e.Name] != e.Config || e.Type != unix.PERF_TYPE_RAW {
			t.Errorf("%s = %#x", e.Name, e.Config)
		}
		// config = cmask<<24 | umask<<8 | event: cycle_activity is event 0xA3 with cmask = umask.
		if strings.HasPrefix(e.Name, "cycle_activity") && (e.Config&0xff != 0xa3 || (e.Config>>24) != (e.Config>>8)&0xff) {
			t.Errorf("%s encoding %#x breaks the cmask=umask rule", e.Name, e.Config)
		}
	}
	if RawEvents("zen4") != nil {
		t.Error("unknown microarch must have no raw events")
	}
	// L2 misses: config = umask<<8 | event, from Intel's perfmon event lists.
	for ma, want := range map[string]uint64{"icelake-sp": 0xf1 | 0x1f<<8, "skylake-sp": 0x24 | 0x3f<<8} {
		if ev, ok := L2MissEvent(ma); !ok || ev.Config != want || ev.Name != L2Misses || ev.Type != unix.PERF_TYPE_RAW {
			t.Errorf("%s L2-miss event %+v %v, want config %#x", ma, ev, ok, want)
		}
	}
	if _, ok := L2MissEvent("zen4"); ok {
		t.Error("unknown microarch has an L2-miss event")
	}
	if _, err := ParseRawTables([]byte("- microarch: x\n  l2_miss: nope\n  events: {a: 1}\n")); err == nil {
		t.Error("l2_miss naming no event accepted")
	}
	if _, err := ParseRawTables([]byte("- microarch: x\n")); err == nil {
		t.Error("table without events accepted")
	}
}

func TestDetectMicroarch(t *testing.T) {
	icx := "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 106\nmodel name\t: Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz\n\nprocessor\t: 1\n"
	skx := "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"
	amd := "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
	for in, want := range map[string]string{icx: "icelake-sp", skx: "skylake-sp", amd: ""} {
		if got := DetectMicroarch([]byte(in)); got != want {
			t.Errorf("got %q want %q", got, want)
		}
	}
}

// Close while another goroutine samples (dockerprobe's reader was still in Sample when
// its owner closed the counter, and indexed the cleared tables: a panic in a stressed
// suite run). Under -race the old code also reports the data race.
func TestCloseWhileSampling(t *testing.T) {
	c, err := OpenCgroup(t.TempDir(), []int{0, 1}, Options{Sys: newFake(), Microarch: "icelake-sp"})
	if err != nil {
		t.Fatal(err)
	}
	sampled := make(chan struct{})
	done := make(chan error)
	go func() {
		for i := 0; ; i++ {
			if _, err := c.Sample(); err != nil {
				done <- err
				return
			}
			if i == 0 {
				close(sampled)
			}
		}
	}()
	<-sampled
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Sample after Close: %v, want the counter closed", err)
	}
}
