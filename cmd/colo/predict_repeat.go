package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"colo/predict"
	"colo/predict/measure"
	"colo/predict/simprof"
)

// profileRepeated measures app's sensitivity curve n times (colo predict profile --repeat)
// and prints the normalised performance per dial as mean [95 % CI]. On the simulator each
// repeat draws its own noise (seed --seed + i); a live machine re-measures one sweep after
// the other (never in parallel: the sweeps would interfere).
func profileRepeated(ctx context.Context, f *predictFlags, r predict.Measurer, a predict.App, dials []float64, n int, w io.Writer) error {
	mi := func(int) predict.Measurer { return r }
	if sm, ok := r.(simprof.Measurer); ok {
		mi = func(i int) predict.Measurer {
			rr := *sm.R
			rr.Seed = sm.R.Seed + uint64(i)
			return simprof.Measurer{R: &rr}
		}
	}
	t0 := time.Now()
	curve, _, norm, err := measure.SensitivityRepeated(ctx, mi, measure.Dir(f.dir), a, dials, n)
	if err := measureErr(err); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: sensitivity curve (%d dials × %d repeats) in %.3f s; normalised performance, mean [95 %% CI]:", a.Name, len(dials), n, time.Since(t0).Seconds())
	for i, d := range curve.Dials {
		fmt.Fprintf(w, " %v:%.3f[%.3f,%.3f]", d, norm[i].Mean, norm[i].Lo, norm[i].Hi)
	}
	fmt.Fprintln(w)
	return nil
}
