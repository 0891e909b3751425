package mbmassign

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"colo/resctrl"
	"colo/resctrl/emu"
)

// TestAssignableCountersTenTenants: an AMD ABMC server with 4 counters per domain for
// 10 tenant groups (2 priority). Each period the rotor decides, the assignments are
// written to the emulator's mbm_L3_assignments, one interval of traffic runs and the
// counters are read. Priority tenants always hold counters; every other tenant is
// measured at least once per rotation; every bandwidth figure is the tenant's true
// traffic, and an unassigned read ("Unassigned") is never taken for a value.
func TestAssignableCountersTenTenants(t *testing.T) {
	p, err := emu.NamedProfile("amd-abmc")
	if err != nil {
		t.Fatal(err)
	}
	p.Mon.Counters = 4
	e, err := emu.New(p, emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := resctrl.New(e.FS(), resctrl.Options{AllowDefault: true, Prefix: "colo."})
	w := func(path, data string) {
		t.Helper()
		if err := e.WriteFile(path, []byte(data)); err != nil {
			t.Fatalf("write %q to %s: %v (%s)", data, path, err, e.LastCmdStatus())
		}
	}
	// the operator leaves every counter to the tenants, and none is taken on mkdir
	w("mbm_L3_assignments", "mbm_total_bytes:*=_\nmbm_local_bytes:*=_\n")
	w("info/L3_MON/mbm_assign_on_mkdir", "0\n")
	const n = 10
	traffic := func(i int) uint64 { return uint64(i+1) * 1000 } // bytes per domain per interval
	var ts []Tenant
	for i := 0; i < n; i++ {
		g := fmt.Sprintf("colo.t%d", i)
		if err := c.CreateGroup(g); err != nil {
			t.Fatal(err)
		}
		if err := c.AddTasks(g, 100+i); err != nil {
			t.Fatal(err)
		}
		ts = append(ts, Tenant{Name: g, Priority: i == 3 || i == 7})
	}
	e.SetSource(emu.SourceFunc(func(pid, dom int) emu.Sample {
		return emu.Sample{TotalBytes: traffic(pid - 100), CPU: -1}
	}))
	domains := len(p.L3IDs())
	total := func(g string) (uint64, bool) {
		md, err := c.MonData(g)
		if err != nil {
			t.Fatal(err)
		}
		var v uint64
		for _, d := range md {
			if slices.Contains(d.Unavailable, "mbm_total_bytes") {
				return 0, false
			}
			v += d.MBMTotalBytes
		}
		return v, true
	}
	r := NewRotor(4)
	lastMeasured := map[string]int{}
	var rotation int
	for period := 1; period <= 24; period++ {
		a, err := r.Next(ts)
		if err != nil {
			t.Fatal(err)
		}
		rotation = a.RotationPeriods
		for _, tn := range ts {
			if !slices.Contains(a.Hold, tn.Name) {
				w(tn.Name+"/mbm_L3_assignments", "mbm_total_bytes:*=_\n")
			}
		}
		for _, g := range a.Hold {
			w(g+"/mbm_L3_assignments", "mbm_total_bytes:*=e\n")
		}
		base := map[string]uint64{}
		for _, g := range a.Hold {
			v, ok := total(g)
			if !ok {
				t.Fatalf("period %d: %s holds a counter but reads Unassigned", period, g)
			}
			base[g] = v
		}
		e.Tick()
		for i := range ts {
			tn := &ts[i]
			v, ok := total(tn.Name)
			held := slices.Contains(a.Hold, tn.Name)
			if ok != held {
				t.Fatalf("period %d: %s holds=%v but read ok=%v", period, tn.Name, held, ok)
			}
			if !ok {
				continue // not measured this period: the last figure stays, marked stale
			}
			bw := float64(v - base[tn.Name])
			if want := float64(traffic(i) * uint64(domains)); bw != want {
				t.Fatalf("period %d: %s measured %v bytes, true traffic %v", period, tn.Name, bw, want)
			}
			tn.Bandwidth, tn.Measured = bw, true
			lastMeasured[tn.Name] = period
		}
		for _, tn := range ts {
			if tn.Priority && !slices.Contains(a.Hold, tn.Name) {
				t.Fatalf("period %d: priority tenant %s holds no counter", period, tn.Name)
			}
			if period > 2*rotation && period-lastMeasured[tn.Name] >= rotation+1 && !slices.Contains(a.Heavy, tn.Name) {
				t.Fatalf("period %d: %s last measured in period %d, rotation is %d periods", period, tn.Name, lastMeasured[tn.Name], rotation)
			}
		}
		if got, _ := e.ReadFile("info/L3_MON/available_mbm_cntrs"); string(got) != "0=0;1=0;2=0;3=0;4=0;5=0;6=0;7=0\n" {
			t.Fatalf("period %d: available counters %q (all four should be in use)", period, got)
		}
	}
	if rotation != 7 { // 4 counters: 2 priority, 1 heavy, 1 rotating over the 7 others
		t.Fatalf("rotation %d periods", rotation)
	}
	for _, tn := range ts {
		if !tn.Measured {
			t.Fatalf("%s never measured", tn.Name)
		}
	}
}

// TestRotationProperties: for random tenant sets and counter counts (30 seeds), priority
// tenants always hold counters, the counters in use never exceed the slots, and every
// other tenant holds one within every window of RotationPeriods+1 periods (heaviness
// changes randomly between periods).
func TestRotationProperties(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 3 + rng.IntN(20)
		slots := 1 + rng.IntN(n)
		var ts []Tenant
		prio := 0
		for i := 0; i < n; i++ {
			pr := prio < slots-1 && rng.IntN(4) == 0
			if pr {
				prio++
			}
			ts = append(ts, Tenant{Name: fmt.Sprintf("t%02d", i), Priority: pr})
		}
		r := NewRotor(slots)
		last := map[string]int{}
		for period := 1; period <= 60; period++ {
			for i := range ts {
				ts[i].Bandwidth, ts[i].Measured = rng.Float64()*1e9, rng.IntN(3) > 0
			}
			a, err := r.Next(ts)
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Hold) > slots {
				t.Fatalf("seed %d: %d held, %d slots", seed, len(a.Hold), slots)
			}
			for _, h := range a.Hold {
				last[h] = period
			}
			for _, tn := range ts {
				if tn.Priority && !slices.Contains(a.Hold, tn.Name) {
					t.Fatalf("seed %d period %d: priority %s unassigned", seed, period, tn.Name)
				}
				if a.RotationPeriods > 0 && period > a.RotationPeriods && period-last[tn.Name] > a.RotationPeriods {
					t.Fatalf("seed %d period %d: %s last held in %d, rotation %d (slots %d, n %d)", seed, period, tn.Name, last[tn.Name], a.RotationPeriods, slots, n)
				}
			}
		}
	}
	if _, err := NewRotor(1).Next([]Tenant{{Name: "a", Priority: true}, {Name: "b", Priority: true}}); err == nil {
		t.Fatal("two priority tenants on one counter accepted")
	}
}
