package main

import (
	"io"
	"time"

	"colo/bench"
)

// openRunStore is newRunStore for tests that want the pieces: the recorder factory for
// bench.RunAll, the directory, and a closer that marks the directory complete when the
// run succeeded (names is unused; the sink, if any, gets 10 s to deliver; its counts go nowhere).
func openRunStore(bm *bench.Benchmark, out string, names []string, argv []string) (func(string) (bench.Recorder, func(bench.Summary) error, error), string, func(bool) error, error) {
	rs, err := newRunStore(bm, out, argv)
	if err != nil {
		return nil, "", nil, err
	}
	closer := func(ok bool) error {
		_, err := rs.close(ok, 10*time.Second, io.Discard)
		return err
	}
	return rs.recorder(bm), rs.dir, closer, nil
}
