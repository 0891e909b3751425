package predict

import "context"

// App is an application under test: its name in the data set and what runs it (a shell
// command on a live machine, a workload name such as neighbor:6M:1g on the simulator).
type App struct {
	Name string
	Cmd  string
}

// Measurer measures Bubble-Up's inputs on one platform: predict/live measures real
// processes, predict/simprof the simulated machine. The workflows of predict/measure
// (profiling, reporter training, contentiousness, co-run validation) run on either.
type Measurer interface {
	// ReporterCurve measures the reporter with the SoI at each dial (reporter_sensitivity.csv).
	ReporterCurve(ctx context.Context, dials []float64) ([]ReporterRow, error)
	// SensitivityCurve measures app with the SoI at each dial.
	SensitivityCurve(ctx context.Context, app App, dials []float64) (Curve, error)
	// Contentiousness measures the reporter while app runs in the background.
	Contentiousness(ctx context.Context, app App) (ReporterRow, error)
	// CoRun measures app's normalised performance next to comp (t_iso / t_co).
	CoRun(ctx context.Context, app, comp App) (float64, error)
}
