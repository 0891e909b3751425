package probe

// Metrics a sensitivity probe's ς can be computed on (Report.Metric).
const (
	MetricIPCE    = "ipce"     // thesis: IPC efficiency from the PMU's stall cycles
	MetricIPC     = "ipc"      // PMU without stall events
	MetricCPURate = "cpu_rate" // no PMU: the target's work per CPU second
)

// Report is a finished sensitivity probe on the one metric it was computed on, as every
// probe driver reports it (probe/simprobe on the simulated testbed, probe/dockerprobe on
// Docker) and `colo probe sensitivity` prints it.
type Report struct {
	// Metric is what ς is computed on (MetricIPCE, MetricIPC or MetricCPURate) and Why
	// says why that one.
	Metric string `json:"metric"`
	Why    string `json:"why"`
	// Isolation describes the partition target and neighbour shared ("none ..." without).
	Isolation string `json:"isolation"`
	// Sensitivity is ς per stressor on Metric.
	Sensitivity Vector `json:"sensitivity"`
	MetricLevels
	Unit string `json:"unit,omitempty"`
	// CPUShare (cpu_rate only) is per segment the fraction of wall time the target ran on
	// its core: well below 1 means other processes time-shared it, and the host's noise,
	// not only the stressor, is in the numbers.
	CPUShare []float64 `json:"cpu_share,omitempty"`
}

// MetricLevels are the segments' levels of a Report's metric: with counters the state
// machine's trimmed means; for cpu_rate the segment's work over its CPU time in Unit per
// CPU second. Samples per segment, baseline first.
type MetricLevels struct {
	Base     float64   `json:"base"`
	Stressed []float64 `json:"stressed"`
	Samples  []int     `json:"samples"`
}

// IPCEReport reports r on IPCE (the thesis's metric) with why and the isolation.
func (r SensitivityResult) IPCEReport(why, isolation string) Report {
	out := Report{Metric: MetricIPCE, Why: why, Isolation: isolation, Sensitivity: r.IPCE,
		MetricLevels: MetricLevels{Base: r.Base.IPCE, Samples: []int{r.Base.Samples}}}
	for _, l := range r.Stressed {
		out.Stressed = append(out.Stressed, l.IPCE)
		out.Samples = append(out.Samples, l.Samples)
	}
	return out
}
