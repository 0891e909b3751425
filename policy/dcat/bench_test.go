package dcat

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkDecision measures the controller's Step for one full control period (statistics, phase detection,
// categorisation, allocation, layout) for n workloads: 16 on a 20-way cache, 64 on a 64-way
// domain (one way each is the only way 64 tenants fit one LLC). Half the workloads grow
// (MLR-like), half stream or idle, so every path of the state machine runs.
func BenchmarkDecision(b *testing.B) {
	for _, tc := range []struct{ n, ways int }{{16, 20}, {64, 64}} {
		b.Run(fmt.Sprintf("workloads=%d", tc.n), func(b *testing.B) {
			opt := DefaultOptions(tc.ways)
			opt.MaxCLOS = tc.n + 1
			c, err := New(opt)
			if err != nil {
				b.Fatal(err)
			}
			apps := make([]app, tc.n)
			ways := map[string]int{}
			ids := make([]string, tc.n)
			for i := range apps {
				ids[i] = fmt.Sprintf("w%02d", i)
				if err := c.Add(ids[i], 1); err != nil {
					b.Fatal(err)
				}
				switch i % 3 {
				case 0:
					apps[i] = mlr(float64(4+i%8), 2.25, 0.5)
				case 1:
					apps[i] = mload()
				default:
					apps[i] = app{idleSpin: true, ipc: constant(1)}
				}
			}
			now := time.Duration(0)
			ss := make([]Sample, tc.n)
			timed := false
			step := func() {
				now += time.Second
				if timed {
					b.StopTimer()
				}
				for i, id := range ids {
					ss[i] = apps[i].sample(id, max(1, ways[id]), 1)
				}
				if timed {
					b.StartTimer()
				}
				d, _, err := c.Step(now, ss)
				if err != nil {
					b.Fatal(err)
				}
				for _, a := range d.Allocs {
					ways[a.ID] = a.Ways
				}
			}
			for i := 0; i < 30; i++ { // reach a steady state first
				step()
			}
			timed = true
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				step()
			}
		})
	}
}
