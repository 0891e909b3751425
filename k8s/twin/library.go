package twin

import (
	"fmt"
	"sync"

	"colo/k8s/placement"
	"colo/predict"
	"colo/predict/simprof"
)

// ProfileDials is the Bubble-Up dial grid of the twin's profiles: the thesis's 0–112 MB in
// steps of 4 MB.
func ProfileDials() []float64 {
	d := make([]float64, 29)
	for i := range d {
		d[i] = float64(4 * i)
	}
	return d
}

// LibrarySource names the twin's profile library (plugin argument profiles: twin).
const LibrarySource = "twin"

var (
	libOnce sync.Once
	lib     *placement.Library
	libErr  error
)

// Library returns the Bubble-Up profiles of every twin app, measured on the twin's
// machine (one socket, predict/simprof: the simulated reporter trained on the SoI dials,
// each app's sensitivity curve, and its contentiousness score as the reporter's latency
// next to it, inverted on the reporter curve, predict.ScoreOf with the linear method).
// These profiles are all colo's scheduler knows of the apps: the predictor. A phased
// app is measured over one whole loop of its phases. Deterministic; computed once per
// process.
func Library() (*placement.Library, error) {
	libOnce.Do(func() { lib, libErr = profileApps() })
	return lib, libErr
}

func profileApps() (*placement.Library, error) {
	p, err := NodeProfile()
	if err != nil {
		return nil, err
	}
	as, names, err := Apps()
	if err != nil {
		return nil, err
	}
	r, err := simprof.NewRunner("skx-6138", 1)
	if err != nil {
		return nil, err
	}
	r.Profile = p
	dials := ProfileDials()
	rows, err := r.ReporterCurve(dials)
	if err != nil {
		return nil, err
	}
	rep := predict.Curve{Name: "reporter", Dials: dials}
	for _, row := range rows {
		rep.Perf = append(rep.Perf, row.Avg)
	}
	long := *r
	long.Window = 2 * PhaseLength
	out := &placement.Library{Source: LibrarySource, Dials: dials, Profiles: map[string]placement.Profile{}}
	for _, n := range names {
		run := r
		if len(as[n].Workload.Phases) > 1 {
			run = &long
		}
		c, err := run.SensitivityCurve(n, as[n].Workload, dials)
		if err != nil {
			return nil, err
		}
		row, err := run.Contentiousness(n, as[n].Workload)
		if err != nil {
			return nil, err
		}
		pr := placement.Profile{ScoreMB: predict.ScoreOf(rep, n, row.Avg, predict.MethodLinear).MB, Slowdown: make([]float64, len(dials))}
		if c.Perf[0] <= 0 {
			return nil, fmt.Errorf("twin profile %s: isolated time %v", n, c.Perf[0])
		}
		for k, v := range c.Perf {
			pr.Slowdown[k] = v / c.Perf[0]
		}
		out.Profiles[n] = pr
	}
	return out, nil
}
