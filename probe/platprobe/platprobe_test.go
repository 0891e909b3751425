package platprobe

import (
	"context"
	"strings"
	"testing"
	"time"

	"colo/machine"
	"colo/platform"
	simplatform "colo/platform/sim"
	"colo/probe"
	"colo/sim"
)

func testbed(t *testing.T) *simplatform.Platform {
	t.Helper()
	var pf *simplatform.Platform
	m, err := machine.Get("icx-4314-2s")
	if err == nil {
		pf, err = simplatform.New(m, sim.Options{Seed: 1, Noise: 0.01})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pf.Close() })
	if err := pf.Start(platform.Job{ID: 1, Workload: "neighbor:6M:1g", Cores: 1}, []int{0}); err != nil {
		t.Fatal(err)
	}
	return pf
}

// An isolated probe through the platform's capabilities: the target and the neighbour
// share the partition while it runs, and afterwards the platform holds what it held
// before (the target in system/default at the full mask, no group, no neighbour left).
func TestIsolatedProbeRestoresThePlatform(t *testing.T) {
	pf := testbed(t)
	before := pf.Emulator().State()
	c := Config{Probe: probe.DefaultSensitivityConfig(), Target: 1, NeighbourCPUs: []int{1}, TenantCPUs: []int{15}, Settle: TenantSettle}
	r, err := Run(context.Background(), pf, c)
	if err != nil {
		t.Fatal(err)
	}
	if r.IPCE.LLC < 0.3 || r.Base.Samples != 40 {
		t.Fatalf("ς_LLC %.3f with %d baseline samples: the partition was not probed", r.IPCE.LLC, r.Base.Samples)
	}
	if a, err := pf.ReadAllocation(1); err != nil || a.Group != "" {
		t.Fatalf("target left in %+v (%v)", a, err)
	}
	after := pf.Emulator().State()
	if len(after.Groups) != len(before.Groups) || after.Groups[0].Schemata["L3"][0] != before.Groups[0].Schemata["L3"][0] {
		t.Fatalf("groups after the probe %+v, before %+v", after.Groups, before.Groups)
	}
	// the probe took 12 s of segments plus the settle time
	if want := 13 * time.Second; pf.Now() != want {
		t.Fatalf("clock at %v, want %v", pf.Now(), want)
	}
	// the stressor cores are free again: a second probe runs the same
	again, err := Run(context.Background(), pf, c)
	if err != nil || again.Base.Samples != 40 {
		t.Fatalf("second probe: %+v %v", again.Base, err)
	}
}

// noNeighbours is a platform without the NeighbourRunner capability.
type noNeighbours struct{ platform.Platform }

func TestProbeNamesTheMissingCapability(t *testing.T) {
	pf := testbed(t)
	_, err := Run(context.Background(), noNeighbours{pf}, Config{Probe: probe.DefaultSensitivityConfig(), Target: 1, NeighbourCPUs: []int{1}})
	if err == nil || !strings.Contains(err.Error(), "NeighbourRunner") {
		t.Fatalf("err %v, want the missing NeighbourRunner named", err)
	}
}
