// Package profiler is the driver of the agent's online profiling (colo agent --profile):
// it picks a container without a profile, runs the Bubble-Up SoI next to it at increasing
// pressure on the CPUs given for profiling (baseline and pressure interleaved, the
// schedule of agent/profiling), reads its performance from its own metric
// (colo.io/perf-metric), scores its contentiousness with the reporter next to it, stores
// the profile (tenantprofile), and then predicts every profiled container's slowdown under
// its real allocation (predict.PredictUnder), measures it, exports the error and asks for
// a new profile when the error stays large. One profiling run at a time on the node (so
// at most one per socket); every run is logged and counted.
package profiler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"colo/agent/api"
	"colo/agent/core"
	"colo/agent/profiling"
	"colo/machine"
	"colo/perfmetric"
	"colo/perfmetric/scrape"
	"colo/predict"
	"colo/stress"
	"colo/tenantprofile"
)

// NeedsProfileLabel asks for a (new) profile of the container.
const NeedsProfileLabel = "colo.io/needs-profile"

// Options configure a Manager.
type Options struct {
	Store   tenantprofile.Store
	Machine *machine.Profile
	Node    string
	Plan    profiling.Plan
	Policy  profiling.Policy
	// Segment is the length of one baseline or pressured segment.
	Segment time.Duration
	// Interval is how often profiled containers' metrics are read for the self-check.
	Interval time.Duration
	// Check decides when a profile is stale (threshold pp, window of intervals).
	Check profiling.Check
	// CPUs run the bubble (all but the last) and the reporter (the last); one CPU: both.
	CPUs []int
	// ReporterMB and ReporterReps size the reporter (default: LLC size, 20 reps).
	ReporterMB   float64
	ReporterReps int
	// RetryAfter is how long a refused or aborted tenant waits before another attempt.
	RetryAfter time.Duration
	Log        *slog.Logger
	// Bubble runs the SoI at mb MB until ctx ends, calling ready once it exerts its
	// pressure (its working set allocated); Reporter measures the reporter once (ns);
	// Scrape fetches a metrics endpoint. Defaults: colo's stressors in process and HTTP.
	Bubble   func(ctx context.Context, mb float64, ready func()) error
	Reporter func(ctx context.Context) (float64, error)
	Scrape   func(ctx context.Context, url string) (perfmetric.Scrape, error)
	// Pause freezes a container until resume is called (default: its cgroup's freezer),
	// for the reporter's measurement without it.
	Pause func(c core.Container) (resume func() error, err error)
}

// tenant is the manager's view of one container at the last tick.
type tenant struct {
	c                    core.Container
	id, name, key, class string
	spec                 *perfmetric.Spec
	specErr              string
	socket, ways         int
	mask                 uint64
	needs                bool
	belowTarget          bool // a priority tenant whose IPCE is below its target
}

// self is the self-check state of one profiled container.
type self struct {
	prev      *perfmetric.Scrape
	measured  float64 // slowdown, NaN until read
	errPP     float64
	check     profiling.Check
	predicted float64
}

// Manager runs online profiling. Annotate is the agent's hook; Run the measurement loop.
type Manager struct {
	o Options

	mu       sync.Mutex
	tenants  []tenant
	profiles map[string]tenantprofile.Profile
	reporter *tenantprofile.Reporter
	state    map[string]string // key → queued/profiling/refused
	reason   map[string]string
	retry    map[string]time.Time
	stale    map[string]bool
	selfs    map[string]*self // container id
	runs     map[string]int
	wake     chan struct{}
}

// New loads the stored profiles and reporter curve.
func New(o Options) (*Manager, error) {
	if o.Machine == nil || len(o.Plan.Dials) == 0 || o.Plan.Repeats < 1 || o.Segment <= 0 || o.Interval <= 0 {
		return nil, errors.New("profiler: incomplete options")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = 5 * time.Minute
	}
	llcMB := float64(o.Machine.LLC.SizeBytes) / 1e6
	if o.ReporterMB <= 0 {
		o.ReporterMB = llcMB
	}
	if o.ReporterReps <= 0 {
		o.ReporterReps = 20
	}
	bubbleCPUs, repCPUs := o.CPUs, o.CPUs
	if len(o.CPUs) > 1 {
		bubbleCPUs, repCPUs = o.CPUs[:len(o.CPUs)-1], o.CPUs[len(o.CPUs)-1:]
	}
	if o.Bubble == nil {
		o.Bubble = func(ctx context.Context, mb float64, ready func()) error {
			l, err := stress.New(stress.Config{Kind: stress.KindSoI, MB: mb, StreamThreads: 1, RandomThreads: 1, CPUs: bubbleCPUs})
			if err != nil {
				return err
			}
			ready()
			stress.Run(ctx, l, 0, time.Now, nil)
			return nil
		}
	}
	if o.Reporter == nil {
		o.Reporter = func(ctx context.Context) (float64, error) {
			var res stress.ReporterResult
			err := stress.OnThread(repCPUs, func() error {
				var err error
				res, err = stress.MeasureReporter(ctx, stress.ReporterConfig{Type: stress.ReporterAlternating, MB: o.ReporterMB, Reps: o.ReporterReps, Warmup: 1}, stress.ThreadCPUClock())
				return err
			})
			return res.Score, err
		}
	}
	if o.Pause == nil {
		o.Pause = Freeze
	}
	if o.Scrape == nil {
		o.Scrape = func(ctx context.Context, url string) (perfmetric.Scrape, error) {
			return scrape.Fetch(ctx, nil, url, time.Now)
		}
	}
	m := &Manager{o: o, profiles: map[string]tenantprofile.Profile{}, state: map[string]string{}, reason: map[string]string{},
		retry: map[string]time.Time{}, stale: map[string]bool{}, selfs: map[string]*self{}, wake: make(chan struct{}, 1),
		runs: map[string]int{"profiled": 0, "refused": 0, "aborted": 0, "failed": 0}}
	ps, err := o.Store.All()
	if err != nil {
		return nil, fmt.Errorf("profiler: %w", err)
	}
	for _, p := range ps {
		m.profiles[p.Key] = p
	}
	if r, ok, err := o.Store.Reporter(); err != nil {
		return nil, fmt.Errorf("profiler: %w", err)
	} else if ok && slices.Equal(r.Dials, m.dials()) {
		m.reporter = &r
	}
	return m, nil
}

func (m *Manager) dials() []float64 { return append([]float64{0}, m.o.Plan.Dials...) }

// KeyOf is a container's profile key.
func KeyOf(c core.Container) string {
	d := c.Digest
	if d == "" {
		d = c.Image
	}
	return tenantprofile.Key(d, c.Command, c.CPUs)
}

// Profiles returns the stored profiles, sorted by key (GET /api/v1/profiles).
func (m *Manager) Profiles() []tenantprofile.Profile {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]tenantprofile.Profile, 0, len(m.profiles))
	for _, p := range m.profiles {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Annotate implements agent.Profiler: it records the containers for the loop and fills
// their profile fields and predictions.
func (m *Manager) Annotate(st *api.Status, cons []core.Container) {
	ts := make([]tenant, len(cons))
	for i, c := range cons {
		cs := st.Containers[i]
		t := tenant{c: c, id: c.ID, name: c.Name, key: KeyOf(c), class: string(cs.Request.Class), socket: cs.Socket, ways: cs.Ways,
			needs: c.Labels[NeedsProfileLabel] == "true"}
		if cs.Mask != "" {
			v, _ := strconv.ParseUint(strings.TrimPrefix(cs.Mask, "0x"), 16, 64)
			t.mask = v
		}
		if v := c.Labels[perfmetric.Label]; v != "" {
			if sp, err := perfmetric.Parse(v); err == nil {
				t.spec = &sp
			} else {
				t.specErr = err.Error()
			}
		}
		if cs.Request.TargetIPCE > 0 && cs.IPCE != nil && *cs.IPCE < cs.Request.TargetIPCE {
			t.belowTarget = true
		}
		ts[i] = t
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tenants = ts
	st.ProfileRuns = map[string]int{}
	for k, v := range m.runs {
		st.ProfileRuns[k] = v
	}
	for i := range ts {
		cs := &st.Containers[i]
		t := ts[i]
		cs.ProfileKey = t.key
		cs.ProfileState, cs.ProfileReason = m.stateOf(t)
		p, ok := m.profiles[t.key]
		if !ok {
			continue
		}
		if cs.PredictedSlowdown == nil {
			perf, note := m.predict(p, t, ts)
			if perf > 0 {
				v := 1 / perf
				cs.PredictedSlowdown, cs.PredictionNote = &v, note
			}
		}
		if s := m.selfs[t.id]; s != nil {
			if cs.PredictedSlowdown != nil {
				s.predicted = *cs.PredictedSlowdown
			}
			if !math.IsNaN(s.measured) && s.measured > 0 {
				v, e := s.measured, s.errPP
				cs.MeasuredSlowdown, cs.PredictionError = &v, &e
			}
		}
	}
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// stateOf is a tenant's profile state and reason (lock held).
func (m *Manager) stateOf(t tenant) (string, string) {
	if s, ok := m.state[t.key]; ok && s == "profiling" {
		return s, ""
	}
	_, has := m.profiles[t.key]
	if has && !m.stale[t.key] && !t.needs {
		return "profiled", ""
	}
	if s := m.state[t.key]; s == "refused" || s == "aborted" {
		return "refused", m.reason[t.key]
	}
	if t.specErr != "" {
		return "none", t.specErr
	}
	ok, why := profiling.Eligible(profiling.Tenant{Class: t.class, PerfMetric: specString(t.spec), HasProfile: has && !m.stale[t.key], NeedsProfile: t.needs}, m.o.Policy)
	if !ok {
		return "none", why
	}
	return "queued", ""
}

func specString(s *perfmetric.Spec) string {
	if s == nil {
		return ""
	}
	return s.String()
}

// predict is p's tenant's normalised performance next to the other profiled tenants of
// its socket under their allocation (lock held).
func (m *Manager) predict(p tenantprofile.Profile, t tenant, all []tenant) (float64, string) {
	al := predict.Allocation{LLCMB: float64(m.o.Machine.LLC.SizeBytes) / 1e6, TotalWays: m.o.Machine.LLC.Ways, Ways: t.ways}
	var scores []float64
	left := 0
	for _, o := range all {
		if o.id == t.id || o.socket != t.socket {
			continue
		}
		op, ok := m.profiles[o.key]
		if !ok {
			left++
			continue
		}
		scores = append(scores, op.Score)
		ov := 1.0
		if t.mask != 0 && o.mask != 0 {
			ov = float64(bits.OnesCount64(t.mask&o.mask)) / float64(bits.OnesCount64(o.mask))
		} else if t.mask != 0 { // the neighbour in system/default: assume it overlaps A's share
			ov = float64(bits.OnesCount64(t.mask)) / float64(m.o.Machine.LLC.Ways)
		}
		al.Overlap = append(al.Overlap, ov)
	}
	perf, note, err := predict.PredictUnder(p.Curve(), nil, scores, al, predict.MethodLinear)
	if err != nil {
		return 0, err.Error()
	}
	if left > 0 {
		note = strings.TrimPrefix(note+fmt.Sprintf("; %d neighbours without a profile left out", left), "; ")
	}
	return perf, note
}

// Run profiles and self-checks until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	tk := time.NewTicker(m.o.Interval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		case <-m.wake:
		}
		m.selfCheck(ctx)
		if t, ok := m.next(); ok {
			m.profile(ctx, t)
		}
	}
}

// next picks the first queued tenant (by container id).
func (m *Manager) next() (tenant, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := slices.Clone(m.tenants)
	sort.Slice(ts, func(i, j int) bool { return ts[i].id < ts[j].id })
	now := time.Now()
	for _, t := range ts {
		if st, _ := m.stateOf(t); st != "queued" && !(st == "refused" && now.After(m.retry[t.key])) {
			continue
		}
		if ok, _ := profiling.Eligible(profiling.Tenant{Class: t.class, PerfMetric: specString(t.spec),
			HasProfile: m.hasFresh(t.key), NeedsProfile: t.needs}, m.o.Policy); !ok {
			continue
		}
		if now.Before(m.retry[t.key]) {
			continue
		}
		return t, true
	}
	return tenant{}, false
}

func (m *Manager) hasFresh(key string) bool {
	_, ok := m.profiles[key]
	return ok && !m.stale[key]
}

// current returns the tenant with id as of the last tick.
func (m *Manager) current(id string) (tenant, []tenant, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.tenants {
		if t.id == id {
			return t, slices.Clone(m.tenants), true
		}
	}
	return tenant{}, nil, false
}

// blocked reports why profiling next to t must stop now ("" it may go on): the tenant
// left, or a priority tenant of its socket is below its target.
func (m *Manager) blocked(t tenant) string {
	cur, all, ok := m.current(t.id)
	if !ok {
		return "the container is gone"
	}
	for _, o := range all {
		if o.id != t.id && o.socket == cur.socket && o.class == "priority" && o.belowTarget {
			return "priority tenant " + o.name + " on socket " + strconv.Itoa(o.socket) + " is below its target"
		}
	}
	return ""
}

func (m *Manager) setState(key, state, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state[key], m.reason[key] = state, reason
}

func (m *Manager) outcome(t tenant, outcome, reason string, args ...any) {
	m.mu.Lock()
	m.runs[outcome]++
	if outcome != "profiled" {
		m.state[t.key], m.reason[t.key] = "refused", reason
		m.retry[t.key] = time.Now().Add(m.o.RetryAfter)
	} else {
		delete(m.state, t.key)
		delete(m.reason, t.key)
		delete(m.stale, t.key)
	}
	m.mu.Unlock()
	m.o.Log.Info("profile run", append([]any{"outcome", outcome, "container", t.name, "key", t.key, "reason", reason}, args...)...)
}

// startBubble starts the bubble at dial (0: none) and returns once it exerts pressure;
// stop ends it and returns its error.
func (m *Manager) startBubble(ctx context.Context, dial float64) (stop func() error, err error) {
	if dial <= 0 {
		return func() error { return nil }, nil
	}
	bctx, cancel := context.WithCancel(ctx)
	ready := make(chan struct{})
	done := make(chan error, 1)
	var once sync.Once
	go func() { done <- m.o.Bubble(bctx, dial, func() { once.Do(func() { close(ready) }) }) }()
	stop = func() error { cancel(); return <-done }
	select {
	case <-ready:
		return stop, nil
	case err := <-done:
		cancel()
		if err == nil {
			err = errors.New("bubble ended before it started")
		}
		return nil, err
	case <-ctx.Done():
		_ = stop()
		return nil, ctx.Err()
	}
}

// segment measures t's performance over one segment with the bubble at dial (0: none),
// oriented so that higher is better.
func (m *Manager) segment(ctx context.Context, t tenant, url string, dial float64) (float64, error) {
	stop, err := m.startBubble(ctx, dial)
	if err != nil {
		return 0, fmt.Errorf("bubble: %w", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stop()
		}
	}()
	prev, err := m.o.Scrape(ctx, url)
	if err != nil {
		return 0, err
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(m.o.Segment):
	}
	cur, err := m.o.Scrape(ctx, url)
	if err != nil {
		return 0, err
	}
	stopped = true
	if err := stop(); err != nil {
		return 0, fmt.Errorf("bubble: %w", err)
	}
	v, ok := t.spec.Query.Eval(&prev, cur)
	if !ok {
		return 0, nil // no progress seen: Evaluate refuses the run
	}
	if t.spec.Query.LowerIsBetter() {
		return 1 / v, nil
	}
	return v, nil
}

// trainReporter measures the reporter next to the bubble at every dial.
func (m *Manager) trainReporter(ctx context.Context) (tenantprofile.Reporter, error) {
	r := tenantprofile.Reporter{Dials: m.dials()}
	for _, d := range r.Dials {
		stop, err := m.startBubble(ctx, d)
		if err != nil {
			return r, fmt.Errorf("bubble: %w", err)
		}
		v, err := m.o.Reporter(ctx)
		if serr := stop(); err == nil {
			err = serr
		}
		if err != nil {
			return r, err
		}
		r.Latency = append(r.Latency, v)
	}
	r.At = time.Now().UTC()
	return r, nil
}

// profile runs one profiling run on t; the bubble's and the reporter's buffers go back to
// the OS afterwards (the agent's resident memory returns to its idle size).
func (m *Manager) profile(ctx context.Context, t tenant) {
	defer debug.FreeOSMemory()
	start := time.Now()
	m.setState(t.key, "profiling", "")
	m.o.Log.Info("profile run starts", "container", t.name, "key", t.key, "dials", m.o.Plan.Dials, "repeats", m.o.Plan.Repeats, "segment", m.o.Segment)
	url := t.spec.Endpoint("127.0.0.1")
	segs := m.o.Plan.Schedule()
	perf := make([]float64, len(segs))
	for i, s := range segs {
		if why := m.blocked(t); why != "" {
			m.outcome(t, "aborted", why)
			return
		}
		v, err := m.segment(ctx, t, url, s.Dial)
		if err != nil {
			if ctx.Err() != nil {
				m.setState(t.key, "queued", "")
				return
			}
			m.outcome(t, "failed", err.Error())
			return
		}
		perf[i] = v
	}
	res, err := m.o.Plan.Evaluate(perf)
	if err != nil {
		m.outcome(t, "failed", err.Error())
		return
	}
	if res.Refused != "" {
		m.outcome(t, "refused", res.Refused, "spread", res.Spread)
		return
	}
	m.mu.Lock()
	rep := m.reporter
	m.mu.Unlock()
	if rep == nil {
		r, err := m.trainReporter(ctx)
		if err != nil {
			m.outcome(t, "failed", "reporter curve: "+err.Error())
			return
		}
		if err := m.o.Store.SaveReporter(r); err != nil {
			m.o.Log.Warn("reporter curve not saved", "err", err)
		}
		rep = &r
		m.mu.Lock()
		m.reporter = rep
		m.mu.Unlock()
	}
	score, err := m.contentiousness(ctx, t, rep.Curve())
	if err != nil {
		m.outcome(t, "failed", "contentiousness: "+err.Error())
		return
	}
	baseline := res.Baseline
	if t.spec.Query.LowerIsBetter() {
		baseline = 1 / baseline
	}
	p := tenantprofile.Profile{Key: t.key, Image: t.c.Image, Digest: t.c.Digest, Command: t.c.Command, CPUs: t.c.CPUs, Source: tenantprofile.SourcePerfMetric, Metric: t.spec.String(),
		Baseline: baseline, LowerIsBetter: t.spec.Query.LowerIsBetter(), Dials: res.Dials, Perf: res.Perf,
		Score: score, Spread: res.Spread, Repeats: m.o.Plan.Repeats, Seconds: time.Since(start).Seconds(),
		At: time.Now().UTC(), Node: m.o.Node}
	if err := m.o.Store.Save(p); err != nil {
		m.outcome(t, "failed", "store: "+err.Error())
		return
	}
	m.mu.Lock()
	m.profiles[p.Key] = p
	for _, s := range m.selfs {
		s.check.Reset()
	}
	m.mu.Unlock()
	m.outcome(t, "profiled", "", "seconds", p.Seconds, "score_mb", p.Score, "spread", p.Spread, "perf", p.Perf)
}

// contentiousness scores t: the reporter with t running and with t frozen, A/B like the
// sensitivity, and the difference read on the reporter curve shifted to the frozen
// latency: I = F⁻¹(F(0) + L_with − L_without) (the node's other tenants load both
// measurements alike, and the reporter curve was trained with them present).
func (m *Manager) contentiousness(ctx context.Context, t tenant, rep predict.Curve) (float64, error) {
	with, err := m.o.Reporter(ctx)
	if err != nil {
		return 0, err
	}
	resume, err := m.o.Pause(t.c)
	if err != nil {
		return 0, fmt.Errorf("pause %s: %w", t.name, err)
	}
	without, rerr := m.o.Reporter(ctx)
	if err := resume(); err != nil {
		m.o.Log.Error("container left frozen", "container", t.name, "err", err)
	}
	if rerr != nil {
		return 0, rerr
	}
	with2, err := m.o.Reporter(ctx)
	if err != nil {
		return 0, err
	}
	lat := rep.Perf[0] + (with+with2)/2 - without
	return predict.ScoreOf(rep, t.key, lat, predict.MethodLinear).MB, nil
}

// selfCheck reads every profiled container's metric and compares its slowdown with the
// prediction; a profile whose error stays beyond the threshold is marked stale.
func (m *Manager) selfCheck(ctx context.Context) {
	m.mu.Lock()
	var ts []tenant
	for _, t := range m.tenants {
		if _, ok := m.profiles[t.key]; ok && t.spec != nil && m.state[t.key] != "profiling" {
			ts = append(ts, t)
		}
	}
	live := map[string]bool{}
	for _, t := range m.tenants {
		live[t.id] = true
	}
	for id := range m.selfs {
		if !live[id] {
			delete(m.selfs, id)
		}
	}
	m.mu.Unlock()
	for _, t := range ts {
		cur, err := m.o.Scrape(ctx, t.spec.Endpoint("127.0.0.1"))
		m.mu.Lock()
		s := m.selfs[t.id]
		if s == nil {
			s = &self{measured: math.NaN(), check: m.o.Check}
			m.selfs[t.id] = s
		}
		if err != nil {
			s.prev = nil
			m.mu.Unlock()
			continue
		}
		p := m.profiles[t.key]
		if v, ok := t.spec.Query.Eval(s.prev, cur); ok {
			s.measured = t.spec.Query.Slowdown(p.Baseline, v)
			if s.predicted > 0 && s.measured > 0 {
				s.errPP = predict.PredictionError(1/s.predicted, 1/s.measured)
				if s.check.Observe(s.errPP) && !m.stale[t.key] {
					m.stale[t.key] = true
					m.o.Log.Info("profile stale: prediction error beyond the threshold", "container", t.name, "key", t.key,
						"error_pp", s.errPP, "window", s.check.Window)
				}
			}
		}
		s.prev = &cur
		m.mu.Unlock()
	}
}
