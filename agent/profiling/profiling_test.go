package profiling

import (
	"math"
	"strings"
	"testing"
)

func TestScheduleInterleaves(t *testing.T) {
	p := Plan{Dials: []float64{4, 8, 16}, Repeats: 2}
	s := p.Schedule()
	if len(s) != 2*2*3+1 {
		t.Fatalf("%d segments", len(s))
	}
	for i, seg := range s {
		if (i%2 == 0) != (seg.Dial == 0) {
			t.Fatalf("segment %d = %+v: baselines must alternate with pressure, A first and last", i, seg)
		}
	}
}

// A host whose performance drifts linearly in time (another tenant ramping up) leaves
// the curve exactly as without drift: each pressured segment is compared with the mean of
// the baselines around it.
func TestLinearDriftCancels(t *testing.T) {
	p := Plan{Dials: []float64{4, 8, 16}, Repeats: 3, MaxSpread: 0.5}
	truth := map[float64]float64{0: 1, 4: 0.9, 8: 0.7, 16: 0.5}
	segs := p.Schedule()
	perf := make([]float64, len(segs))
	for i, s := range segs {
		drift := 1 - 0.01*float64(i) // −1 % per segment
		perf[i] = 200 * truth[s.Dial] * drift
	}
	r, err := p.Evaluate(perf)
	if err != nil || r.Refused != "" {
		t.Fatalf("%+v %v", r, err)
	}
	for i, d := range r.Dials {
		// the ratio of a point to the mean of its linear neighbours is exact up to the
		// drift's curvature in the ratio: (1−x)/(1−x) = 1 for a linear drift
		if math.Abs(r.Perf[i]-truth[d]) > 1e-12 {
			t.Errorf("%v MB: %v, want %v", d, r.Perf[i], truth[d])
		}
	}
	// Without interleaving (all baselines first) the same drift biases the curve: the
	// naive reading is off by the drift accumulated since the baselines.
	naive := perf[1] / perf[0]
	if math.Abs(naive-truth[4]) < 0.005 {
		t.Errorf("naive %v too close to the truth: the test would not see a missing correction", naive)
	}
}

func TestNoisyRunRefused(t *testing.T) {
	p := Plan{Dials: []float64{8}, Repeats: 2, MaxSpread: 0.1}
	// Baselines 100, 130 around the first pressured segment: 26 % move.
	r, _ := p.Evaluate([]float64{100, 80, 130, 80, 100})
	if !strings.Contains(r.Refused, "too noisy") || r.Spread < 0.25 {
		t.Errorf("%+v", r)
	}
	r, _ = p.Evaluate([]float64{100, 80, 101, 81, 100})
	if r.Refused != "" || math.Abs(r.Perf[1]-0.8) > 0.01 || math.Abs(r.Baseline-100.333) > 0.01 {
		t.Errorf("%+v", r)
	}
	if r, _ := p.Evaluate([]float64{100, 0, 100, 80, 100}); !strings.Contains(r.Refused, "no progress") {
		t.Errorf("a zero segment: %+v", r)
	}
	if _, err := p.Evaluate([]float64{1}); err == nil {
		t.Error("wrong length accepted")
	}
}

func TestEligible(t *testing.T) {
	pol := Policy{Classes: []string{"batch", "best-effort"}}
	cases := []struct {
		t    Tenant
		ok   bool
		want string
	}{
		{Tenant{Class: "batch", PerfMetric: ":9100/metrics rate(x)"}, true, ""},
		{Tenant{Class: "batch", PMU: true}, true, ""},
		{Tenant{Class: "batch"}, false, "CPU time is not progress"},
		{Tenant{Class: "batch", PMU: true, HasProfile: true}, false, "profiled"},
		{Tenant{Class: "batch", PMU: true, HasProfile: true, NeedsProfile: true}, true, ""},
		{Tenant{Class: "priority", PMU: true}, false, "--profile-classes"},
	}
	for _, c := range cases {
		ok, why := Eligible(c.t, pol)
		if ok != c.ok || !strings.Contains(why, c.want) {
			t.Errorf("%+v: %v %q", c.t, ok, why)
		}
	}
	pol.Classes = append(pol.Classes, "priority")
	if ok, why := Eligible(Tenant{Class: "priority", PMU: true}, pol); ok || !strings.Contains(why, "labelled") {
		t.Errorf("priority on an unlabelled node: %v %q", ok, why)
	}
	pol.NodeForPriority = true
	if ok, _ := Eligible(Tenant{Class: "priority", PMU: true}, pol); !ok {
		t.Error("priority on a labelled node refused")
	}
}

func TestCheckWindow(t *testing.T) {
	c := Check{Threshold: 5, Window: 3}
	for i, e := range []float64{6, -7, 1, 6, 6} {
		if c.Observe(e) {
			t.Fatalf("stale after %d observations (the window restarts at an accurate one)", i+1)
		}
	}
	if !c.Observe(-9) {
		t.Error("three in a row beyond 5 pp not stale")
	}
}
