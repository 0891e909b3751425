package bench

import (
	"colo/store"
)

// StoreRecorder writes a run into a store run writer (the run directory's database).
// The record types mirror the store's rows field for field, so each is a conversion.
type StoreRecorder struct{ W *store.RunWriter }

// Job records j; a job that ended (any state but queued or running) is committed at
// once, so a killed run keeps every job end it saw.
func (r StoreRecorder) Job(j JobRecord) error {
	if err := r.W.Job(store.Job(j)); err != nil {
		return err
	}
	if j.State == StateQueued || j.State == StateRunning {
		return nil
	}
	return r.W.Flush()
}

func (r StoreRecorder) Sample(s SampleRecord) error { return r.W.Sample(store.Sample(s)) }
func (r StoreRecorder) Allocation(a AllocationRecord) error {
	return r.W.Allocation(store.Allocation(a))
}
func (r StoreRecorder) Event(e EventRecord) error { return r.W.Event(store.Event(e)) }
func (r StoreRecorder) Probe(p ProbeRecord) error { return r.W.Probe(store.ProbeSegment(p)) }

// StoreSummary is the run directory's row of a summary: the embedded store.Summary, with
// the counters beyond its stable keys in Extra.
func StoreSummary(s Summary) store.Summary {
	out := s.Summary
	out.Extra = map[string]float64{
		"jobs_total": float64(s.JobsTotal), "jobs_started": float64(s.JobsStarted),
		"jobs_queued_at_end": float64(s.JobsQueuedAtEnd), "jobs_not_started": float64(s.JobsNotStarted),
		"priority_jobs": float64(s.PriorityJobs), "batch_jobs": float64(s.BatchJobs),
		"probes": float64(s.Probes), "probes_failed": float64(s.ProbesFailed),
		"reprobes": float64(s.Reprobes), "migrations": float64(s.Migrations),
		"consolidations": float64(s.Consolidations), "consolidated_ways": float64(s.ConsolidatedWays),
		"allocation_errors": float64(s.AllocationErrors), "allocation_mismatches": float64(s.AllocMismatches),
		"samples": float64(s.Samples),
	}
	return out
}
