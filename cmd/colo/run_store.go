package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"time"

	"colo/bench"
	"colo/sink"
	"colo/store"
)

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// runStore is the run directory of one `colo run` and, when the benchmark has a data.db
// block, the InfluxDB sink that streams everything the directory records.
type runStore struct {
	st  *store.Store
	dir string
	snk *sink.Sink
	db  string // host/database, for messages
}

// newRunStore creates the run directory (out, or runs/<UTC timestamp>-<bench name>) and,
// when bm.DB is set, the InfluxDB sink (undelivered points go to DIR/influx-undelivered.lp).
func newRunStore(bm *bench.Benchmark, out string, argv []string) (*runStore, error) {
	now := time.Now().UTC()
	if out == "" {
		out = filepath.Join("runs", now.Format("20060102-150405")+"-"+unsafeName.ReplaceAllString(bm.Name, "_"))
	}
	rs := &runStore{dir: out}
	if db := bm.DB; db != nil {
		snk, err := sink.New(sink.Config{Host: db.Host, Database: db.Name, User: db.User, Password: db.Password,
			Org: db.Org, SpoolPath: filepath.Join(out, sink.SpoolFile)})
		if err != nil {
			return nil, badInput(fmt.Errorf("%s: data.db: %w", bm.File, err))
		}
		rs.snk, rs.db = snk, db.Host+"/"+db.Name
	}
	mname := bm.Machine.Name
	if bm.Platform != "sim" {
		// a real host: the platform detects the machine when the run starts, and
		// machine.Detect names it "host" (the YAML's machine: does not apply)
		mname = "host"
	}
	st, err := store.Create(out, store.Meta{Name: bm.Name, Description: bm.Description, BenchFile: bm.File,
		Kind: "run", Machine: mname, Platform: bm.Platform, Seed: int64(bm.TraceSeed), Command: argv, Created: now})
	if err != nil {
		if rs.snk != nil {
			rs.snk.Close(context.Background())
		}
		return nil, badInput(fmt.Errorf("--out: %w", err))
	}
	rs.st = st
	return rs, nil
}

// recorder is the bench.RunOptions.Recorder factory: one store run per scheduler, each
// streamed to the sink when there is one.
func (rs *runStore) recorder(bm *bench.Benchmark) func(string) (bench.Recorder, func(bench.Summary) error, error) {
	trace := fmt.Sprintf("%s seed %d", bm.Name, bm.TraceSeed)
	start := time.Now().UTC()
	return func(name string) (bench.Recorder, func(bench.Summary) error, error) {
		w, err := rs.st.BeginRun(store.Run{Scheduler: name, Trace: trace, Start: start})
		if err != nil {
			return nil, nil, err
		}
		if rs.snk != nil {
			w.Observe(rs.snk.Observer(filepath.Base(rs.dir)))
		}
		return bench.StoreRecorder{W: w}, func(s bench.Summary) error { return w.Finish(bench.StoreSummary(s)) }, nil
	}
}

// close marks the directory complete when the run succeeded, closes the store, and gives
// the sink at most wait to deliver what it still buffers (the rest is spooled). It prints
// the sink's counts to msg and returns them (nil without a sink).
func (rs *runStore) close(ok bool, wait time.Duration, msg io.Writer) (*bench.SinkStats, error) {
	var err error
	if ok {
		err = rs.st.Complete()
	}
	if cerr := rs.st.Close(); err == nil {
		err = cerr
	}
	if rs.snk == nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	st, serr := rs.snk.Close(ctx)
	ss := &bench.SinkStats{Target: rs.db, Queued: st.Queued, Delivered: st.Delivered, Undelivered: st.Undelivered,
		Spool: st.SpoolPath, LastError: st.LastError}
	fmt.Fprintf(msg, "colo: influxdb %s: %d points delivered, %d undelivered", rs.db, st.Delivered, st.Undelivered)
	if st.Undelivered > 0 {
		fmt.Fprintf(msg, " (kept in %s; send them later with `colo export %s --format influx`; last error: %s)", st.SpoolPath, rs.dir, st.LastError)
	}
	fmt.Fprintln(msg)
	if serr != nil {
		fmt.Fprintln(msg, "colo: warning:", serr)
	}
	return ss, err
}

// compareRecorder is the bench.Comparer.Record factory: one store run per scheduler whose
// summary carries the comparison's slowdown metrics (stp, antt, unfairness, …) as extras.
func (rs *runStore) compareRecorder(bm *bench.Benchmark) func(string) (bench.Recorder, func(*bench.Result, bench.SchedulerOutcome) error, error) {
	trace := fmt.Sprintf("%s seed %d", bm.Name, bm.TraceSeed)
	start := time.Now().UTC()
	return func(name string) (bench.Recorder, func(*bench.Result, bench.SchedulerOutcome) error, error) {
		w, err := rs.st.BeginRun(store.Run{Scheduler: name, Trace: trace, Start: start})
		if err != nil {
			return nil, nil, err
		}
		t0 := time.Now()
		return bench.StoreRecorder{W: w}, func(res *bench.Result, o bench.SchedulerOutcome) error {
			s := bench.StoreSummary(bench.Summarize(res, time.Since(t0)))
			for k, v := range map[string]float64{"stp": o.STP, "antt": o.ANTT, "unfairness": o.Unfairness,
				"worst_slowdown": o.WorstSlowdown, "reconfigurations": float64(o.Reconfigurations), "moved_ways": float64(o.MovedWays)} {
				s.Extra[k] = v
			}
			return w.Finish(s)
		}, nil
	}
}

// markInterrupted records in run.json that the run stopped on a signal (cause names it)
// and says where what was collected is.
func (rs *runStore) markInterrupted(cause error, msg io.Writer) {
	why := "interrupted"
	if cause != nil {
		why = cause.Error()
	}
	if err := rs.st.MarkInterrupted(why); err != nil {
		fmt.Fprintln(msg, "colo: warning:", err)
		return
	}
	fmt.Fprintf(msg, "colo: run directory %s keeps what was collected (marked interrupted)\n", rs.dir)
}
