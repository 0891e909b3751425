package bench

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
	"testing"
	"time"
)

// The allocation timeline is exact: replaying the recorded sched allocations gives, at
// every moment, exclusive classes that never overlap; a job's class ends (mask 0) at the
// moment the job stops; every probe segment's mask is the class's mask during the
// segment.
func TestAllocationTimelineEndsWhenJobsStop(t *testing.T) {
	bm := mustParse(t, genOK)
	_, mem := runWith(t, bm, "dynamic", newFake(bm.Machine))

	type cls struct {
		mask uint64
		from time.Duration
	}
	held := map[string]cls{}         // class → current mask (replay)
	ended := map[int]time.Duration{} // job → time its class was removed (last removal)
	history := map[string][]AllocationRecord{}
	for i, a := range mem.Allocations {
		if a.Source != "sched" || a.CLOS == "system/default" {
			continue
		}
		if i > 0 && a.T < mem.Allocations[i-1].T {
			t.Fatalf("allocations out of time order at %d", i)
		}
		history[a.CLOS] = append(history[a.CLOS], a)
		if a.Mask == 0 {
			if _, ok := held[a.CLOS]; !ok {
				t.Fatalf("removal of %s that held nothing: %+v", a.CLOS, a)
			}
			if !math.IsNaN(a.MBA) || len(a.Members) != 0 {
				t.Fatalf("a removal carries MBA NaN and no members: %+v", a)
			}
			delete(held, a.CLOS)
			var id int
			fmt.Sscanf(a.CLOS, "job-%d", &id)
			ended[id] = a.T
			continue
		}
		// exclusive: no other class on the socket holds any of these ways
		for c, h := range held {
			if c != a.CLOS && h.mask&a.Mask != 0 && history[c][len(history[c])-1].Socket == a.Socket {
				t.Fatalf("t=%v: %s %#x overlaps %s %#x", a.T, a.CLOS, a.Mask, c, h.mask)
			}
		}
		held[a.CLOS] = cls{mask: a.Mask, from: a.T}
	}
	if len(held) != 0 {
		t.Fatalf("classes still held after the run: %v", held)
	}
	if len(ended) == 0 {
		t.Fatal("no class was ever removed")
	}
	for id, at := range ended {
		j := mem.Jobs[id]
		if !j.Priority {
			t.Fatalf("batch job %d held a class", id)
		}
		if j.Stop < 0 || at != j.Stop {
			t.Fatalf("job %d (%s) stopped at %v but its class ended at %v", id, j.State, j.Stop, at)
		}
	}
	// every allocated priority job that stopped has its class ended at its stop
	for _, j := range mem.Jobs {
		if _, had := history[fmt.Sprintf("job-%d", j.ID)]; had {
			if _, ok := ended[j.ID]; !ok {
				t.Fatalf("job %d had a class that never ended", j.ID)
			}
		}
	}
	// probe segments: the class held exactly the segment's mask while it was measured
	for _, p := range mem.Probes {
		h := history[fmt.Sprintf("job-%d", p.Job)]
		var at uint64
		for _, a := range h {
			if a.T <= p.Start {
				at = a.Mask
			}
		}
		if at != p.Mask || bits.OnesCount64(at) != p.Ways {
			t.Fatalf("probe segment %+v: class held %#x", p, at)
		}
	}
}

// A static job that arrives after max_t is recorded as not started (never admitted),
// counted apart from rejections and from jobs still queued at max_t.
func TestJobsAfterMaxTNotStarted(t *testing.T) {
	y := staticOK + `  late:
    workload: "flat:0.5"
    start_t: 90
    length: 10
  edge:
    workload: "flat:0.5"
    start_t: 60
    length: 10
`
	bm := mustParse(t, y)
	res, mem := runWith(t, bm, "least-loaded", newFake(bm.Machine))
	s := Summarize(res, 0)
	if s.JobsTotal != 4 || s.JobsStarted != 2 || s.JobsNotStarted != 2 || s.JobsQueuedAtEnd != 0 || s.JobsRejected != 0 {
		t.Fatalf("summary %+v", s)
	}
	for _, j := range res.Jobs {
		if j.Name == "late" || j.Name == "edge" {
			rec, ok := mem.Jobs[j.ID]
			if j.State != StateNotStarted || j.Start != -1 || !ok || rec.State != StateNotStarted || rec.Start != -1 || !strings.Contains(rec.Reason, "max_t") {
				t.Fatalf("%s: result %+v, recorded %+v", j.Name, j, rec)
			}
		}
	}
	var b strings.Builder
	rep := &Report{Schedulers: []Summary{s}}
	rep.WriteTable(&b)
	if !strings.Contains(b.String(), "jobs arriving after max_t") {
		t.Fatalf("table:\n%s", b.String())
	}
}

// Through the run loop: a priority job meets its target with 3 ways, then its phase
// changes and it needs 4. The dynamic scheduler probes it again (once the cool-down has
// passed) and gives it 4 ways; with reprobe: false it stays below target.
func TestReprobeAfterPhaseChange(t *testing.T) {
	y := `benchmark:
  name: phase
  max_t: 120
  scheduler:
    implementation: dynamic
    REPROBE
containers:
  db:
    workload: "phase:3:4:40"
    priority: true
    ipce: 90
    length: 110
`
	run := func(reprobe string) (Summary, *Memory) {
		bm, err := parse(t, strings.Replace(y, "REPROBE", "reprobe: "+reprobe, 1))
		if err != nil {
			t.Fatal(err)
		}
		res, mem := runWith(t, bm, "dynamic", newFake(bm.Machine))
		return Summarize(res, 0), mem
	}
	on, mem := run("true")
	off, _ := run("false")
	if on.Probes != 2 || on.Reprobes != 1 || off.Probes != 1 || off.Reprobes != 0 {
		t.Fatalf("probes: reprobe on %d (%d re-probes), off %d (%d)", on.Probes, on.Reprobes, off.Probes, off.Reprobes)
	}
	var final uint64
	for _, a := range mem.Allocations {
		if a.CLOS == "job-0" && a.Mask != 0 {
			final = a.Mask
		}
	}
	if bits.OnesCount64(final) != 4 {
		t.Fatalf("after the re-probe the job holds %#x, want 4 ways", final)
	}
	t.Logf("time over target: re-probing %.2f, without %.2f", on.TimeOverTarget, off.TimeOverTarget)
	if on.TimeOverTarget <= off.TimeOverTarget+0.2 {
		t.Fatalf("time over target: re-probing %.2f, without %.2f", on.TimeOverTarget, off.TimeOverTarget)
	}
}

func TestSchedulerOptionKeys(t *testing.T) {
	bm := mustParse(t, staticOK)
	if !bm.Sched.Reprobe || !bm.Sched.ForceMove || bm.Sched.Probe.CooldownT != time.Second {
		t.Fatalf("defaults: reprobe %v force_move %v cooldown %v", bm.Sched.Reprobe, bm.Sched.ForceMove, bm.Sched.Probe.CooldownT)
	}
	y := strings.Replace(staticOK, "    implementation: dynamic\n", "    implementation: dynamic\n    reprobe: false\n    force_move_for_priority_admission: false\n    prober: {cooldown_t: 7.5}\n", 1)
	bm = mustParse(t, y)
	if bm.Sched.Reprobe || bm.Sched.ForceMove || bm.Sched.Probe.CooldownT != 7500*time.Millisecond {
		t.Fatalf("set: reprobe %v force_move %v cooldown %v", bm.Sched.Reprobe, bm.Sched.ForceMove, bm.Sched.Probe.CooldownT)
	}
	wantErrAt(t, strings.Replace(staticOK, "    implementation: dynamic\n", "    implementation: dynamic\n    reprobe: often\n", 1), 6, "often")
}
