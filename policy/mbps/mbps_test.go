package mbps

import (
	"math"
	"testing"

	"colo/machine"
)

var (
	intel = machine.MBA{Min: 10, Max: 100, Gran: 10, Unit: machine.MBAPercent}
	amd   = machine.MBA{Min: 1, Max: 2048, Gran: 1, Unit: machine.MBAEighthGBps}
	mbpsU = machine.MBA{Min: 100, Max: 1 << 20, Gran: 1, Unit: machine.MBAMBps}
)

// plant is a group whose bandwidth is q · min(demand, ceiling(value)).
type plant struct {
	demand  float64
	ceiling func(v int) float64
}

func (p plant) bw(v int, q float64) float64 { return q * math.Min(p.demand, p.ceiling(v)) }

// concave is an Intel-like response that lets through more than the percentage says
// (the shape of intel-cmt-cat issue 277): 1 − (1 − v/100)², of 40 GB/s.
func concave(v int) float64 {
	f := float64(v) / 100
	if v >= 100 {
		return math.Inf(1)
	}
	return 40000 * (1 - (1-f)*(1-f))
}

func run(t *testing.T, c *Controller, p plant, periods int) (last Decision, changesAfter int, convergedAt int) {
	t.Helper()
	convergedAt = -1
	for i := 0; i < periods; i++ {
		v, q := c.Setting()
		d := c.Observe(p.bw(v, q))
		if d.State == Converged && convergedAt < 0 {
			convergedAt = i
		}
		if convergedAt >= 0 && d.Changed {
			changesAfter++
		}
		last = d
	}
	return
}

func TestConvergesIntelAMDAndMBps(t *testing.T) {
	cases := []struct {
		name string
		mba  machine.MBA
		p    plant
	}{
		{"intel-concave", intel, plant{demand: 30000, ceiling: concave}},
		{"intel-linear", intel, plant{demand: 30000, ceiling: func(v int) float64 {
			if v >= 100 {
				return math.Inf(1)
			}
			return 320 * float64(v)
		}}},
		{"amd", amd, plant{demand: 30000, ceiling: func(v int) float64 {
			if v >= 2048 {
				return math.Inf(1)
			}
			return 4 * 125 * float64(v) // four cores of a CCD at the per-core cap
		}}},
		{"mba_MBps", mbpsU, plant{demand: 30000, ceiling: func(v int) float64 { return 0.9 * float64(v) }}},
	}
	for _, tc := range cases {
		for _, req := range []float64{3000, 7500, 12000, 21000, 27000} {
			c, err := New(tc.mba, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			c.Request(req)
			d, changes, at := run(t, c, tc.p, 40)
			if d.State != Converged || math.Abs(d.Achieved-req) > 0.08*req {
				t.Errorf("%s %v MB/s: ended %s at %.0f MB/s (value %d quota %.3f)", tc.name, req, d.State, d.Achieved, d.Value, d.Quota)
			}
			if at < 0 || at > 12 {
				t.Errorf("%s %v MB/s: converged at period %d, want ≤ 12", tc.name, req, at)
			}
			if changes != 0 {
				t.Errorf("%s %v MB/s: %d changes after converging (oscillation)", tc.name, req, changes)
			}
		}
	}
}

func TestDemandBelowFloorAndCoarse(t *testing.T) {
	p := plant{demand: 5000, ceiling: concave}
	c, _ := New(intel, DefaultOptions())
	c.Request(8000)
	if d, _, _ := run(t, c, p, 10); d.State != DemandBelow || d.Value != 100 || d.Quota != 1 {
		t.Errorf("demand 5000 < request 8000: %+v, want demand-below-request unthrottled", d)
	}
	// a request below what the lowest value and quota give
	c, _ = New(intel, Options{Quota: true, MinQuota: 0.5})
	c.Request(500)
	if d, _, _ := run(t, c, plant{demand: 30000, ceiling: concave}, 30); d.State != Floor || d.Value != 10 || d.Quota != 0.5 {
		t.Errorf("request below the floor: %+v, want floor at 10 %% and quota 0.5", d)
	}
	// no quota: a request between two grid values is coarse, on the higher one
	c, _ = New(intel, Options{})
	c.Request(18000) // 20 % → 14400, 30 % → 20400
	d, _, _ := run(t, c, plant{demand: 30000, ceiling: concave}, 20)
	if d.State != Coarse || d.Value != 30 || d.Quota != 1 {
		t.Errorf("no quota, 18000 between 14400 and 20400: %+v, want coarse at 30 %%", d)
	}
}

func TestPhaseChangeRestarts(t *testing.T) {
	c, _ := New(intel, DefaultOptions())
	c.Request(12000)
	p := plant{demand: 30000, ceiling: concave}
	run(t, c, p, 20)
	// the tenant's demand drops below the request, then comes back higher
	p.demand = 9000
	d, _, _ := run(t, c, p, 20)
	if d.State != DemandBelow {
		t.Errorf("demand 9000 < 12000: %+v", d)
	}
	p.demand = 50000
	d, changes, _ := run(t, c, p, 30)
	if d.State != Converged || math.Abs(d.Achieved-12000) > 0.08*12000 || changes != 0 {
		t.Errorf("after the phase change: %+v (%d changes after converging)", d, changes)
	}
}

func TestOffUnthrottles(t *testing.T) {
	c, _ := New(amd, DefaultOptions())
	c.Request(4000)
	run(t, c, plant{demand: 30000, ceiling: func(v int) float64 { return 500 * float64(v) }}, 10)
	c.Request(0)
	d := c.Observe(4000)
	if d.State != Off || d.Value != 2048 || d.Quota != 1 {
		t.Errorf("no request: %+v, want off at 2048", d)
	}
}

func TestSplit(t *testing.T) {
	got := Split(nil, 100, []float64{10, 80, 40, 60})
	// level L: 10 + 3L = 100 → L = 30
	want := []float64{10, 30, 30, 30}
	sum := 0.0
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Errorf("Split: %v, want %v", got, want)
			break
		}
		sum += got[i]
	}
	if math.Abs(sum-100) > 1e-9 {
		t.Errorf("Split adds to %v", sum)
	}
	got = Split(got, 200, []float64{10, 20})
	if got[0] != 95 || got[1] != 105 {
		t.Errorf("Split of an excess: %v, want [95 105]", got)
	}
	if a := testing.AllocsPerRun(10, func() { Split(got, 50, []float64{30, 40}) }); a != 0 {
		t.Errorf("Split allocates %v", a)
	}
}
