package bench

import (
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

type poolEntry struct {
	*PoolJob
	source string
	cores  []int
	target float64
	data   DataConfig
}

// GenParams are the generated-trace parameters (Listing 4.3).
type GenParams struct {
	Seed                 uint64
	Mean, Sigma          float64 // inter-arrival N(mean, sigma), seconds
	LenMean, LenSigma    float64 // length N(mean, sigma), seconds
	LenMin               float64
	Split, Sensitivities map[string]float64
	PriorityPct          float64
	Count                int
	MaxT                 time.Duration
}

// Generate draws a trace from a seeded PCG stream (same seed, same trace, byte for byte):
// inter-arrival times ~ N(Mean, Sigma) truncated at 0, lengths ~ N(LenMean, LenSigma)
// floored at LenMin (seed000.md §1.2 "normally distributed", §4.2 Table 5.1), until MaxT or
// Count jobs. Each job is a priority job with probability PriorityPct/100 (uniform over
// the pool's priority entries); otherwise its kind is drawn by the split weights, its
// sensitivity by the sensitivities weights (both only over batch entries; an absent map
// means uniform over the entries), and the entry uniformly among the batch entries
// matching both (falling back to the kind, then to any batch entry). num_cores is drawn
// uniformly from the entry's count, range or set.
func Generate(p GenParams, pool []poolEntry) []JobSpec {
	r := rand.New(rand.NewPCG(p.Seed, 0x636f6c6f)) // "colo"
	var prio, batch []poolEntry
	for _, e := range pool {
		if e.Priority {
			prio = append(prio, e)
		} else {
			batch = append(batch, e)
		}
	}
	var jobs []JobSpec
	t := 0.0
	for (p.Count == 0 || len(jobs) < p.Count) && len(jobs) < MaxJobs {
		t += math.Max(0, p.Mean+p.Sigma*r.NormFloat64())
		at := secs(t)
		if p.MaxT > 0 && at >= p.MaxT {
			break
		}
		length := math.Max(p.LenMin, p.LenMean+p.LenSigma*r.NormFloat64())
		var e poolEntry
		if len(prio) > 0 && (len(batch) == 0 || r.Float64()*100 < p.PriorityPct) {
			e = prio[r.IntN(len(prio))]
		} else {
			kind := draw(r, p.Split)
			sens := draw(r, p.Sensitivities)
			e = pick(r, batch, kind, sens)
		}
		cores := e.cores[r.IntN(len(e.cores))]
		jobs = append(jobs, JobSpec{
			ID: len(jobs), Name: e.Name, Arrival: at, Length: secs(length), Cores: cores,
			Priority: e.Priority, IPCETarget: e.target, Image: e.Image, Command: e.Command,
			Workload: e.Workload, Env: e.Environment, Kind: e.Kind, Sensitivity: e.Sensitivity,
			Data: e.data, Source: e.source,
		})
	}
	return jobs
}

// draw picks a key with probability proportional to its weight (keys sorted for
// determinism); "" when the map is empty.
func draw(r *rand.Rand, w map[string]float64) string {
	if len(w) == 0 {
		return ""
	}
	keys := make([]string, 0, len(w))
	sum := 0.0
	for k, v := range w {
		if v > 0 {
			keys = append(keys, k)
			sum += v
		}
	}
	sort.Strings(keys)
	x := r.Float64() * sum
	for _, k := range keys {
		x -= w[k]
		if x < 0 {
			return k
		}
	}
	return keys[len(keys)-1]
}

func pick(r *rand.Rand, batch []poolEntry, kind, sens string) poolEntry {
	match := func(f func(poolEntry) bool) []poolEntry {
		var out []poolEntry
		for _, e := range batch {
			if f(e) {
				out = append(out, e)
			}
		}
		return out
	}
	c := match(func(e poolEntry) bool {
		return (kind == "" || e.Kind == kind) && (sens == "" || e.Sensitivity == sens)
	})
	if len(c) == 0 {
		c = match(func(e poolEntry) bool { return kind == "" || e.Kind == kind })
	}
	if len(c) == 0 {
		c = batch
	}
	return c[r.IntN(len(c))]
}
