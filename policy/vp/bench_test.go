package vp

import (
	"fmt"
	"testing"
	"time"

	"colo/internal/machinetest"
)

// BenchmarkDecision measures one period (the controller's Step only, not the test plant) (classification of every workload, hurt detection,
// the ladder's choice and a repercussion window) for 16 and 64 single-core workloads on a
// two-socket machine with 32 cores per socket (icx-4314-2s widened to hold 64).
func BenchmarkDecision(b *testing.B) {
	base := machinetest.Get(b, "icx-4314-2s")
	m := *base
	m.CoresPerSocket = 32
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("workloads=%d", n), func(b *testing.B) {
			c, err := New(&m, DefaultOptions(&m))
			if err != nil {
				b.Fatal(err)
			}
			p := &plant{m: &m, apps: map[string]*papp{}, cfg: map[string]Config{}}
			for i := 0; i < n; i++ {
				id := fmt.Sprintf("w%02d", i)
				var a *papp
				switch i % 4 {
				case 0:
					a = &papp{ipc0: 1, l2mpki: 20, mf0: 0.15, cacheSens: 0.35, bwGBs: 3, memSens: 0.6, on: true}
				case 1:
					a = &papp{ipc0: 0.5, l2mpki: 40, mf0: 0.95, streaming: true, bwGBs: 6, memSens: 0.2, on: i < n/2}
				case 2:
					a = &papp{ipc0: 0.4, l2mpki: 60, mf0: 0.9, bwGBs: 9, memSens: 0.1, on: true}
				default:
					a = &papp{ipc0: 2, l2mpki: 1, mf0: 0.1, bwGBs: 0.1, on: true}
				}
				p.apps[id] = a
				cpu := (i%2)*32 + i/2
				if err := c.Add(id, 1, []int{cpu}); err != nil {
					b.Fatal(err)
				}
			}
			now := time.Duration(0)
			timed := false
			step := func() {
				now += time.Second
				if timed {
					b.StopTimer()
				}
				ss := p.samples(1)
				if timed {
					b.StartTimer()
				}
				d, _, err := c.Step(now, ss)
				if err != nil {
					b.Fatal(err)
				}
				for _, cf := range d.Configs {
					p.cfg[cf.ID] = cf
				}
			}
			d, _, _ := c.Step(0, nil)
			for _, cf := range d.Configs {
				p.cfg[cf.ID] = cf
			}
			for i := 0; i < 5; i++ {
				step()
			}
			for id, a := range p.apps { // aggressors start: hurt appears, the ladder works
				if a.streaming {
					p.apps[id].on = true
				}
			}
			timed = true
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				step()
			}
		})
	}
}
