package main

import "colo/bench"

// openRunStore opens the run directory. Until the store package lands this keeps
// nothing (the run's summary is still printed).
func openRunStore(bm *bench.Benchmark, out string, names []string, argv []string) (func(string) (bench.Recorder, func(bench.Summary) error, error), string, func(bool) error, error) {
	return nil, "", nil, nil
}
