package simprof

import (
	"fmt"

	"colo/predict"
	"colo/sim"
)

// AccuracyWorkloads are the simulated workloads `colo predict accuracy` checks by default:
// cache-insensitive, cache-fitting, cache-hungry and bandwidth-bound models (sim.WorkloadNames)
// and PBBCache table workloads.
var AccuracyWorkloads = []string{"cpu", "neighbor:6M:1g", "neighbor:12M", "mlr:8M", "mlr:16M", "mload:60M",
	"tsearch:131072", "matrix-3d:96", "7zip:5", "table:lbm06", "table:mcf06", "table:povray06"}

// AccuracyDials is the SoI grid of the accuracy table: 2 MB steps up to 16 MB (where
// the competitors' scores fall), coarser up to the thesis's 112 MB.
var AccuracyDials = []float64{0, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112}

// AccuracyPair is one ordered pair: app A next to competitor C, measured and predicted
// normalised performance t_iso/t (isolated: A alone with the whole LLC), with no partition
// and under the partition (A in the low ways, C in the others).
type AccuracyPair struct {
	App          string  `json:"app"`
	Competitor   string  `json:"competitor"`
	Score        float64 `json:"competitor_score_mb"`
	Measured     float64 `json:"measured"`
	Predicted    float64 `json:"predicted"`
	PartMeasured float64 `json:"partitioned_measured"`
	PartPredict  float64 `json:"partitioned_predicted"`
}

// Accuracy is the simulator's accuracy table.
type Accuracy struct {
	Machine       string         `json:"machine"`
	Seed          uint64         `json:"seed"`
	Reporter      string         `json:"reporter"`
	ReporterMB    float64        `json:"reporter_mb"`
	Dials         []float64      `json:"dials"`
	AppWays       int            `json:"app_ways"`
	TotalWays     int            `json:"total_ways"`
	Pairs         []AccuracyPair `json:"pairs"`
	Unpartitioned predict.Stats  `json:"unpartitioned"` // errors in pp of isolated performance
	Partitioned   predict.Stats  `json:"partitioned"`
}

// measureSplit is measure with the application in CLOS 1 (mask appMask on every domain)
// and the background in CLOS 2 (the complement).
func (r *Runner) measureSplit(app, comp sim.Workload, appMask, compMask uint64) (float64, error) {
	return r.measureWith(app, []sim.Workload{comp}, [][]int{r.CompCores}, func(m *sim.Machine, appID sim.ID, bg []sim.ID) error {
		d := r.Profile.LLCDomains()
		am, cm := make([]uint64, d), make([]uint64, d)
		for i := range am {
			am[i], cm[i] = appMask, compMask
		}
		if err := m.SetCLOS(1, am, nil); err != nil {
			return err
		}
		if err := m.SetCLOS(2, cm, nil); err != nil {
			return err
		}
		if err := m.Assign(appID, 1); err != nil {
			return err
		}
		return m.Assign(bg[0], 2)
	})
}

// WaysCurve measures app alone in its low w ways for w = 1 … all ways (the allocation
// probe's per-ways curve; Dials are way counts).
func (r *Runner) WaysCurve(name string, app sim.Workload) (predict.Curve, error) {
	c := predict.Curve{Name: name + "-ways"}
	for w := 1; w <= r.Profile.LLC.Ways; w++ {
		mask := uint64(1)<<w - 1
		v, err := r.measureWith(app, nil, nil, func(m *sim.Machine, id sim.ID, _ []sim.ID) error {
			d := make([]uint64, r.Profile.LLCDomains())
			for i := range d {
				d[i] = mask
			}
			if err := m.SetCLOS(1, d, nil); err != nil {
				return err
			}
			return m.Assign(id, 1)
		})
		if err != nil {
			return c, err
		}
		c.Dials = append(c.Dials, float64(w))
		c.Perf = append(c.Perf, v)
	}
	return c, nil
}

// Accuracy profiles every workload (sensitivity curve over dials, per-ways curve,
// contentiousness score on the reporter curve), then co-runs every ordered pair with and without a partition of
// appWays low ways for the application, and compares with predict.PredictUnder.
func (r *Runner) Accuracy(names []string, dials []float64, appWays int) (Accuracy, error) {
	total := r.Profile.LLC.Ways
	if appWays <= 0 || appWays >= total {
		return Accuracy{}, fmt.Errorf("--app-ways %d must be in 1..%d", appWays, total-1)
	}
	rt := r.ReporterType
	if rt == "" {
		rt = "alternating"
	}
	out := Accuracy{Machine: r.Profile.Name, Seed: r.Seed, Reporter: rt, ReporterMB: r.ReporterMB, Dials: dials, AppWays: appWays, TotalWays: total}
	rows, err := r.ReporterCurve(dials)
	if err != nil {
		return out, err
	}
	rep := predict.Curve{Name: "reporter", Dials: dials}
	for _, row := range rows {
		rep.Perf = append(rep.Perf, row.Avg)
	}
	ws := map[string]sim.Workload{}
	curves := map[string]predict.Curve{}
	scores := map[string]float64{}
	iso := map[string]float64{}
	wayCurves := map[string]*predict.Curve{}
	for _, n := range names {
		w, err := sim.ParseWorkload(n, 1, nil)
		if err != nil {
			return out, err
		}
		ws[n] = w
		if curves[n], err = r.SensitivityCurve(n, w, dials); err != nil {
			return out, err
		}
		iso[n] = curves[n].Perf[0]
		wc, err := r.WaysCurve(n, w)
		if err != nil {
			return out, err
		}
		wayCurves[n] = &wc
		row, err := r.Contentiousness(n, w)
		if err != nil {
			return out, err
		}
		scores[n] = predict.ScoreOf(rep, n, row.Avg, predict.MethodLinear).MB
	}
	full := uint64(1)<<total - 1
	appMask := uint64(1)<<appWays - 1
	llcMB := float64(r.Profile.LLC.SizeBytes) / 1e6
	part := predict.Allocation{LLCMB: llcMB, TotalWays: total, Ways: appWays, Overlap: []float64{0}}
	var eu, ep []float64
	for _, a := range names {
		for _, c := range names {
			if a == c {
				continue
			}
			co, err := r.measure(ws[a], []sim.Workload{ws[c]}, [][]int{r.CompCores})
			if err != nil {
				return out, err
			}
			pco, err := r.measureSplit(ws[a], ws[c], appMask, full&^appMask)
			if err != nil {
				return out, err
			}
			p := AccuracyPair{App: a, Competitor: c, Score: scores[c],
				Measured: predict.NormalisedPerf(iso[a], co), PartMeasured: predict.NormalisedPerf(iso[a], pco)}
			if p.Predicted, _, err = predict.PredictUnder(curves[a], nil, []float64{scores[c]}, predict.Unpartitioned(), predict.MethodLinear); err != nil {
				return out, err
			}
			if p.PartPredict, _, err = predict.PredictUnder(curves[a], wayCurves[a], []float64{scores[c]}, part, predict.MethodLinear); err != nil {
				return out, err
			}
			eu = append(eu, predict.PredictionError(p.Predicted, p.Measured))
			ep = append(ep, predict.PredictionError(p.PartPredict, p.PartMeasured))
			out.Pairs = append(out.Pairs, p)
		}
	}
	out.Unpartitioned, out.Partitioned = predict.ErrorStats(eu, 0), predict.ErrorStats(ep, 0)
	return out, nil
}
