package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"time"

	"colo/bench"
	"colo/store"
)

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// openRunStore creates the run directory (out, or runs/<UTC timestamp>-<bench name>) and
// returns a recorder factory for bench.RunAll, the directory, and a closer that marks the
// directory complete when the run succeeded.
func openRunStore(bm *bench.Benchmark, out string, names []string, argv []string) (func(string) (bench.Recorder, func(bench.Summary) error, error), string, func(bool) error, error) {
	now := time.Now().UTC()
	if out == "" {
		out = filepath.Join("runs", now.Format("20060102-150405")+"-"+unsafeName.ReplaceAllString(bm.Name, "_"))
	}
	st, err := store.Create(out, store.Meta{Name: bm.Name, Description: bm.Description, BenchFile: bm.File,
		Kind: "run", Machine: bm.Machine.Name, Platform: bm.Platform, Seed: int64(bm.TraceSeed), Command: argv, Created: now})
	if err != nil {
		return nil, "", nil, badInput(fmt.Errorf("--out: %w", err))
	}
	trace := fmt.Sprintf("%s seed %d", bm.Name, bm.TraceSeed)
	rec := func(name string) (bench.Recorder, func(bench.Summary) error, error) {
		w, err := st.BeginRun(store.Run{Scheduler: name, Trace: trace, Start: now})
		if err != nil {
			return nil, nil, err
		}
		return bench.StoreRecorder{W: w}, func(s bench.Summary) error { return w.Finish(bench.StoreSummary(s)) }, nil
	}
	closer := func(ok bool) error {
		var err error
		if ok {
			err = st.Complete()
		}
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return rec, out, closer, nil
}
