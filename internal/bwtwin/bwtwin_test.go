package bwtwin

import (
	"math"
	"testing"

	"colo/internal/machinetest"
	"colo/machine"
	"colo/policy/mbps"
	"colo/resctrl"
	"colo/resctrl/emu"
	"colo/sim"
)

// The MB/s loop end to end through the real resctrl client and the validating emulator,
// on counters that respond to its own MB writes (the twin behind mbm_total_bytes): on an
// Intel percentage mount (linear and under-throttling response), an AMD 1/8 GB/s mount
// and an mba_MBps mount, the request is met within the selftest's 8 % (or, on a grid too
// coarse without a CPU quota, the loop says so), and every MB value it decided reads back
// from the group's schemata.
func TestLoopThroughResctrl(t *testing.T) {
	const pid = 4242
	cases := []struct {
		name, machine, variant string
		mba                    machine.MBA
		curve                  []float64
		request, demand        float64
		want                   mbps.State
	}{
		{"intel", "icx-4314-2s", "", machine.MBA{Min: 10, Max: 100, Gran: 10, Unit: machine.MBAPercent}, nil, 12000, 30000, mbps.Converged},
		{"intel-under-throttle", "icx-4314-2s", "", machine.MBA{Min: 10, Max: 100, Gran: 10, Unit: machine.MBAPercent}, sim.UnderThrottleMBACurve, 15000, 30000, mbps.Coarse},
		{"amd", "epyc-7543", "", machine.MBA{Min: 1, Max: 2048, Gran: 1, Unit: machine.MBAEighthGBps}, nil, 7000, 30000, mbps.Converged},
		{"mba_MBps", "icx-4314-2s", emu.VariantMBps, machine.MBA{Min: 100, Max: 1 << 20, Gran: 1, Unit: machine.MBAMBps}, nil, 9000, 30000, mbps.Converged},
		{"demand-below", "icx-4314-2s", "", machine.MBA{Min: 10, Max: 100, Gran: 10, Unit: machine.MBAPercent}, nil, 12000, 8000, mbps.DemandBelow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := machinetest.Get(t, tc.machine)
			ep, err := emu.ProfileFromMachine(m, tc.variant)
			if err != nil {
				t.Fatal(err)
			}
			rule := RuleFor(tc.mba, 40000, tc.curve)
			tw := New(rule)
			e, err := emu.New(ep, emu.Options{Source: tw})
			if err != nil {
				t.Fatal(err)
			}
			rc := resctrl.New(e.FS(), resctrl.Options{Prefix: "colo.bw."})
			g := "colo.bw.hog"
			if err := rc.CreateGroup(g); err != nil {
				t.Fatal(err)
			}
			if err := rc.AddTasks(g, pid); err != nil {
				t.Fatal(err)
			}
			tw.SetTask(pid, tc.demand, 0)
			sch, _ := rc.Schemata(g)
			if v, ok := sch.Get("MB", 0); ok {
				tw.SetValue(pid, int(v))
			}
			o := mbps.DefaultOptions()
			o.Quota = false // the twin has no CPU time to take
			c, err := mbps.New(tc.mba, o)
			if err != nil {
				t.Fatal(err)
			}
			c.Request(tc.request)
			var last uint64
			var d mbps.Decision
			for i := 0; i < 30; i++ {
				tw.Advance(1)
				e.Tick()
				md, err := rc.MonData(g)
				if err != nil {
					t.Fatal(err)
				}
				var tot uint64
				for _, x := range md {
					tot += x.MBMTotalBytes
				}
				a := float64(tot-last) / 1e6
				last = tot
				if i == 0 {
					continue // the first read has no interval
				}
				d = c.Observe(a)
				if d.Changed {
					if err := rc.SetSchemata(g, resctrl.Schemata{{Resource: "MB", Values: []resctrl.DomainValue{{Domain: 0, Value: uint64(d.Value)}}}}); err != nil {
						t.Fatalf("writing MB %d: %v", d.Value, err)
					}
				}
				sch, err := rc.Schemata(g)
				if err != nil {
					t.Fatal(err)
				}
				v, _ := sch.Get("MB", 0)
				if int(v) != d.Value {
					t.Fatalf("period %d: MB reads back %d, the loop decided %d", i, v, d.Value)
				}
				tw.SetValue(pid, int(v))
			}
			if d.State != tc.want {
				t.Fatalf("ended %s (%+v), want %s", d.State, d, tc.want)
			}
			switch tc.want {
			case mbps.Converged:
				if math.Abs(d.Achieved-tc.request) > 0.08*tc.request {
					t.Errorf("achieved %.0f of %.0f MB/s", d.Achieved, tc.request)
				}
			case mbps.Coarse:
				// the smallest grid value that gives at least the request
				if d.Achieved < tc.request || d.Achieved != rule(d.Value) || rule(d.Value-tc.mba.Gran) >= tc.request {
					t.Errorf("coarse at MB %d giving %.0f for %.0f", d.Value, d.Achieved, tc.request)
				}
			case mbps.DemandBelow:
				if d.Achieved != tc.demand || d.Value != tc.mba.Max {
					t.Errorf("demand below: %+v", d)
				}
			}
		})
	}
}
