package guard

import (
	"fmt"
	"strings"
	"testing"
)

// plant is a victim ("v", SLO 8 ms) and three best-effort neighbours: "a" with a steady
// large bandwidth, "c" changing phase every three periods, and "b" that starts at period
// 5 and hurts the victim through the resource resp (MBA or ways) while its signals say sig.
type plant struct {
	c       *Controller
	resp    Rung // what really hurts the victim: b's bandwidth (MBA) or its cache (Ways)
	bMBMBig bool // b's bandwidth is a large share (the blame's strongest signal)
	log     []Action
}

func newPlant(t *testing.T, resp Rung, bMBMBig bool) *plant {
	c, err := New(DefaultOptions(11, 10, 100, 10))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"v", "a", "b", "c"} {
		if err := c.Add(id, Tenant{Priority: id == "v", SLOms: map[bool]float64{true: 8}[id == "v"]}); err != nil {
			t.Fatal(err)
		}
	}
	return &plant{c: c, resp: resp, bMBMBig: bMBMBig}
}

// step runs period p and returns the victim's latency.
func (p *plant) step(period int) float64 {
	k, _ := p.c.Knobs("b")
	on := period >= 5
	pressure := 0.0
	if on {
		switch p.resp {
		case MBA:
			pressure = float64(k.MBA) / 100 * k.Quota
		case Ways:
			pressure = float64(k.Ways) / 11
		}
	}
	cpi := 1 + 2*pressure
	lat := 4.6 * cpi
	bMBM, bOcc := 0.0, 0.0
	if on {
		bMBM = 3000 * float64(k.MBA) / 100 * k.Quota
		if p.bMBMBig {
			bMBM *= 10
		}
		bOcc = 1e6 * float64(k.Ways)
		if p.bMBMBig {
			bOcc /= 50
		}
	}
	cMBM := 2000.0
	if period/3%2 == 1 {
		cMBM = 4000
	}
	obs := []Obs{
		{ID: "v", LatencyMs: lat, CPI: cpi, MBM: 500, Occupancy: 4e6, CPU: 2},
		{ID: "a", CPI: 1, MBM: 20000, Occupancy: 2e6, CPU: 4},
		{ID: "b", CPI: 1, MBM: bMBM, Occupancy: bOcc, CPU: map[bool]float64{true: 2}[on]},
		{ID: "c", CPI: 1, MBM: cMBM, Occupancy: 3e6, CPU: 2},
	}
	p.log = append(p.log, p.c.Step(obs)...)
	return lat
}

func kinds(acts []Action) string {
	var s []string
	for _, a := range acts {
		s = append(s, fmt.Sprintf("%s:%s:%s", a.Kind, a.Tenant, a.Rung))
	}
	return strings.Join(s, " ")
}

// The antagonist is found among three neighbours and throttled on the rung its signal
// points to; the victim is back under its SLO after the first repercussion window and
// stays there while growth gives steps back (a growth that breaks the target is undone).
func TestBlameThrottleGrowUndo(t *testing.T) {
	p := newPlant(t, MBA, true)
	var lat []float64
	for i := 0; i < 60; i++ {
		lat = append(lat, p.step(i))
	}
	if len(p.log) == 0 || p.log[0].Kind != KindThrottle || p.log[0].Tenant != "b" || p.log[0].Rung != MBA {
		t.Fatalf("first action %q, want a throttle of b's MBA", kinds(p.log))
	}
	if !(lat[5] > 8) {
		t.Fatalf("the plant does not hurt the victim: %v", lat[5])
	}
	for i := 5 + 1 + 3; i < len(lat); i++ {
		if lat[i] > 8 {
			t.Errorf("period %d: latency %.2f ms over the 8 ms SLO after the first window (%s)", i, lat[i], kinds(p.log))
		}
	}
	grew, undone := false, false
	for _, a := range p.log {
		if a.Tenant != "b" && a.Kind != KindKeep {
			t.Errorf("action on an innocent neighbour: %+v", a)
		}
		grew = grew || a.Kind == KindGrow
		undone = undone || (a.Kind == KindUndo && strings.Contains(a.Evidence, "growth"))
	}
	if !grew || !undone {
		t.Errorf("want growth and an undone growth step: %s", kinds(p.log))
	}
}

// A throttle that does not help is undone and another rung tried: here b's bandwidth is
// the strongest signal but only its cache hurts (neither its MBA nor its CPU quota).
func TestUselessRungUndone(t *testing.T) {
	p := newPlant(t, Ways, true)
	var lat []float64
	for i := 0; i < 30; i++ {
		lat = append(lat, p.step(i))
	}
	got := kinds(p.log)
	if !strings.HasPrefix(got, "throttle:b:mba undo:b:mba throttle:b:") || !strings.Contains(got, "throttle:b:ways keep:b:ways") {
		t.Errorf("actions %q: want b's MBA throttled first, undone as useless, and other rungs until its ways help", got)
	}
	if lat[len(lat)-1] > 8 {
		t.Errorf("victim still at %.2f ms", lat[len(lat)-1])
	}
}

func TestOptionsValidate(t *testing.T) {
	o := DefaultOptions(11, 10, 100, 10)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(*Options){
		func(o *Options) { o.Window = 2 },
		func(o *Options) { o.Window = 1 << 30 },
		func(o *Options) { o.GrowSlack = o.Slack },
		func(o *Options) { o.QuotaFloor = 0 },
		func(o *Options) { o.WaysFloor = 12 },
		func(o *Options) { o.MBAFloor = 200 },
	} {
		x := o
		bad(&x)
		if x.Validate() == nil {
			t.Errorf("%+v validated", x)
		}
	}
	if err := DefaultOptions(11, 0, 0, 0).Validate(); err != nil {
		t.Errorf("no MBA: %v", err)
	}
}

// BenchmarkDecision is one guard period for 30 tenants (3 victims, 27 best-effort): quiet
// periods (no action) and the blame of an action.
func BenchmarkDecision(b *testing.B) {
	mk := func() (*Controller, []Obs) {
		c, _ := New(DefaultOptions(11, 10, 100, 10))
		var obs []Obs
		for i := 0; i < 30; i++ {
			id := fmt.Sprintf("t%02d", i)
			prio := i%10 == 0
			_ = c.Add(id, Tenant{Socket: i % 2, Priority: prio, SLOms: map[bool]float64{true: 10}[prio]})
			obs = append(obs, Obs{ID: id, LatencyMs: 3, CPI: 1, MBM: 1000 + 100*float64(i), Occupancy: 1e6, CPU: 1})
		}
		return c, obs
	}
	b.Run("tenants=30/quiet", func(b *testing.B) {
		c, obs := mk()
		b.ReportAllocs()
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			for i := range obs {
				obs[i].MBM = 1000 + 100*float64(i) + float64(n%7)
			}
			c.Step(obs)
		}
	})
	b.Run("tenants=30/blame", func(b *testing.B) {
		b.ReportAllocs()
		for n := 0; n < b.N; n++ {
			b.StopTimer()
			c, obs := mk()
			// t04 (socket 0, as the victim) turns into a hog at period 6 and the victim t00's CPI follows it
			for k := 0; k < 12; k++ {
				for i := range obs {
					obs[i].MBM = 1000 + 100*float64(i) + float64(k*i%5)
				}
				if k >= 6 {
					obs[4].MBM, obs[0].CPI = 40000, 2
				}
				c.Step(obs)
			}
			obs[0].LatencyMs, obs[0].CPI = 20, 3
			b.StartTimer()
			if len(c.Step(obs)) == 0 {
				b.Fatal("no action")
			}
		}
	})
}
