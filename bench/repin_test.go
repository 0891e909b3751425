package bench

import (
	"strings"
	"testing"
	"time"

	"colo/sched"
)

// scripted places jobs like least-loaded and, at given ticks, asks for re-pins and CPU
// quotas; it records where the run loop says the jobs run.
type scripted struct {
	sched.Scheduler
	at     map[time.Duration]sched.Decisions
	placed map[time.Duration]map[int][]int
}

func (s *scripted) Tick(o *sched.Observation) sched.Decisions {
	d := s.Scheduler.Tick(o)
	x := s.at[o.Now]
	d.Repin, d.Quota = x.Repin, x.Quota
	s.placed[o.Now] = map[int][]int{}
	for _, r := range o.Running {
		s.placed[o.Now][r.ID] = r.Placed
	}
	return d
}

// quotaFake is the fake platform with a CPU-quota actuator.
type quotaFake struct {
	*fakePlatform
	quotas map[int]float64
}

func (q quotaFake) SetQuota(id int, v float64) error { q.quotas[id] = v; return nil }

// Re-pins move a job to exactly the cores asked (inside its socket: a "repin" event; to the
// other socket: a migration) and refuse busy or too few cores with a warning; CPU quotas
// reach a platform that has them (platform.QuotaSetter) and are refused with a warning
// elsewhere.
func TestRepinAndQuota(t *testing.T) {
	y := `benchmark:
  name: repin
  max_t: 6
  scheduler:
    implementation: least-loaded
containers:
  a: {workload: "flat:0.6", core: [0, 1]}
  b: {workload: "flat:0.6", core: [2]}
`
	for _, withQuota := range []bool{true, false} {
		bm := mustParse(t, y)
		base, _ := sched.New("least-loaded", sched.Env{Machine: bm.Machine, Config: bm.Sched})
		s := &scripted{Scheduler: base, placed: map[time.Duration]map[int][]int{}, at: map[time.Duration]sched.Decisions{
			2 * time.Second: {Repin: []sched.Repin{{Job: 0, CPUs: []int{5, 6}}}, Quota: []sched.QuotaChange{{Job: 1, Quota: 0.7}}},
			3 * time.Second: {Repin: []sched.Repin{{Job: 1, CPUs: []int{5}}, {Job: 0, CPUs: []int{3}}}}, // busy; too few
			4 * time.Second: {Repin: []sched.Repin{{Job: 1, CPUs: []int{20}}}},                          // to socket 1
		}}
		f := newFake(bm.Machine)
		var pf Platform = f
		q := quotaFake{f, map[int]float64{}}
		if withQuota {
			pf = q
		}
		var warned []string
		rec := &Memory{}
		res, err := Run(bm, pf, s, Options{Recorder: rec, Warn: func(w string) { warned = append(warned, w) }})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.placed[5*time.Second]; len(got[0]) != 2 || got[0][0] != 5 || got[0][1] != 6 || len(got[1]) != 1 || got[1][0] != 20 {
			t.Fatalf("jobs run on %v, want a on 5,6 and b on 20", got)
		}
		var kinds []string
		for _, e := range rec.Events {
			if e.Kind == "repin" || e.Kind == "migrate" || e.Kind == "quota" {
				kinds = append(kinds, e.Kind+" "+e.Text)
			}
		}
		want := []string{"repin socket 0 cores 0-1 -> 5-6", "migrate socket 0 -> 1 cores 20"}
		if withQuota {
			want = []string{"repin socket 0 cores 0-1 -> 5-6", "quota 70 % of its cores' time", "migrate socket 0 -> 1 cores 20"}
		}
		if strings.Join(kinds, "|") != strings.Join(want, "|") || res.Migrations != 1 {
			t.Fatalf("quota %v: events %q (migrations %d), want %q", withQuota, kinds, res.Migrations, want)
		}
		nWarn := 2 // the busy and the too-short re-pin
		if !withQuota {
			nWarn = 3
		}
		if len(warned) != nWarn || !strings.Contains(strings.Join(warned, "\n"), "not 1 free cores") {
			t.Fatalf("quota %v: warnings %q", withQuota, warned)
		}
		if withQuota && q.quotas[1] != 0.7 {
			t.Fatalf("quota applied %v", q.quotas)
		}
	}
}
