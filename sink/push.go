package sink

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"

	"colo/store"
)

// PushRun queues every sample, allocation, event and summary of a run directory (after
// the run, as the thesis did at teardown) and returns once they are queued; call Close
// to deliver. With Config.Block it keeps pace with the database instead of spooling.
func (s *Sink) PushRun(st *store.Store) error {
	runs, err := st.Runs()
	if err != nil {
		return err
	}
	name := filepath.Base(filepath.Clean(st.Dir()))
	for _, r := range runs {
		src := Source{Run: name, Scheduler: r.Scheduler, Start: r.Start}
		jobs, err := st.Jobs(r.ID)
		if err != nil {
			return err
		}
		byID := make(map[int]store.Job, len(jobs))
		for _, j := range jobs {
			byID[j.ID] = j
		}
		if err := st.EachSample(r.ID, func(x store.Sample) error {
			s.Sample(src, byID[x.Job], x)
			return nil
		}); err != nil {
			return err
		}
		allocs, err := st.Allocations(r.ID)
		if err != nil {
			return err
		}
		for _, a := range allocs {
			s.Allocation(src, a)
		}
		events, err := st.Events(r.ID)
		if err != nil {
			return err
		}
		for _, e := range events {
			s.Event(src, e)
		}
		if sum, ok, err := st.Summary(r.ID); err != nil {
			return err
		} else if ok {
			_, last, _, err := st.SampleSpan(r.ID)
			if err != nil {
				return err
			}
			s.Summary(src, sum, r.Start.Add(last))
		}
	}
	return nil
}

// Replay queues the lines of a spool file (influx-undelivered.lp) again.
func (s *Sink) Replay(ctx context.Context, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			s.Line(l)
			n++
		}
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
	}
	return n, sc.Err()
}
