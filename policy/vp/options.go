// The controller's options, their defaults and validation.

package vp

import (
	"errors"
	"fmt"
	"time"

	"colo/machine"
)

// Options are the controller's parameters.
type Options struct {
	Thresholds
	// Period is the monitoring period (the VPM samples every 1 s, seed004.md §2.8).
	Period time.Duration
	// HurtThreshold: a slowdown against the phase reference above 1 + HurtThreshold is hurt
	// (10 %; the thesis says only "significant" hurt, seed004.md §2.3: colo's choice).
	HurtThreshold float64
	// PhaseThreshold: relative change of L2 MPKI that starts a new phase (50 %; colo's choice,
	// the thesis has no phase detector).
	PhaseThreshold float64
	// Window is the repercussion window in periods after each action (2; the thesis never
	// gives its length, seed004.md §2.6, §5: colo's choice).
	Window int
	// Saturation: a socket whose memory traffic exceeds this fraction of its bandwidth is
	// saturated (0.8 of machine.Profile.MemBWPerSocketMBps; the thesis's 100 L3 MPKI per node,
	// re-expressed in bytes as seed004.md §5.1 item 4 suggests).
	Saturation float64
	// ConfineWays is the size of the mask an aggressor is confined to (2; VP had no CAT, so
	// this rung is colo's RDT translation, seed004.md §5.1 item 1).
	ConfineWays int
	// MBAFloor is the lowest MBA value the ladder sets (the machine's minimum by default).
	MBAFloor int
	// QuotaStep and QuotaFloor: CPU quota is lowered by QuotaStep down to QuotaFloor
	// (10 % steps like the Xen credit-scheduler cap, seed004.md §1.3, §2.8; the floor 0.5 is
	// colo's choice).
	QuotaStep, QuotaFloor float64
	// Epsilon: an action with a repercussion is kept only if it lowers the weighted
	// min-max unfairness by more than Epsilon (0; Merlin's ε is not given, seed004.md §5).
	Epsilon float64
	// MFRise: a hurt workload outside the last row whose MF rose by more than this above the
	// lowest MF of its phase suffers from the cache even without a row change (0.05; seed004.md §5.3: "MF
	// rises while L2 MPKI stays flat" — the rows alone miss a rise inside one class).
	MFRise float64
	// SaturationExit: an open bandwidth episode continues while its victim is hurt and the
	// socket's traffic exceeds SaturationExit × Saturation × bandwidth (0.75; colo's choice).
	SaturationExit float64
	// RelaxAfter: a kept throttle is relaxed after its victim and its target's socket have
	// been free of hurt for this many periods (5; 0 never relaxes, as in the thesis).
	RelaxAfter int
	// Skip lists rungs the platform cannot actuate (e.g. CPU quota or moves inside a socket).
	Skip []Kind
}

// DefaultOptions returns the thesis's thresholds and colo's choices for the rest, for the
// given machine.
func DefaultOptions(m *machine.Profile) Options {
	o := Options{
		Thresholds:     DefaultThresholds(),
		Period:         time.Second,
		HurtThreshold:  0.10,
		PhaseThreshold: 0.5,
		Window:         2,
		Saturation:     0.8,
		ConfineWays:    2,
		QuotaStep:      0.1,
		QuotaFloor:     0.5,
		SaturationExit: 0.75,
		MFRise:         0.05,
		RelaxAfter:     5,
	}
	if m != nil && m.MBA != nil {
		o.MBAFloor = m.MBA.Min
	}
	return o
}

// Validate rejects options outside their meaning.
func (o Options) Validate(m *machine.Profile) error {
	errs := []error{o.Thresholds.Validate()}
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf("vp: "+f, a...)) }
	if o.Period <= 0 {
		bad("period = %v: must be positive (the thesis uses 1s)", o.Period)
	}
	if !(o.HurtThreshold > 0 && o.HurtThreshold < 1) {
		bad("hurt_threshold = %v: must be in (0, 1)", o.HurtThreshold)
	}
	if !(o.PhaseThreshold > 0) {
		bad("phase_threshold = %v: must be positive", o.PhaseThreshold)
	}
	if o.Window < 1 {
		bad("window = %d: the repercussion window needs at least 1 period", o.Window)
	}
	if !(o.Saturation > 0 && o.Saturation <= 1) {
		bad("saturation = %v: must be a fraction in (0, 1]", o.Saturation)
	}
	if !(o.QuotaStep > 0 && o.QuotaStep < 1) || !(o.QuotaFloor > 0 && o.QuotaFloor <= 1) {
		bad("quota step %v / floor %v: must be fractions in (0, 1)", o.QuotaStep, o.QuotaFloor)
	}
	if !(o.SaturationExit > 0 && o.SaturationExit <= 1) {
		bad("saturation_exit = %v: must be a fraction of saturation in (0, 1]", o.SaturationExit)
	}
	if !(o.MFRise > 0 && o.MFRise < 1) {
		bad("mf_rise = %v: must be in (0, 1)", o.MFRise)
	}
	if o.RelaxAfter < 0 {
		bad("relax_after = %d: must be ≥ 0 periods (0 never relaxes)", o.RelaxAfter)
	}
	if !(o.Epsilon >= 0) {
		bad("epsilon = %v: must be non-negative", o.Epsilon)
	}
	if m != nil {
		if o.ConfineWays < max(1, m.CAT.MinCBMBits) || o.ConfineWays >= m.LLC.Ways {
			bad("confine_ways = %d: must be in %d..%d on %s", o.ConfineWays, max(1, m.CAT.MinCBMBits), m.LLC.Ways-1, m.Name)
		}
		if m.MBA != nil && (o.MBAFloor < m.MBA.Min || o.MBAFloor > m.MBA.Max) {
			bad("mba_floor = %d: must be in %d..%d on %s", o.MBAFloor, m.MBA.Min, m.MBA.Max, m.Name)
		}
		if m.MemBWPerSocketMBps <= 0 {
			bad("machine %s has no memory bandwidth per socket; the saturation test needs it", m.Name)
		}
	}
	return errors.Join(errs...)
}
