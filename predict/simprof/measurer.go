package simprof

import (
	"context"
	"fmt"

	"colo/predict"
	"colo/sim"
)

// Measurer is the simulated predict.Measurer: an app's command is a simulated workload
// name (sim.WorkloadNames, e.g. neighbor:6M:1g).
type Measurer struct{ R *Runner }

var _ predict.Measurer = Measurer{}

// Workload parses an app's command as a simulated workload.
func Workload(a predict.App) (sim.Workload, error) {
	w, err := sim.ParseWorkload(a.Cmd, 1, nil)
	if err != nil {
		return w, fmt.Errorf("--app %s=%s: %w", a.Name, a.Cmd, err)
	}
	return w, nil
}

// ReporterCurve is Runner.ReporterCurve.
func (s Measurer) ReporterCurve(_ context.Context, dials []float64) ([]predict.ReporterRow, error) {
	return s.R.ReporterCurve(dials)
}

// SensitivityCurve is Runner.SensitivityCurve of the app's workload.
func (s Measurer) SensitivityCurve(_ context.Context, a predict.App, dials []float64) (predict.Curve, error) {
	w, err := Workload(a)
	if err != nil {
		return predict.Curve{}, err
	}
	return s.R.SensitivityCurve(a.Name, w, dials)
}

// Contentiousness is Runner.Contentiousness of the app's workload.
func (s Measurer) Contentiousness(_ context.Context, a predict.App) (predict.ReporterRow, error) {
	w, err := Workload(a)
	if err != nil {
		return predict.ReporterRow{}, err
	}
	return s.R.Contentiousness(a.Name, w)
}

// CoRun is Runner.CoRun of the two apps' workloads.
func (s Measurer) CoRun(_ context.Context, a, c predict.App) (float64, error) {
	wa, err := Workload(a)
	if err != nil {
		return 0, err
	}
	wc, err := Workload(c)
	if err != nil {
		return 0, err
	}
	return s.R.CoRun(wa, wc)
}
