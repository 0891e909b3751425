package live

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"colo/stress"
)

// Options are a live measurement's settings as given (colo predict's flags); NewRunner
// fills in the defaults for this machine and checks them.
type Options struct {
	// AppCPUs run the application and the reporter; OtherCPUs the SoI and the competitor
	// (nil: every other CPU of this machine).
	AppCPUs, OtherCPUs []int
	// StreamThreads and RandomThreads size the SoI (both 0: 1 and 1, or the thesis's 3
	// and 2 on more than 4 CPUs).
	StreamThreads, RandomThreads int
	Settle                       time.Duration
	Repeats                      int
	Paired                       bool
	Metric                       Metric
	// ReporterType, ReporterMB (0: half this machine's LLC, or 16 MB when it cannot be
	// read) and ReporterReps configure the reporter (stress.ReporterConfig).
	ReporterType string
	ReporterMB   float64
	ReporterReps int
	Log          io.Writer
	WallClock    bool
}

// NewRunner checks o against this machine (its CPUs exist, some are left for the SoI,
// the reporter can be built) and returns the runner with o's defaults filled in.
func NewRunner(o Options) (*Runner, error) {
	ncpu := runtime.NumCPU()
	other := o.OtherCPUs
	if other == nil {
		for c := 0; c < ncpu; c++ {
			if !slices.Contains(o.AppCPUs, c) {
				other = append(other, c)
			}
		}
	}
	if len(other) == 0 {
		return nil, errors.New("no CPU left for the SoI and the competitor: give --other-cpus")
	}
	for _, c := range append(append([]int(nil), o.AppCPUs...), other...) {
		if c >= ncpu {
			return nil, fmt.Errorf("CPU %d does not exist (this machine has %d)", c, ncpu)
		}
	}
	st, rt := o.StreamThreads, o.RandomThreads
	if st == 0 && rt == 0 {
		st, rt = 1, 1
		if ncpu > 4 {
			st, rt = 3, 2
		}
	}
	if o.Repeats < 1 || o.Settle < 0 {
		return nil, fmt.Errorf("--repeats %d must be ≥ 1 and --settle %v ≥ 0", o.Repeats, o.Settle)
	}
	repMB := o.ReporterMB
	if repMB == 0 {
		repMB = 16
		if llc := stress.DetectLLCBytes(); llc > 0 {
			repMB = float64(llc) / 2 / stress.MB
		}
	}
	if _, err := stress.NewReporter(stress.ReporterConfig{Type: o.ReporterType, MB: 0.1, Reps: 1}); err != nil {
		return nil, err
	}
	if o.ReporterMB < 0 || o.ReporterReps < 1 {
		return nil, fmt.Errorf("--reporter-mb %g must be > 0 and --reporter-reps %d ≥ 1", o.ReporterMB, o.ReporterReps)
	}
	return &Runner{AppCPUs: o.AppCPUs, OtherCPUs: other, StreamThreads: st, RandomThreads: rt, Settle: o.Settle,
		Repeats: o.Repeats, Paired: o.Paired, Metric: o.Metric, Log: o.Log, WallClock: o.WallClock,
		Reporter: stress.ReporterConfig{Type: o.ReporterType, MB: repMB, Reps: o.ReporterReps}}, nil
}
