// Package simprof runs the Bubble-Up measurements on the simulated machine (colo/sim): the
// SoI is two analytic workloads (a streaming copy and an LFSR-style random read-modify-write,
// half the dial's working set each, on two cores of the application's socket), the reporter
// is an analytic alternating reporter, and an application's performance is its time per
// kilo-instruction over a measurement window of virtual time. Every measurement builds a
// fresh machine from the same seed, so results are deterministic and independent.
package simprof

import (
	"fmt"
	"time"

	"colo/machine"
	"colo/predict"
	"colo/sim"
)

// Runner holds the simulated placement and timing.
type Runner struct {
	Profile *machine.Profile
	Seed    uint64
	Noise   float64
	// AppCores run the application (one workload per core) and the reporter; SoICores
	// (two cores) the SoI's streaming and random halves; CompCores the background
	// competitor. All must be on one socket (one LLC domain).
	AppCores, SoICores, CompCores []int
	// Warmup is virtual time before measuring (caches fill); Window the measured span.
	Warmup, Window time.Duration
	// ReporterMB is the reporter's footprint (alternating: half streaming, half random).
	ReporterMB float64
	// ReporterType is the reporter design: "alternating" (default, thesis Type 3),
	// "random" (Type 2: the random read-modify-write model alone over ReporterMB) or
	// "streaming" (Type 1: the streaming model alone).
	ReporterType string
}

// NewRunner returns a runner on profile name with the thesis's placement mapped to the
// first cores of socket 0: app/reporter core 0, SoI cores 1–2, competitor core 1.
func NewRunner(name string, seed uint64) (*Runner, error) {
	p, err := machine.Get(name)
	if err != nil {
		return nil, err
	}
	if p.CoresPerDomain() < 3 {
		return nil, fmt.Errorf("machine %s has %d cores per LLC domain; the simulated SoI needs 3", name, p.CoresPerDomain())
	}
	return &Runner{Profile: p, Seed: seed, Noise: 0.01, AppCores: []int{0}, SoICores: []int{1, 2}, CompCores: []int{1},
		Warmup: time.Second, Window: 2 * time.Second,
		ReporterMB: float64(2*p.LLC.SizeBytes) / 1e6}, nil
}

// SoI returns the simulated source of interference at dial mb (MB of 10^6 bytes): a
// streaming copy (sequential, prefetched) and a random read-modify-write workload over
// mb/2 each (the stress.KindSoI split).
func SoI(mb float64) (stream, random sim.Workload) {
	half := int64(mb * 1e6 / 2)
	stream = sim.Single(&sim.Analytic{Label: fmt.Sprintf("soi-stream-%gMB", mb), WorkingSetBytes: max(half, 64),
		Pattern: sim.Sequential, PageBytes: sim.Page4K, BaseCPI: 0.5, BaseStallFrac: 0.05, APKI: 62, MLP: 10,
		BytesPerMiss: 128, Loads: 0.5}, 1)
	random = sim.Single(&sim.Analytic{Label: fmt.Sprintf("soi-random-%gMB", mb), WorkingSetBytes: max(half, 64),
		Pattern: sim.Random, PageBytes: sim.Page4K, BaseCPI: 0.6, BaseStallFrac: 0.1, APKI: 60, MLP: 4,
		BytesPerMiss: 128, Loads: 0.4}, 1)
	return
}

// Reporter is the simulated alternating reporter: a streaming phase and a random phase over
// mb/2 each, 100 ms apiece, looping (thesis Type 3).
func Reporter(mb float64) sim.Workload {
	s, r := SoI(mb)
	return sim.Workload{Name: fmt.Sprintf("reporter-%gMB", mb), Loop: true, Threads: 1,
		Phases: []sim.Phase{{Model: s.Phases[0].Model, Duration: 100 * time.Millisecond}, {Model: r.Phases[0].Model, Duration: 100 * time.Millisecond}}}
}

// reporter is the runner's reporter workload.
func (r *Runner) reporter() sim.Workload {
	s, rnd := SoI(2 * r.ReporterMB)
	switch r.ReporterType {
	case "random":
		return rnd
	case "streaming":
		return s
	}
	return Reporter(r.ReporterMB)
}

// measure runs app on AppCores next to the given background workloads and returns its time
// per kilo-instruction in ns over Window after Warmup.
func (r *Runner) measure(app sim.Workload, bg []sim.Workload, bgCores [][]int) (float64, error) {
	return r.measureWith(app, bg, bgCores, nil)
}

// measureWith is measure with setup (if not nil) run on the machine once every workload
// is placed (e.g. to partition the LLC).
func (r *Runner) measureWith(app sim.Workload, bg []sim.Workload, bgCores [][]int, setup func(m *sim.Machine, app sim.ID, bg []sim.ID) error) (float64, error) {
	m, err := sim.New(r.Profile, sim.Options{Seed: r.Seed, Noise: r.Noise})
	if err != nil {
		return 0, err
	}
	id, err := m.AddWorkload(app, r.AppCores)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", app.Name, err)
	}
	bgIDs := make([]sim.ID, len(bg))
	for i, w := range bg {
		if bgIDs[i], err = m.AddWorkload(w, bgCores[i]); err != nil {
			return 0, fmt.Errorf("%s on cores %v: %w", w.Name, bgCores[i], err)
		}
	}
	if setup != nil {
		if err := setup(m, id, bgIDs); err != nil {
			return 0, err
		}
	}
	m.Step(r.Warmup)
	var inst, cyc float64
	const step = 50 * time.Millisecond
	for t := time.Duration(0); t < r.Window; t += step {
		for _, c := range m.Step(step) {
			if c.ID == id {
				inst += float64(c.Instructions)
				cyc += float64(c.Cycles)
			}
		}
	}
	if inst == 0 {
		return 0, fmt.Errorf("%s retired no instructions", app.Name)
	}
	// Cycles per kilo-instruction at the profile's clock, in ns (latency-like: lower is better).
	return 1000 * cyc / inst / r.Profile.ClockGHz, nil
}

func (r *Runner) withSoI(app sim.Workload, mb float64) (float64, error) {
	if mb == 0 {
		return r.measure(app, nil, nil)
	}
	s, rnd := SoI(mb)
	return r.measure(app, []sim.Workload{s, rnd}, [][]int{{r.SoICores[0]}, {r.SoICores[1]}})
}

// SensitivityCurve measures app with the SoI at each dial.
func (r *Runner) SensitivityCurve(name string, app sim.Workload, dials []float64) (predict.Curve, error) {
	c := predict.Curve{Name: name}
	for _, d := range dials {
		v, err := r.withSoI(app, d)
		if err != nil {
			return c, err
		}
		c.Dials = append(c.Dials, d)
		c.Perf = append(c.Perf, v)
	}
	return c, nil
}

// ReporterCurve trains the simulated reporter on the dials.
func (r *Runner) ReporterCurve(dials []float64) ([]predict.ReporterRow, error) {
	var rows []predict.ReporterRow
	for _, d := range dials {
		v, err := r.withSoI(r.reporter(), d)
		if err != nil {
			return nil, err
		}
		rows = append(rows, predict.ReporterRow{Key: fmt.Sprint(d), Avg: v, Functions: map[string]float64{}})
	}
	return rows, nil
}

// Contentiousness measures the reporter next to comp.
func (r *Runner) Contentiousness(name string, comp sim.Workload) (predict.ReporterRow, error) {
	v, err := r.measure(r.reporter(), []sim.Workload{comp}, [][]int{r.CompCores})
	return predict.ReporterRow{Key: name, Avg: v, Functions: map[string]float64{}}, err
}

// CoRun returns app's measured normalised performance next to comp, t_iso / t_co.
func (r *Runner) CoRun(app, comp sim.Workload) (float64, error) {
	iso, err := r.measure(app, nil, nil)
	if err != nil {
		return 0, err
	}
	co, err := r.measure(app, []sim.Workload{comp}, [][]int{r.CompCores})
	if err != nil {
		return 0, err
	}
	return predict.NormalisedPerf(iso, co), nil
}

// CoRunMany returns app's measured normalised performance next to several competitors,
// each on its own core (CompCores[0], then the following cores of the socket).
func (r *Runner) CoRunMany(app sim.Workload, comps []sim.Workload) (float64, error) {
	iso, err := r.measure(app, nil, nil)
	if err != nil {
		return 0, err
	}
	cores := make([][]int, len(comps))
	for i := range comps {
		cores[i] = []int{r.CompCores[0] + i}
	}
	co, err := r.measure(app, comps, cores)
	if err != nil {
		return 0, err
	}
	return predict.NormalisedPerf(iso, co), nil
}
