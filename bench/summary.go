package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"time"

	"colo/metric"
	"colo/store"
)

// Summary is one scheduler's headline, the entries of `colo run --json`'s "schedulers"
// array. Keys are stable (issue #5 item 6). The fields hold IPCE in percent (as the
// thesis and the text table print it); the JSON holds every ratio as a fraction in [0, 1]
// (IPCE ÷ 100, time over target as is; docs/json.md "Keys and units"), NaN as null. The headline the run directory keeps is the embedded
// store.Summary (its Extra stays empty here; StoreSummary fills it from the counters
// below); its fields appear at the top level of the JSON.
type Summary struct {
	store.Summary
	JobsTotal   int `json:"jobs_total"`
	JobsStarted int `json:"jobs_started"`
	// JobsQueuedAtEnd arrived but were still waiting for admission at max_t.
	JobsQueuedAtEnd int `json:"jobs_queued_at_end"`
	// JobsNotStarted arrive at or after max_t: never admitted because the run ended.
	JobsNotStarted int `json:"jobs_not_started"`
	// JobsKilledAtEnd were still running at max_t (or when the run was interrupted): the
	// run ended before their length did (state killed).
	JobsKilledAtEnd  int `json:"jobs_killed_at_end"`
	PriorityJobs     int `json:"priority_jobs"`
	BatchJobs        int `json:"batch_jobs"`
	Probes           int `json:"probes"`
	ProbesFailed     int `json:"probes_failed"`
	Reprobes         int `json:"reprobes"`
	Migrations       int `json:"migrations"`
	Consolidations   int `json:"consolidations"`
	ConsolidatedWays int `json:"consolidated_ways"`
	AllocationErrors int `json:"allocation_errors"`
	AllocMismatches  int `json:"allocation_mismatches"`
	Samples          int `json:"samples"`
	// GlobalIPCECoreWeighted is the global IPCE with every job weighted by its core-seconds
	// (metric.AggregateIPCE: eq. 3.4 over summed counters), in percent; GlobalIPCE gives
	// each job one vote. The thesis's global figures fit this weighting (docs/thesis.md).
	GlobalIPCECoreWeighted float64 `json:"global_ipce_core_weighted"`
}

// Summarize computes the headline of a run.
//
// Aggregation (the thesis leaves it open, seed000.md §8 item 6; colo fixes it): a job's
// IPCE is the time-weighted mean of its collector-interval IPCE over its life
// (metric.TimeWeightedMean, probe segments included); priority/batch/global IPCE is the
// plain mean of that over the priority/batch/all jobs that produced at least one sample,
// ×100. Time over target is, over the priority jobs with a target, Σ(time at or above
// target) / Σ(time observed) (metric.TimeOverTarget per job, weighted by its observed
// time); time_over_target_p90 is the 90th percentile (metric.Percentile) of the per-job
// fractions. Queueing delay is admission − arrival over the started jobs.
func Summarize(r *Result, wall time.Duration) Summary {
	s := Summary{Summary: store.Summary{Name: r.Scheduler, VirtualSeconds: r.Virtual.Seconds(), WallSeconds: wall.Seconds()},
		Probes: r.Probes, ProbesFailed: r.ProbesFailed, Reprobes: r.Reprobes, Migrations: r.Migrations, Consolidations: r.Consolidations,
		ConsolidatedWays: r.ConsolidatedWays, AllocationErrors: r.AllocationErrors,
		AllocMismatches: r.AllocationMismatches, Samples: r.Samples, JobsTotal: len(r.Jobs)}
	var prio, batch, all, tot, delays, coreSec []float64
	met, obs := 0.0, 0.0
	for _, j := range r.Jobs {
		if j.Priority {
			s.PriorityJobs++
		} else {
			s.BatchJobs++
		}
		switch j.State {
		case StateCompleted:
			s.JobsCompleted++
		case StateRejected, StateExpired:
			s.JobsRejected++
		case StateQueued:
			s.JobsQueuedAtEnd++
		case StateNotStarted:
			s.JobsNotStarted++
		case StateKilled:
			s.JobsKilledAtEnd++
		}
		if j.Start >= 0 {
			s.JobsStarted++
			delays = append(delays, (j.Start - j.Arrival).Seconds())
		}
		if math.IsNaN(j.IPCE) {
			continue
		}
		all = append(all, j.IPCE)
		coreSec = append(coreSec, float64(j.Cores)*j.Duration.Seconds())
		if j.Priority {
			prio = append(prio, j.IPCE)
		} else {
			batch = append(batch, j.IPCE)
		}
		if j.Priority && j.Target > 0 && !math.IsNaN(j.TimeOverTarget) {
			tot = append(tot, j.TimeOverTarget)
			met += j.TimeOverTarget * j.Duration.Seconds()
			obs += j.Duration.Seconds()
		}
	}
	s.PriorityIPCE = 100 * metric.Mean(prio)
	s.BatchIPCE = 100 * metric.Mean(batch)
	s.GlobalIPCE = 100 * metric.Mean(all)
	s.GlobalIPCECoreWeighted = 100 * metric.AggregateIPCE(all, coreSec)
	s.TimeOverTarget = math.NaN()
	if obs > 0 {
		s.TimeOverTarget = met / obs
	}
	s.TimeOverTargetP90 = metric.Percentile(tot, 90)
	s.QueueDelayMean = metric.Mean(delays)
	s.QueueDelayP90 = metric.Percentile(delays, 90)
	return s
}

// RelativeChange is (x − base)/base × 100, the thesis's "improvement / penalty" of an IPCE
// versus the Least Loaded baseline (seed000.md §3, consistent with 4.3/0.6 = 7.17).
func RelativeChange(base, x float64) float64 {
	if base == 0 || math.IsNaN(base) || math.IsNaN(x) {
		return math.NaN()
	}
	return (x - base) / base * 100
}

// MarshalJSON writes the summary with NaN and ±Inf as null (encoding/json rejects them).
func (s Summary) MarshalJSON() ([]byte, error) {
	s.PriorityIPCE, s.BatchIPCE, s.GlobalIPCE = s.PriorityIPCE/100, s.BatchIPCE/100, s.GlobalIPCE/100
	s.GlobalIPCECoreWeighted /= 100
	return marshalNullNaN(s)
}

// marshalNullNaN encodes a struct in field order, the fields of embedded structs in place
// (as encoding/json does), floats that are not finite as null.
func marshalNullNaN(v any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	if err := writeFieldsNullNaN(&b, reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeFieldsNullNaN(b *bytes.Buffer, rv reflect.Value) error {
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		fv := rv.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			if err := writeFieldsNullNaN(b, fv); err != nil {
				return err
			}
			continue
		}
		tag := strings.Split(f.Tag.Get("json"), ",")
		name := tag[0]
		if name == "" || name == "-" {
			continue
		}
		if len(tag) > 1 && tag[1] == "omitempty" && fv.IsZero() {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		b.Write(k)
		b.WriteByte(':')
		if fv.Kind() == reflect.Float64 && (math.IsNaN(fv.Float()) || math.IsInf(fv.Float(), 0)) {
			b.WriteString("null")
			continue
		}
		x, err := json.Marshal(fv.Interface())
		if err != nil {
			return err
		}
		b.Write(x)
	}
	return nil
}
