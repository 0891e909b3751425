package probe

// The thesis's sensitivity probe (seed000.md §2.6, thesis §3.2.1, §4.5.2–4.5.3): a
// neighbour on the target's socket, in one isolated partition with the target, stays idle
// for a baseline segment and then runs five stressors in turn (LLC, memory read, memory
// write, syscall/futex, prefetch/stream); the target's IPC, IPCE and stalled-cycle share
// are sampled every 50 ms, trimmed, and turned into ς ∈ [0,1]^5 per metric.
//
// SensitivityProbe is a pure state machine (segments, samples, result) and
// DriveSensitivity its one driver, through the Neighbour and Sampler interfaces and the
// caller's clock: package probe/dockerprobe implements them with Docker containers running
// `colo stress KIND` and perf counters of the target's cgroup, package probe/simprobe with
// analytic stressors on the simulated machine.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"colo/metric"
)

// The thesis's five stressors (Table 4.2); `colo stress` runs them under these names
// (stress.KindLLC…).
const (
	StressLLC      = "llc"
	StressMemRead  = "mem-read"
	StressMemWrite = "mem-write"
	StressSyscall  = "syscall"
	StressPrefetch = "prefetch"
)

// Stressors is the segment order after the idle baseline (thesis Table 4.2).
var Stressors = []string{StressLLC, StressMemRead, StressMemWrite, StressSyscall, StressPrefetch}

// SensitivityConfig is the probe block of the thesis's benchmark YAML (Listing 4.17:
// default_t 12 s, 50 ms sampling, cooldown_t) plus the isolated partition.
type SensitivityConfig struct {
	// DefaultT is the whole probe; each of the 6 segments gets DefaultT / 6.
	DefaultT time.Duration
	// Frequency is the sampling interval (thesis: 50 ms).
	Frequency time.Duration
	// CooldownT is the minimum time between two probes of one target.
	CooldownT time.Duration
	// Isolated puts target and neighbour in one partition of Ways ways and MBA percent.
	Isolated bool
	Ways     int
	MBA      int
}

// DefaultSensitivityConfig is Listing 4.17 with the isolation of the thesis's validation
// runs (§6.2: 6 ways + 50 % MBA restored the order).
func DefaultSensitivityConfig() SensitivityConfig {
	return SensitivityConfig{DefaultT: 12 * time.Second, Frequency: 50 * time.Millisecond,
		Isolated: true, Ways: 6, MBA: 50}
}

// SegmentTime is segmentTime = default_t / 6 (seed000.md §2.6 step 6).
func (c SensitivityConfig) SegmentTime() time.Duration {
	return c.DefaultT / time.Duration(1+len(Stressors))
}

// Validate checks the timing.
func (c SensitivityConfig) Validate() error {
	if c.DefaultT <= 0 || c.Frequency <= 0 || c.CooldownT < 0 {
		return fmt.Errorf("sensitivity probe: default_t %v and frequency %v must be > 0, cooldown_t %v ≥ 0", c.DefaultT, c.Frequency, c.CooldownT)
	}
	if c.SegmentTime() < c.Frequency {
		return fmt.Errorf("sensitivity probe: default_t %v over 6 segments is shorter than one %v sample", c.DefaultT, c.Frequency)
	}
	if c.Isolated && (c.Ways < 1 || c.MBA < 1 || c.MBA > 100) {
		return fmt.Errorf("sensitivity probe: isolated partition needs ways ≥ 1 and MBA 1..100 %% (got %d ways, %d %%)", c.Ways, c.MBA)
	}
	return nil
}

// CounterSample is one sampling interval of the target: counter deltas.
type CounterSample struct {
	Instructions, Cycles, StallCycles float64
}

// Levels are the trimmed means of one segment.
type Levels struct {
	IPC        float64 `json:"ipc"`
	IPCE       float64 `json:"ipce"` // fraction
	StalledPct float64 `json:"-"`    // percent of cycles stalled (JSON: "stalled", a fraction)
	Samples    int     `json:"samples"`
}

// MarshalJSON writes the stalled-cycle share as a fraction, "stalled" (docs/json.md: every
// ratio in JSON is a fraction in [0, 1]).
func (l Levels) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		IPC     float64 `json:"ipc"`
		IPCE    float64 `json:"ipce"`
		Stalled float64 `json:"stalled"`
		Samples int     `json:"samples"`
	}{l.IPC, l.IPCE, l.StalledPct / 100, l.Samples})
}

// Vector is one ς per shared resource (the thesis's SensitivityMetrics).
type Vector struct {
	LLC      float64 `json:"llc"`
	MemRead  float64 `json:"mem_read"`
	MemWrite float64 `json:"mem_write"`
	SysCall  float64 `json:"syscall"`
	Prefetch float64 `json:"prefetch"`
}

// Slice returns the vector in Stressors order.
func (v Vector) Slice() []float64 {
	return []float64{v.LLC, v.MemRead, v.MemWrite, v.SysCall, v.Prefetch}
}

func vectorOf(xs []float64) Vector {
	return Vector{LLC: xs[0], MemRead: xs[1], MemWrite: xs[2], SysCall: xs[3], Prefetch: xs[4]}
}

// SensitivityResult is a finished probe.
type SensitivityResult struct {
	Base     Levels   `json:"base"`
	Stressed []Levels `json:"stressed"` // in Stressors order
	IPC      Vector   `json:"ipc"`
	IPCE     Vector   `json:"ipce"`
	Stalled  Vector   `json:"stalled"`
}

// StalledSensitivity is the thesis repository's sensitivity on the stalled-cycle share,
// ς = clamp((SCP_stressed − SCP_base) / (100 − SCP_base), 0, 1) with SCP in percent
// ([repo], seed000.md §2.6): the fraction of the baseline's unstalled cycles the stressor
// turned into stalls.
func StalledSensitivity(base, stressed float64) float64 {
	if base >= 100 {
		return 0
	}
	return min(1, max(0, (stressed-base)/(100-base)))
}

// sensitivityDrop is the thesis repository's trimming: with more than 30 samples the 3
// highest and 3 lowest are dropped (seed000.md §2.6 [repo]).
func sensitivityDrop(n int) int {
	if n > 30 {
		return 3
	}
	return 0
}

// SensitivityProbe collects the samples of one probe, segment by segment: 0 is the idle
// baseline, 1..5 the stressors in Stressors order.
type SensitivityProbe struct {
	cfg     SensitivityConfig
	seg     int
	samples [][]CounterSample
}

// NewSensitivityProbe validates cfg and starts at the baseline segment.
func NewSensitivityProbe(cfg SensitivityConfig) (*SensitivityProbe, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &SensitivityProbe{cfg: cfg, samples: make([][]CounterSample, 1+len(Stressors))}, nil
}

// Segment returns the current segment and the stressor the neighbour must run ("" for the
// idle baseline); done once all six segments are finished.
func (p *SensitivityProbe) Segment() (index int, stressor string, done bool) {
	if p.seg > len(Stressors) {
		return p.seg, "", true
	}
	if p.seg == 0 {
		return 0, "", false
	}
	return p.seg, Stressors[p.seg-1], false
}

// Add records one sample of the current segment.
func (p *SensitivityProbe) Add(s CounterSample) {
	if p.seg <= len(Stressors) {
		p.samples[p.seg] = append(p.samples[p.seg], s)
	}
}

// Next ends the current segment.
func (p *SensitivityProbe) Next() {
	if p.seg <= len(Stressors) {
		p.seg++
	}
}

func levels(ss []CounterSample) Levels {
	ipc, ipce, scp := make([]float64, 0, len(ss)), make([]float64, 0, len(ss)), make([]float64, 0, len(ss))
	for _, s := range ss {
		ipc = append(ipc, metric.IPC(s.Instructions, s.Cycles))
		ipce = append(ipce, metric.IPCE(s.StallCycles, s.Cycles))
		scp = append(scp, 100*metric.StalledFraction(s.StallCycles, s.Cycles))
	}
	d := sensitivityDrop(len(ss))
	return Levels{IPC: TrimmedMean(ipc, d), IPCE: TrimmedMean(ipce, d), StalledPct: TrimmedMean(scp, d), Samples: len(ss)}
}

// Result computes ς per stressor on IPC and IPCE (metric.Sensitivity, thesis Eq. 3.5) and
// on the stalled-cycle share (StalledSensitivity). Every segment needs a sample.
func (p *SensitivityProbe) Result() (SensitivityResult, error) {
	if _, _, done := p.Segment(); !done {
		return SensitivityResult{}, fmt.Errorf("sensitivity probe: segment %d of 6 not finished", p.seg+1)
	}
	for i, ss := range p.samples {
		if len(ss) == 0 {
			return SensitivityResult{}, fmt.Errorf("sensitivity probe: segment %d has no samples", i+1)
		}
	}
	r := SensitivityResult{Base: levels(p.samples[0])}
	var ipc, ipce, st []float64
	for i := range Stressors {
		l := levels(p.samples[i+1])
		r.Stressed = append(r.Stressed, l)
		ipc = append(ipc, metric.Sensitivity(r.Base.IPC, l.IPC))
		ipce = append(ipce, metric.Sensitivity(r.Base.IPCE, l.IPCE))
		st = append(st, StalledSensitivity(r.Base.StalledPct, l.StalledPct))
	}
	r.IPC, r.IPCE, r.Stalled = vectorOf(ipc), vectorOf(ipce), vectorOf(st)
	return r, nil
}

// Cooldown enforces cooldown_t between probes of one target on a virtual or real clock
// (the caller passes the time; nothing here reads a clock).
type Cooldown struct {
	T    time.Duration
	last map[string]time.Duration
}

// Allowed reports whether target may be probed at now.
func (c *Cooldown) Allowed(target string, now time.Duration) bool {
	t, ok := c.last[target]
	return !ok || now-t >= c.T
}

// Done records that target's probe ended at now.
func (c *Cooldown) Done(target string, now time.Duration) {
	if c.last == nil {
		c.last = map[string]time.Duration{}
	}
	c.last[target] = now
}

// Neighbour runs the probe's neighbour on a real platform: Start begins a stressor (kind
// from Stressors) next to the target and returns a stop function; the idle baseline starts
// nothing. A Docker implementation runs `colo stress KIND` (or `colo stress KIND
// --stress-ng`) in a container pinned to a core of the target's socket.
type Neighbour interface {
	Start(ctx context.Context, kind string) (stop func() error, err error)
}

// Sampler reads the target's counters accumulated since the previous call (instructions,
// cycles, stalls_total of its cgroup).
type Sampler interface {
	Sample() (CounterSample, error)
}

// DriveSensitivity runs the probe: per segment it starts the neighbour's stressor (none
// for the baseline), samples the target every cfg.Frequency for the segment's time, and
// stops it. Every sample counts: the thesis samples every 50 ms and removes outliers by
// trimming (3 highest and 3 lowest above 30 samples, seed000.md §2.6 [repo]); it discards
// no ramp-up interval, and the interval straddling the stressor's start is what the
// trimming takes out. wait blocks for a duration or until ctx is done (the caller's
// clock: time.After on Linux, the simulated machine's steps on sim, a fake in tests).
// Isolation (the partition) is the caller's: set it before, restore after.
func DriveSensitivity(ctx context.Context, cfg SensitivityConfig, nb Neighbour, s Sampler, wait func(context.Context, time.Duration) error) (SensitivityResult, error) {
	p, err := NewSensitivityProbe(cfg)
	if err != nil {
		return SensitivityResult{}, err
	}
	n := int(cfg.SegmentTime() / cfg.Frequency)
	for {
		_, kind, done := p.Segment()
		if done {
			break
		}
		stop := func() error { return nil }
		if kind != "" {
			if stop, err = nb.Start(ctx, kind); err != nil {
				return SensitivityResult{}, fmt.Errorf("sensitivity probe: neighbour %s: %w", kind, err)
			}
		}
		err := func() error {
			for i := 0; i < n; i++ {
				if err := wait(ctx, cfg.Frequency); err != nil {
					return err
				}
				c, err := s.Sample()
				if err != nil {
					return err
				}
				p.Add(c)
			}
			return nil
		}()
		if serr := stop(); err == nil && serr != nil {
			err = fmt.Errorf("sensitivity probe: stopping neighbour %s: %w", kind, serr)
		}
		if err != nil {
			return SensitivityResult{}, err
		}
		p.Next()
	}
	return p.Result()
}
