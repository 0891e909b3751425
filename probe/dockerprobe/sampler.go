package dockerprobe

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"colo/metric"
	"colo/perf"
	"colo/probe"
	"colo/stress"
	"colo/workload"
	"colo/workload/docker"
)

// sampler implements probe.Sampler for the target container.
//
// In PMU mode Sample returns the cgroup's instruction, cycle and stall deltas. In rate
// mode a goroutine reads the target's interval lines (cumulative work) and, as each line
// arrives, the cgroup's cumulative CPU time; Sample returns the change of that (work, CPU)
// pair since the previous Sample, encoded as CounterSample{Instructions: work, Cycles: CPU
// ns} so the state machine's per-sample IPC is the work per CPU ns (rateSample). Pairing
// the two at the line's arrival keeps work and CPU time over the same span; Sample waits
// for a new line when none arrived since the last call.
type sampler struct {
	metric, why string
	unit        string
	counter     *perf.Counter // open in every mode but ModeNone
	hw          bool
	cgCPU       *workload.CPUTime // ModeNone: cgroup CPU time

	mu        sync.Mutex
	work, cpu float64 // latest pair (cumulative)
	wall      float64 // the target's elapsed ns at the latest line
	usedWall  float64
	// Per segment (baseline first): CPU ns and wall ns of the target, for CPUShare.
	seg             int
	segCPU, segWall [6]float64
	segWork         [6]float64
	skipShare       bool
	cpuTotal        float64 // task-clock accumulated from perf deltas
	seq             int
	usedWork        float64
	usedCPU         float64
	usedSeq         int
	ended           error
	notify          chan struct{}
	closeLogs       func()
	firstLine       chan struct{}
	firstOnce       sync.Once
	// waitNewMax is how long a sample waits for the target's next progress line before
	// the probe gives up on a hung target (generous: a loaded 2-vCPU host can starve a
	// container of CPU for seconds).
	waitNewMax time.Duration
}

func newSampler(ctx context.Context, r *docker.Runtime, id string, cg workload.Cgroup, cpu int, po perf.Options) (*sampler, error) {
	s := newBare()
	po.Quiet = true
	c, err := perf.OpenCgroup(cg.PerfEventDir(), []int{cpu}, po)
	if err != nil {
		return nil, err
	}
	if err := s.useCounter(c, cg); err != nil {
		return nil, err
	}
	lines, closeLogs, err := follow(ctx, r, id)
	if err != nil {
		s.close()
		return nil, err
	}
	s.closeLogs = closeLogs
	read := s.readCPU
	if s.hw {
		read = func() (float64, error) { return 0, nil } // Sample reads the PMU itself
	}
	s.consume(lines, read)
	return s, nil
}

// useCounter picks the metric from what the target's counters could open (see the
// package comment) and keeps the counter, or the cgroup's CPU time when perf is not
// permitted at all.
func (s *sampler) useCounter(c *perf.Counter, cg workload.Cgroup) error {
	switch c.Mode() {
	case perf.ModeHardware:
		s.counter, s.hw = c, true
		if slices.Contains(c.Events(), perf.StallsTotal) {
			s.metric, s.why = probe.MetricIPCE, "hardware PMU with cycle_activity.stalls_total: IPCE as in the thesis"
		} else {
			s.metric, s.why = probe.MetricIPC, "hardware PMU without the stall events: IPC"
		}
	case perf.ModeSoftware:
		s.counter = c
		s.metric, s.why = probe.MetricCPURate, "no hardware PMU ("+c.Reason()+"): the target's work per CPU second, CPU time from perf task-clock of its cgroup"
	default:
		c.Close()
		var err error
		if s.cgCPU, err = workload.OpenCPUTime(cg); err != nil {
			return err
		}
		s.metric, s.why = probe.MetricCPURate, "perf events not permitted ("+c.Reason()+"): the target's work per CPU second, CPU time from the cgroup's accounting"
	}
	return nil
}

// consume pairs every progress line with the CPU time read when it arrives, in a
// goroutine, until lines is closed.
func (s *sampler) consume(lines <-chan stress.Report, readCPU func() (float64, error)) {
	go func() {
		for rep := range lines {
			cpuNs, cerr := readCPU()
			s.mu.Lock()
			if cerr != nil && s.ended == nil {
				s.ended = cerr
			}
			s.work, s.cpu, s.unit, s.wall = rep.Work, cpuNs, rep.Unit, rep.Elapsed*1e9
			s.seq++
			s.mu.Unlock()
			s.firstOnce.Do(func() { close(s.firstLine) })
			select {
			case s.notify <- struct{}{}:
			default:
			}
		}
		s.mu.Lock()
		if s.ended == nil {
			s.ended = fmt.Errorf("the target stopped printing its progress (exited?)")
		}
		s.mu.Unlock()
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}()
}

func newBare() *sampler {
	return &sampler{notify: make(chan struct{}, 1), firstLine: make(chan struct{}), waitNewMax: 30 * time.Second}
}

// readCPU returns the target's cumulative CPU ns (only the log goroutine calls it).
func (s *sampler) readCPU() (float64, error) {
	if s.cgCPU != nil {
		v, err := s.cgCPU.Read()
		return float64(v), err
	}
	smp, err := s.counter.Sample()
	if err != nil {
		return 0, err
	}
	if d, ok := smp.Get(perf.TaskClock); ok {
		s.cpuTotal += d
	}
	return s.cpuTotal, nil
}

// waitFirst blocks until the target printed its first interval line (its working set is
// allocated and it runs).
func (s *sampler) waitFirst(ctx context.Context, max time.Duration) error {
	select {
	case <-s.firstLine:
		return nil
	case <-s.notify:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ended != nil {
			return s.ended
		}
		return nil
	case <-time.After(max):
		return fmt.Errorf("the target printed no progress line in %v", max)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Sample implements probe.Sampler.
func (s *sampler) Sample() (probe.CounterSample, error) {
	if s.hw {
		smp, err := s.counter.Sample()
		if err != nil {
			return probe.CounterSample{}, err
		}
		i, _ := smp.Get(perf.Instructions)
		c, _ := smp.Get(perf.Cycles)
		st, _ := smp.Get(perf.StallsTotal)
		return probe.CounterSample{Instructions: i, Cycles: c, StallCycles: st}, nil
	}
	deadline := time.After(s.waitNewMax)
	for {
		s.mu.Lock()
		if s.ended != nil {
			err := s.ended
			s.mu.Unlock()
			return probe.CounterSample{}, err
		}
		if s.seq != s.usedSeq && s.cpu > s.usedCPU {
			out := rateSample(s.work-s.usedWork, s.cpu-s.usedCPU)
			if !s.skipShare && s.seg < len(s.segCPU) {
				s.segCPU[s.seg] += s.cpu - s.usedCPU
				s.segWork[s.seg] += s.work - s.usedWork
				s.segWall[s.seg] += s.wall - s.usedWall
			}
			s.skipShare = false
			s.usedWork, s.usedCPU, s.usedWall, s.usedSeq = s.work, s.cpu, s.wall, s.seq
			s.mu.Unlock()
			return out, nil
		}
		s.mu.Unlock()
		select {
		case <-s.notify:
		case <-deadline:
			return probe.CounterSample{}, fmt.Errorf("the target printed no progress with CPU time for %v", s.waitNewMax)
		}
	}
}

// rateSample encodes the target's progress over one sample for the probe's state machine:
// work done as instructions and CPU ns as cycles, so metric.IPC of the sample is the work
// per CPU ns and ς on it is the thesis's Eq. 3.5 on the work rate per CPU time. No stall
// count exists, so StallCycles stays 0 and the state machine's IPCE/stalled vectors carry
// no information on this path (Run does not report them).
func rateSample(work, cpuNs float64) probe.CounterSample {
	return probe.CounterSample{Instructions: work, Cycles: cpuNs}
}

// segment tells the sampler that segment i (0 = baseline) begins: the next sample
// straddles the switch and does not count towards the CPU share.
func (s *sampler) segment(i int) {
	s.mu.Lock()
	s.seg, s.skipShare = i, true
	s.mu.Unlock()
}

// cpuShare is, per segment, the fraction of wall time the target ran on its core
// (ΣΔCPU / ΣΔwall of its samples): 1 when it had the core to itself; lower when other
// processes time-shared it, and their cache footprint then weighs on the measurement.
// nil outside rate mode.
func (s *sampler) cpuShare() []float64 {
	if s.hw {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]float64, len(s.segCPU))
	for i := range out {
		if s.segWall[i] > 0 {
			out[i] = s.segCPU[i] / s.segWall[i]
		}
	}
	return out
}

// rates is, per segment, the target's work per CPU second over the segment: ΣΔwork / ΣΔCPU
// of its samples (the straddling first one excluded), a ratio of sums. The CPU time is
// read when a progress line arrives, a little after the target wrote it; over one 50 ms
// sample that delay can be a large part of the window on a busy host (one sample of the
// compute loop read 5× its rate), but over a segment the delays cancel except at its two
// ends, so the segment's ratio of sums is accurate where the mean of per-sample ratios is
// not. NaN for a segment without samples.
func (s *sampler) rates() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]float64, len(s.segCPU))
	for i := range out {
		out[i] = metric.IPC(s.segWork[i], s.segCPU[i]) * 1e9
	}
	return out
}

func (s *sampler) close() {
	if s.closeLogs != nil {
		s.closeLogs()
	}
	if s.counter != nil {
		s.counter.Close()
	}
	if s.cgCPU != nil {
		s.cgCPU.Close()
	}
}
