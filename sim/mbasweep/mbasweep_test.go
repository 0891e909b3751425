package mbasweep

import (
	"math"
	"reflect"
	"testing"

	"colo/internal/machinetest"
	"colo/sim"
)

// TestSweep is the bandwidth must-show on the twin: requests from 10 % to 90 % of
// the socket's bandwidth on an Intel-like profile (the linear rule and the under-throttling
// curve) and an AMD-like one, each achieved within the selftest's 8 % once converged, and
// (under the curve) better than the plain percentage at the same nominal setting.
func TestSweep(t *testing.T) {
	for _, c := range []struct {
		name  string
		curve []float64
	}{{"icx-4314-2s", nil}, {"icx-4314-2s", sim.UnderThrottleMBACurve}, {"epyc-7543", nil}} {
		m := machinetest.Get(t, c.name)
		cfg := Config{Machine: m, Sim: sim.Options{Seed: 1, Noise: 0.01, MBACurve: c.curve}}
		rows, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 9 {
			t.Fatalf("%s: %d rows", c.name, len(rows))
		}
		for _, r := range rows {
			if math.Abs(r.Error) > 0.08 || r.ConvergedS < 0 || r.ConvergedS > 15 {
				t.Errorf("%s curve=%v %.0f %%: achieved %.0f of %.0f MB/s (%+.1f %%), converged at %d s",
					c.name, c.curve != nil, 100*r.Fraction, r.Achieved, r.Requested, 100*r.Error, r.ConvergedS)
			}
			if c.curve != nil && r.Fraction <= 0.8 && !(math.Abs(r.NominalError) > 0.08 && math.Abs(r.NominalError) > 3*math.Abs(r.Error)) {
				t.Errorf("%s under-throttling %.0f %%: the plain setting misses by %+.1f %%, the loop by %+.1f %%",
					c.name, 100*r.Fraction, 100*r.NominalError, 100*r.Error)
			}
		}
		again, err := Run(cfg)
		if err != nil || !reflect.DeepEqual(rows, again) {
			t.Errorf("%s: a second run with the same seed differs", c.name)
		}
	}
}
