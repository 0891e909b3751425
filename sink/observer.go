package sink

import (
	"sync"
	"time"

	"colo/store"
)

// Observer returns a store.Observer that streams a run as it is written: attach it with
// RunWriter.Observe and every job state, sample, allocation, event and summary the run
// records is also queued here (never blocking the run). runName tags the points (the
// run directory's name).
func (s *Sink) Observer(runName string) store.Observer {
	return &observer{s: s, name: runName, jobs: map[int64]map[int]store.Job{}}
}

type observer struct {
	s    *Sink
	name string
	mu   sync.Mutex
	jobs map[int64]map[int]store.Job // per run: the latest record of each job (sample tags)
}

func (o *observer) src(r store.Run) Source {
	return Source{Run: o.name, Scheduler: r.Scheduler, Start: r.Start}
}

func (o *observer) Job(r store.Run, j store.Job) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.jobs[r.ID] == nil {
		o.jobs[r.ID] = map[int]store.Job{}
	}
	o.jobs[r.ID][j.ID] = j
}

func (o *observer) Sample(r store.Run, x store.Sample) {
	o.mu.Lock()
	j := o.jobs[r.ID][x.Job]
	o.mu.Unlock()
	o.s.Sample(o.src(r), j, x)
}

func (o *observer) Allocation(r store.Run, a store.Allocation) { o.s.Allocation(o.src(r), a) }
func (o *observer) Event(r store.Run, e store.Event)           { o.s.Event(o.src(r), e) }

func (o *observer) Summary(r store.Run, sum store.Summary) {
	o.s.Summary(o.src(r), sum, r.Start.Add(time.Duration(sum.VirtualSeconds*float64(time.Second))))
}
