package agent

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"colo/agent/core"
	"colo/machine"
	_ "colo/policy/dcat" // registers static-cat
	"colo/resctrl"
	"colo/resctrl/emu"
	"colo/resctrl/journal"
	"colo/sched"
)

// testPolicy is the named policy on the emulator's "intel" machine (icx-4314-2s), with
// RDT and without a PMU.
func testPolicy(tb testing.TB, policy string) (sched.Scheduler, *machine.Profile) {
	tb.Helper()
	m, err := machine.Get("icx-4314-2s")
	if err != nil {
		tb.Fatal(err)
	}
	cfg := sched.DefaultConfig()
	cfg.RDT = true
	s, err := sched.New(policy, sched.Env{Machine: m, Config: cfg, IPCEUnavailable: "test: no PMU"})
	if err != nil {
		tb.Fatal(err)
	}
	return s, m
}

// testOptions are an agent's options on the in-process emulator: the policy, a new
// instance's journal under stateDir, the emulator's groups (through wrap), a fake host,
// a silent log and a 20 ms interval.
func testOptions(tb testing.TB, em *emu.Emulator, policy, stateDir string, wrap func(Groups) Groups) (Options, *journal.Journal, *fakeHost) {
	tb.Helper()
	s, m := testPolicy(tb, policy)
	inst := NewInstance()
	jr, err := OpenJournal(stateDir, "emu:intel", inst)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := NewResctrl(resctrl.New(em.FS(), resctrl.Options{Prefix: GroupPrefix(inst), AllowDefault: true}), "emu:intel", false)
	if err != nil {
		tb.Fatal(err)
	}
	host := &fakeHost{threads: map[string][]int{}}
	return Options{Machine: m, Scheduler: s, Groups: wrap(g), Journal: jr, Discovery: &fakeRuntime{}, Host: host,
		Interval: 20 * time.Millisecond, StateDir: stateDir, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, jr, host
}

// tickAgent is an agent on the in-process emulator driven tick by tick (no Run, no
// clock): n containers of the three classes, three threads each, already added.
func tickAgent(tb testing.TB, policy string, n int, monInterval time.Duration, wrap func(Groups) Groups) (*Agent, *fakeHost, *emu.Emulator) {
	tb.Helper()
	em, err := emu.NewNamed("intel", emu.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	o, jr, host := testOptions(tb, em, policy, tb.TempDir(), wrap)
	tb.Cleanup(func() { jr.Close() })
	o.Interval, o.MonInterval = 50*time.Millisecond, monInterval
	a, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	a.start = time.Now()
	if err := a.saveDefault(); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("eeee%04d", i)
		host.threads[id] = []int{1000 + 10*i, 1001 + 10*i, 1002 + 10*i}
		a.add(core.Container{ID: id, Name: id, Labels: map[string]string{core.LabelClass: string(core.Classes[i%3])}})
	}
	return a, host, em
}

// countingGroups records the resctrl reads and writes of the agent's interval work.
type countingGroups struct {
	Groups
	at      *uint64             // the agent's tick counter
	mon     map[string][]uint64 // group → ticks its counters were read
	tasks   map[string]int      // group → tasks file reads
	written map[string][]int    // group → threads written
}

func (c *countingGroups) MonData(path string) (uint64, uint64, uint64, error) {
	c.mon[path] = append(c.mon[path], *c.at)
	return c.Groups.MonData(path)
}

func (c *countingGroups) Tasks(path string) ([]int, error) {
	c.tasks[path]++
	return c.Groups.Tasks(path)
}

func (c *countingGroups) AddTasks(path string, tids []int) (int, error) {
	c.written[path] = append(c.written[path], tids...)
	return c.Groups.AddTasks(path, tids)
}

// With --mon-interval four intervals, each container's monitoring counters are read
// every fourth interval, containers on different phases (so an interval reads about a
// quarter of them), and the policy's bandwidth is carried between reads.
func TestMonitoringReadsSpreadOverIntervals(t *testing.T) {
	var c *countingGroups
	a, _, _ := tickAgent(t, "static-cat", 12, 200*time.Millisecond, func(g Groups) Groups {
		c = &countingGroups{Groups: g, mon: map[string][]uint64{}, tasks: map[string]int{}, written: map[string][]int{}}
		return c
	})
	c.at = &a.ticks
	if a.monEvery != 4 {
		t.Fatalf("200ms / 50ms: reads every %d intervals, want 4", a.monEvery)
	}
	for i := 0; i < 2; i++ { // allocations settle (a new group is read at once)
		a.tick()
	}
	c.mon = map[string][]uint64{}
	const ticks = 16
	for i := 0; i < ticks; i++ {
		a.tick()
	}
	perTick := map[uint64]int{}
	for g, at := range c.mon {
		if len(at) != ticks/4 {
			t.Errorf("%s read at ticks %v: want %d reads in %d ticks", g, at, ticks/4, ticks)
		}
		for i := 1; i < len(at); i++ {
			if at[i]-at[i-1] != 4 {
				t.Errorf("%s read at ticks %v: not every 4th", g, at)
			}
		}
		for _, k := range at {
			perTick[k]++
		}
	}
	if len(c.mon) != 12 {
		t.Errorf("%d groups read, want 12: %v", len(c.mon), c.mon)
	}
	for k, n := range perTick {
		if n > 3 {
			t.Errorf("tick %d read %d of 12 containers: phases not spread", k, n)
		}
	}
}

// PID sync reads a container's group back once, then writes only threads that are new
// in its cgroup; an unchanged cgroup costs no resctrl access.
func TestPIDSyncWritesOnlyNewThreads(t *testing.T) {
	var c *countingGroups
	a, host, em := tickAgent(t, "static-cat", 3, 0, func(g Groups) Groups {
		c = &countingGroups{Groups: g, mon: map[string][]uint64{}, tasks: map[string]int{}, written: map[string][]int{}}
		return c
	})
	c.at = &a.ticks
	for i := 0; i < 3; i++ {
		a.tick()
	}
	c.tasks, c.written = map[string]int{}, map[string][]int{}
	for i := 0; i < 5; i++ {
		a.tick()
	}
	if len(c.tasks) != 0 || len(c.written) != 0 {
		t.Fatalf("unchanged cgroups: tasks read %v, written %v", c.tasks, c.written)
	}
	host.mu.Lock()
	host.threads["eeee0001"] = append(host.threads["eeee0001"], 7777)
	host.mu.Unlock()
	a.tick()
	mon := a.al.Placement(tenantOf("eeee0001")).Mon
	if len(c.tasks) != 0 {
		t.Errorf("a new thread made the agent read tasks back: %v", c.tasks)
	}
	if got := c.written[mon]; len(got) != 1 || got[0] != 7777 {
		t.Errorf("written into %s: %v, want just the new thread 7777 (all writes %v)", mon, got, c.written)
	}
	g, ok := em.State().Group(mon)
	if !ok || !contains(g.Tasks, 7777) {
		t.Errorf("thread 7777 not in %s: %+v", mon, g)
	}
	for path := range c.written {
		if !strings.HasPrefix(path, a.o.Groups.Prefix()) && !strings.Contains(path, "/"+a.o.Groups.Prefix()) {
			t.Errorf("wrote into a group not the agent's: %s", path)
		}
	}
}
