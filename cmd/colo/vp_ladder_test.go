package main

import (
	"fmt"
	"strings"
	"testing"

	"colo/bench"
)

// VP's ladder through `colo run` on the simulator (examples/vp/victim-aggressor-hog.yaml):
// the run loop applies every rung — CAT masks and MBA values (allocations), CPU quotas
// (sched.QuotaChange → sim.SetQuota) and moves (sched.Repin → sim.Move, cores chosen by the
// controller, so pinned jobs move too). The cheapest action comes first (the aggressor
// confined to 2 ways); each costlier rung is taken only while the victim stays hurt; the
// hog's socket move has a repercussion — the window catches the cache-sensitive tenant of
// socket 1 hurt — so it is undone (the hog returns to its cores) and the next action is
// chosen accordingly: the smaller aggressor is moved instead, and the tenant's own episode
// confines it there. The relaxation of that confinement brings the tenant's hurt back, so
// it is restored once and not tried again.
func TestVPLadderThroughRunLoop(t *testing.T) {
	bm := loadOn(t, "../../examples/vp/victim-aggressor-hog.yaml", "sim")
	rec := &bench.Memory{}
	if _, err := bench.RunScheduler(bm, "vp", rec); err != nil {
		t.Fatal(err)
	}
	id := map[string]int{}
	for j, r := range rec.Jobs {
		id[r.Name] = j
	}
	name := map[string]string{}
	for n, j := range id {
		name[fmt.Sprint(j)] = n
	}
	// "vp: cat-confine 2 for 0 (cache)" → "cat-confine aggressor for victim"
	readable := func(text string) string {
		f := strings.Fields(strings.TrimPrefix(text, "vp: "))
		for i, w := range f {
			if n, ok := name[w]; ok && i > 0 && (f[i-1] == "for" || strings.Contains(f[i-1], "-")) {
				f[i] = n
			}
		}
		s := strings.Join(f, " ")
		for j, n := range name { // repercussion lists: [1] → [tenant1]
			s = strings.ReplaceAll(s, "["+j+"]", "["+n+"]")
		}
		return s
	}
	var got, moves, quotas []string
	for _, e := range rec.Events {
		switch {
		case e.Kind == "decision" && strings.HasPrefix(e.Text, "vp: "):
			got = append(got, fmt.Sprintf("%.0f %s", e.T.Seconds(), readable(e.Text)))
		case e.Kind == "migrate" || e.Kind == "repin":
			moves = append(moves, fmt.Sprintf("%.0f %s %s", e.T.Seconds(), name[fmt.Sprint(e.Job)], e.Text))
		case e.Kind == "quota":
			quotas = append(quotas, fmt.Sprintf("%.0f %s %s", e.T.Seconds(), name[fmt.Sprint(e.Job)], e.Text))
		}
	}
	t.Logf("decisions:\n  %s\nmoves:\n  %s\nquotas:\n  %s", strings.Join(got, "\n  "), strings.Join(moves, "\n  "), strings.Join(quotas, "\n  "))
	want := []string{
		"12 cat-confine aggressor for victim (cache)",
		"26 mba-step hog for victim (bandwidth)",
		"28 cat-confine hog for victim (cache)",
		"30 mba-step aggressor for victim (bandwidth)",
		"32 cpu-quota hog for victim (bandwidth)",
		"34 cpu-quota aggressor for victim (bandwidth)",
		"36 socket-move hog for victim (bandwidth)",
		"38 undo socket-move hog for victim (bandwidth) reverted (repercussion on [tenant1])",
		"38 socket-move aggressor for victim (bandwidth)",
		"41 cat-confine aggressor for tenant1 (cache)",
		"47 relax cat-confine aggressor for tenant1 (cache)",
		"49 undo relax cat-confine aggressor for tenant1 (cache) reverted (repercussion on [tenant1])",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ladder:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
	wantMoves := []string{
		"36 hog socket 0 -> 1 cores 17-28",
		"38 hog socket 1 -> 0 cores 2-13",
		"38 aggressor socket 0 -> 1 cores 17",
	}
	if strings.Join(moves, "\n") != strings.Join(wantMoves, "\n") {
		t.Fatalf("moves applied by the run loop:\n got  %v\n want %v", moves, wantMoves)
	}
	wantQuotas := []string{"32 hog 90 % of its cores' time", "34 aggressor 90 % of its cores' time"}
	if strings.Join(quotas, "\n") != strings.Join(wantQuotas, "\n") {
		t.Fatalf("quotas applied by the run loop:\n got  %v\n want %v", quotas, wantQuotas)
	}
	// the tenant is not hurt at the end: its IPC over the last 5 s is within 10 % of its
	// IPC before the moves
	ipc := func(job int, from, to float64) float64 {
		var in, cy float64
		for _, s := range rec.Samples {
			if s.Job == job && s.T.Seconds() > from && s.T.Seconds() <= to {
				in += s.Instructions
				cy += s.Cycles
			}
		}
		return in / cy
	}
	before, end := ipc(id["tenant1"], 20, 35), ipc(id["tenant1"], 55, 60)
	if end < before/1.1 {
		t.Fatalf("tenant1 IPC %.4f at the end, %.4f before the moves", end, before)
	}
}
