package profiler

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"colo/agent/api"
	"colo/agent/core"
	"colo/agent/profiling"
	"colo/machine"
	"colo/perfmetric"
	"colo/tenantprofile"
)

// fakeHost is a node whose tenants' throughput falls with the bubble's dial: tenant
// "sens" runs at 100/(1 + dial/16) per second, "flat" at 50 whatever the dial. Every
// scrape advances a virtual clock by one second, so rates are exact. The reporter's
// latency is 100 + dial + 3 for "sens" running (its own pressure: 3 MB).
type fakeHost struct {
	mu     sync.Mutex
	dial   float64
	now    map[string]time.Time
	work   map[string]float64
	extra  float64 // pressure the test adds after profiling (a neighbour)
	starts int
	paused map[string]bool
}

func (h *fakeHost) pause(c core.Container) (func() error, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.paused[c.Name] = true
	return func() error { h.mu.Lock(); delete(h.paused, c.Name); h.mu.Unlock(); return nil }, nil
}

func (h *fakeHost) rate(who string) float64 {
	if who == "flat" {
		return 50
	}
	return 100 / (1 + (h.dial+h.extra)/16)
}

func (h *fakeHost) bubble(ctx context.Context, mb float64, ready func()) error {
	h.mu.Lock()
	h.dial, h.starts = mb, h.starts+1
	h.mu.Unlock()
	ready()
	<-ctx.Done()
	h.mu.Lock()
	h.dial = 0
	h.mu.Unlock()
	return nil
}

func (h *fakeHost) reporter(context.Context) (float64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := 100 + h.dial
	if !h.paused["sens"] {
		v += 3
	}
	return v, nil
}

func (h *fakeHost) scrape(_ context.Context, url string) (perfmetric.Scrape, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	who := "sens"
	if strings.Contains(url, ":9200") {
		who = "flat"
	}
	h.now[who] = h.now[who].Add(time.Second)
	h.work[who] += h.rate(who)
	text := fmt.Sprintf("# TYPE work_total counter\nwork_total %g\n", h.work[who])
	return perfmetric.ParseText(strings.NewReader(text), h.now[who])
}

func TestManagerProfilesPredictsAndChecks(t *testing.T) {
	mp, err := machine.Get("icx-4314-2s")
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHost{now: map[string]time.Time{}, work: map[string]float64{}, paused: map[string]bool{}}
	store := tenantprofile.Store{Dir: t.TempDir()}
	m, err := New(Options{Store: store, Machine: mp, Node: "n1",
		Plan:    profiling.Plan{Dials: []float64{8, 16, 32}, Repeats: 2, MaxSpread: 0.2},
		Policy:  profiling.Policy{Classes: []string{"batch", "best-effort"}},
		Segment: time.Millisecond, Interval: time.Millisecond, Check: profiling.Check{Threshold: 5, Window: 3},
		Bubble: h.bubble, Reporter: h.reporter, Scrape: h.scrape, Pause: h.pause})
	if err != nil {
		t.Fatal(err)
	}
	cons := []core.Container{
		{ID: "a", Name: "sens", Image: "img", Digest: "sha256:aaa", Labels: map[string]string{perfmetric.Label: ":9100/metrics rate(work_total)"}},
		{ID: "b", Name: "flat", Image: "img2", Digest: "sha256:bbb", Labels: map[string]string{perfmetric.Label: ":9200/metrics rate(work_total)"}},
		{ID: "c", Name: "prio", Image: "img3", Digest: "sha256:ccc", Labels: map[string]string{perfmetric.Label: ":9300/metrics rate(work_total)"}},
		{ID: "d", Name: "blind", Image: "img4", Digest: "sha256:ddd"},
	}
	status := func() *api.Status {
		st := &api.Status{}
		for _, c := range cons {
			cl := core.Batch
			if c.Name == "prio" {
				cl = core.Priority
			}
			st.Containers = append(st.Containers, api.ContainerStatus{ID: c.ID, Name: c.Name, Request: core.Request{Class: cl}})
		}
		m.Annotate(st, cons)
		return st
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	var st *api.Status
	for {
		st = status()
		if st.Containers[0].ProfileState == "profiled" && st.Containers[1].ProfileState == "profiled" {
			break
		}
		select {
		case <-time.After(time.Millisecond):
		case <-time.After(time.Minute):
			t.Fatalf("not profiled: %+v", st.Containers)
		}
	}
	if st.ProfileRuns["profiled"] != 2 {
		t.Errorf("runs %v", st.ProfileRuns)
	}
	if s := st.Containers[2]; s.ProfileState != "none" || !strings.Contains(s.ProfileReason, "class priority") {
		t.Errorf("priority tenant: %s %q", s.ProfileState, s.ProfileReason)
	}
	if s := st.Containers[3]; s.ProfileState != "none" || !strings.Contains(s.ProfileReason, "CPU time is not progress") {
		t.Errorf("no metric: %s %q", s.ProfileState, s.ProfileReason)
	}
	ps, err := store.All()
	if err != nil || len(ps) != 2 {
		t.Fatalf("stored %d profiles: %v", len(ps), err)
	}
	for _, p := range m.Profiles() {
		sens := p.Key == KeyOf(cons[0])
		for i, d := range p.Dials {
			want := 1.0
			if sens {
				want = 1 / (1 + d/16)
			}
			if math.Abs(p.Perf[i]-want) > 1e-9 {
				t.Errorf("%s at %v MB: %v, want %v", p.Key, d, p.Perf[i], want)
			}
		}
		if sens && (math.Abs(p.Baseline-100) > 1e-9 || math.Abs(p.Score-3) > 1e-9) {
			t.Errorf("sens baseline %v score %v, want 100 and 3 MB", p.Baseline, p.Score)
		}
	}
	// Predictions: flat next to sens (score 3 MB on this reporter) → flat is insensitive;
	// sens next to flat (score 0) → 1.
	wantSlow := 1.0
	if p := st.Containers[0].PredictedSlowdown; p == nil || math.Abs(*p-wantSlow) > 1e-9 {
		t.Errorf("predicted slowdown %v, want %v", p, wantSlow)
	}
	// Measured slowdown and error: alone with flat, sens runs at its baseline as
	// predicted; once a neighbour adds 24 MB of pressure it does not, and after the
	// window the profile goes stale and is measured again.
	for {
		st = status()
		if e := st.Containers[0].PredictionError; e != nil && math.Abs(*e) < 1e-6 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	h.mu.Lock()
	h.extra = 24
	starts := h.starts
	h.mu.Unlock()
	for {
		status() // polls as the loop above does; only the restart count matters now
		h.mu.Lock()
		again := h.starts > starts
		h.mu.Unlock()
		if again {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
}

// BenchmarkProfilerOverhead is the profiler's cost per agent tick when it is not
// profiling: Annotate over 30 containers, 10 of them profiled (their predictions under
// the allocation), which is what the agent's tick adds.
func BenchmarkProfilerOverhead(b *testing.B) {
	mp, _ := machine.Get("icx-4314-2s")
	store := tenantprofile.Store{Dir: b.TempDir()}
	var cons []core.Container
	for i := range 30 {
		c := core.Container{ID: fmt.Sprintf("c%02d", i), Name: fmt.Sprintf("n%02d", i), Digest: fmt.Sprintf("sha256:%02d", i),
			Labels: map[string]string{perfmetric.Label: ":9100/metrics rate(work_total)"}}
		cons = append(cons, c)
		if i < 10 {
			p := tenantprofile.Profile{Key: KeyOf(c), Dials: []float64{0, 8, 16, 32}, Perf: []float64{1, 0.9, 0.8, 0.6}, Score: float64(i)}
			if err := store.Save(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	m, err := New(Options{Store: store, Machine: mp, Plan: profiling.Plan{Dials: []float64{8, 16, 32}, Repeats: 1},
		Policy: profiling.Policy{Classes: []string{"batch"}}, Segment: time.Second, Interval: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	st := &api.Status{}
	for i, c := range cons {
		st.Containers = append(st.Containers, api.ContainerStatus{ID: c.ID, Name: c.Name, Socket: i % 2, Ways: 4, Mask: "0xf",
			Request: core.Request{Class: core.Batch}})
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range st.Containers {
			st.Containers[i].PredictedSlowdown = nil
		}
		m.Annotate(st, cons)
	}
}
