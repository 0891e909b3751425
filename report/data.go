package report

import (
	"fmt"
	"math"
	"math/bits"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"colo/machine"
	"colo/metric"
	"colo/store"
)

// The per-job time-series metrics the report draws.
const (
	mIPC = iota
	mIPCE
	mStalled
	mOcc
	mBW
	nMetrics
)

var metricInfo = [nMetrics]struct{ key, title, unit string }{
	{"ipc", "IPC", "instructions / cycle"},
	{"ipce", "IPCE", "% of cycles not stalled"},
	{"stalled", "Stalled cycles", "% of cycles"},
	{"occupancy", "LLC occupancy", "MiB"},
	{"bandwidth", "Memory bandwidth", "GB/s"},
}

// yTop is the top of metric m's y axis when the data reach ymax: the percentages are drawn
// on 0..100, other metrics up to their largest value (1 when there is none).
func yTop(m int, ymax float64) float64 {
	if m == mIPCE || m == mStalled {
		return 100
	}
	if ymax <= 0 {
		return 1
	}
	return ymax
}

// sampleValues extracts the drawn metrics of one sample (NaN when unavailable).
func sampleValues(s store.Sample) [nMetrics]float64 {
	return [nMetrics]float64{
		mIPC:     s.IPC,
		mIPCE:    s.IPCE * 100,
		mStalled: s.Stalled * 100,
		mOcc:     s.OccupancyBytes / (1 << 20),
		mBW:      s.MemBandwidth() / 1e9,
	}
}

// jobSeries holds one job's bucket means.
type jobSeries struct {
	first int // index of the first bucket
	sum   [nMetrics][]float64
	cnt   [nMetrics][]int32
}

func (js *jobSeries) add(b int, v [nMetrics]float64) {
	if js.cnt[0] == nil {
		js.first = b
	}
	k := b - js.first
	if k < 0 {
		return // out-of-order sample before the job's first bucket: ignored
	}
	for m := range v {
		for len(js.sum[m]) <= k {
			js.sum[m] = append(js.sum[m], 0)
			js.cnt[m] = append(js.cnt[m], 0)
		}
		if !math.IsNaN(v[m]) && !math.IsInf(v[m], 0) {
			js.sum[m][k] += v[m]
			js.cnt[m][k]++
		}
	}
}

// mean returns the bucket mean of metric m at bucket index b (absolute), NaN if none.
func (js *jobSeries) mean(m, b int) float64 {
	k := b - js.first
	if k < 0 || k >= len(js.cnt[m]) || js.cnt[m][k] == 0 {
		return math.NaN()
	}
	return js.sum[m][k] / float64(js.cnt[m][k])
}

// runData is everything the report draws for one scheduler run.
type runData struct {
	dir       string // run directory label
	run       store.Run
	label     string // scheduler, or "dir: scheduler" when several directories are compared
	jobs      []store.Job
	job       map[int]store.Job
	sum       store.Summary
	hasSum    bool
	allocs    []store.Allocation
	events    []store.Event
	probes    []store.ProbeSegment
	parts     []store.PartitionResult
	nSamples  int64
	tMax      float64 // seconds
	bucket    float64 // seconds per bucket
	nBuckets  int
	series    map[int]*jobSeries
	avail     [nMetrics]bool
	nonzero   [nMetrics]bool  // some sample of the metric is not 0
	platform  string          // the manifest's platform (sim, linux)
	color     string          // the scheduler's colour, the same in every chart
	nameCount map[string]int  // jobs per name (uniqueName)
	meanIPCE  map[int]float64 // time-weighted mean IPCE (percent) per job
	overTgt   map[int]float64 // time over target per priority job with a target
	ways      int
	sockets   int
}

// maxBuckets bounds the points per series: enough for the chart width, few enough that a
// 1-hour, 700-job run stays light in the browser.
const maxBuckets = 480

func loadDir(dir string, label bool) ([]*runData, store.Manifest, []string, error) {
	st, err := store.Open(dir)
	if err != nil {
		return nil, store.Manifest{}, nil, err
	}
	defer st.Close()
	man := st.Manifest()
	missing, err := st.Missing()
	if err != nil {
		return nil, man, nil, err
	}
	runs, err := st.Runs()
	if err != nil {
		return nil, man, missing, err
	}
	ways, sockets := 0, 0
	if p, err := machine.Get(man.Machine); err == nil {
		ways, sockets = p.LLC.Ways, p.LLCDomains()
	}
	var out []*runData
	for _, r := range runs {
		d := &runData{dir: dir, run: r, label: r.Scheduler, job: map[int]store.Job{}, series: map[int]*jobSeries{},
			meanIPCE: map[int]float64{}, overTgt: map[int]float64{}, ways: ways, sockets: sockets, platform: man.Platform}
		if label {
			d.label = filepath.Base(filepath.Clean(dir)) + ": " + r.Scheduler
		}
		if err := d.load(st); err != nil {
			return nil, man, missing, fmt.Errorf("%s, run %s: %w", dir, r.Scheduler, err)
		}
		out = append(out, d)
	}
	return out, man, missing, nil
}

func (d *runData) load(st *store.Store) error {
	var err error
	id := d.run.ID
	if d.jobs, err = st.Jobs(id); err != nil {
		return err
	}
	for _, j := range d.jobs {
		d.job[j.ID] = j
	}
	if d.sum, d.hasSum, err = st.Summary(id); err != nil {
		return err
	}
	if d.allocs, err = st.Allocations(id); err != nil {
		return err
	}
	sort.SliceStable(d.allocs, func(a, b int) bool { return d.allocs[a].T < d.allocs[b].T })
	if d.events, err = st.Events(id); err != nil {
		return err
	}
	if d.probes, err = st.Probes(id); err != nil {
		return err
	}
	if d.parts, err = st.Partitions(id); err != nil {
		return err
	}
	_, last, n, err := st.SampleSpan(id)
	if err != nil {
		return err
	}
	d.nSamples = n
	d.tMax = last.Seconds()
	for _, j := range d.jobs {
		if j.Stop != store.Unset {
			d.tMax = math.Max(d.tMax, j.Stop.Seconds())
		}
	}
	for _, a := range d.allocs {
		d.tMax = math.Max(d.tMax, a.T.Seconds())
		if a.Mask != 0 {
			d.ways = max(d.ways, bits.Len64(a.Mask))
		}
		d.sockets = max(d.sockets, a.Socket+1)
	}
	for _, e := range d.events {
		d.tMax = math.Max(d.tMax, e.T.Seconds())
	}
	for _, p := range d.probes {
		d.tMax = math.Max(d.tMax, p.End.Seconds())
	}
	if d.tMax <= 0 {
		d.tMax = 1
	}
	// Buckets: at most maxBuckets over the run, and never shorter than the sampling period
	// (shorter buckets would leave most of them empty and average different jobs in each).
	iv, err := st.TypicalInterval(id)
	if err != nil {
		return err
	}
	d.bucket = math.Max(d.tMax/maxBuckets, iv.Seconds())
	d.nBuckets = int(d.tMax/d.bucket) + 2
	// One pass over the samples: bucket means per job and raw IPCE for time-weighted means.
	raw := map[int][]metric.Sample{}
	err = st.EachSampleLight(id, func(s store.Sample) error {
		v := sampleValues(s)
		b := int(s.T.Seconds() / d.bucket)
		js := d.series[s.Job]
		if js == nil {
			js = &jobSeries{}
			d.series[s.Job] = js
		}
		js.add(b, v)
		for m := range v {
			if !math.IsNaN(v[m]) {
				d.avail[m] = true
				d.nonzero[m] = d.nonzero[m] || v[m] != 0
			}
		}
		raw[s.Job] = append(raw[s.Job], metric.Sample{T: s.T.Seconds(), Value: s.IPCE})
		return nil
	})
	if err != nil {
		return err
	}
	for jid, xs := range raw {
		d.meanIPCE[jid] = metric.TimeWeightedMean(xs) * 100
		if math.IsNaN(d.meanIPCE[jid]) {
			continue // IPCE unavailable (no PMU): no time over target either, rather than 0
		}
		if j, ok := d.job[jid]; ok && j.Priority && j.IPCETarget > 0 {
			if v := metric.TimeOverTarget(xs, j.IPCETarget); !math.IsNaN(v) {
				d.overTgt[jid] = v
			}
		}
	}
	return nil
}

// partitionOnly tells whether the run holds partitioning results and nothing a scheduler
// run records (jobs, samples, allocations, events, probes).
func (d *runData) partitionOnly() bool {
	return len(d.parts) > 0 && len(d.jobs) == 0 && d.nSamples == 0 && len(d.allocs) == 0 && len(d.events) == 0 && len(d.probes) == 0
}

// jobIDs returns the ids of jobs with samples, sorted, batch first then priority (so
// priority lines are drawn on top).
func (d *runData) jobIDs() []int {
	ids := make([]int, 0, len(d.series))
	for id := range d.series {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool {
		pa, pb := d.job[ids[a]].Priority, d.job[ids[b]].Priority
		if pa != pb {
			return !pa
		}
		return ids[a] < ids[b]
	})
	return ids
}

// Individual job lines drawn per time-series chart: beyond these, a chart of a 700-job
// run is an unreadable mass of lines (and megabytes of SVG). The priority and batch means
// are always computed over every job.
const (
	maxJobLines  = 40
	maxPrioLines = 24 // of maxJobLines, at most this many priority jobs when batch jobs remain
)

// drawnJobs picks the jobs whose lines the time-series charts draw, the same for every
// metric so that hovering links them across charts. With at most maxJobLines jobs, all;
// otherwise the most interesting: priority jobs with the lowest time over target (those
// that missed their target most; jobs without one come after, by lowest mean IPCE), then
// batch jobs with the lowest mean IPCE (the most hurt); without IPCE (no PMU), the
// longest-lived. The result keeps jobIDs' order (batch first, priority on top); why says
// what was left out ("" when nothing was).
func (d *runData) drawnJobs() (ids []int, why string) {
	all := d.jobIDs()
	if len(all) <= maxJobLines {
		return all, ""
	}
	var prio, batch []int
	for _, id := range all {
		if d.job[id].Priority {
			prio = append(prio, id)
		} else {
			batch = append(batch, id)
		}
	}
	ipce := func(id int) float64 {
		if v, ok := d.meanIPCE[id]; ok && !math.IsNaN(v) {
			return v
		}
		return math.Inf(1)
	}
	life := func(id int) int {
		n := 0
		for _, c := range d.series[id].cnt[mIPC] {
			n += int(c)
		}
		return n
	}
	less := func(a, b int) bool {
		if ia, ib := ipce(a), ipce(b); ia != ib {
			return ia < ib
		}
		if la, lb := life(a), life(b); la != lb {
			return la > lb
		}
		return a < b
	}
	sort.SliceStable(prio, func(i, j int) bool {
		a, b := prio[i], prio[j]
		ta, oka := d.overTgt[a]
		tb, okb := d.overTgt[b]
		if oka != okb {
			return oka
		}
		if oka && ta != tb {
			return ta < tb
		}
		return less(a, b)
	})
	sort.SliceStable(batch, func(i, j int) bool { return less(batch[i], batch[j]) })
	np := min(len(prio), maxPrioLines)
	if len(batch) < maxJobLines-np {
		np = min(len(prio), maxJobLines-len(batch))
	}
	nb := min(len(batch), maxJobLines-np)
	keep := map[int]bool{}
	for _, id := range prio[:np] {
		keep[id] = true
	}
	for _, id := range batch[:nb] {
		keep[id] = true
	}
	for _, id := range all {
		if keep[id] {
			ids = append(ids, id)
		}
	}
	var parts []string
	if np > 0 {
		if np == len(prio) {
			parts = append(parts, fmt.Sprintf("all %d priority jobs", np))
		} else {
			parts = append(parts, fmt.Sprintf("the %d of %d priority jobs with the lowest time over target (then the lowest mean IPCE)", np, len(prio)))
		}
	}
	if nb > 0 {
		if nb == len(batch) {
			parts = append(parts, fmt.Sprintf("all %d batch jobs", nb))
		} else {
			parts = append(parts, fmt.Sprintf("the %d of %d batch jobs with the lowest mean IPCE", nb, len(batch)))
		}
	}
	why = fmt.Sprintf("Lines drawn for %d of %d jobs: %s (the same jobs in every chart of this run); the thick means are over all %d jobs.",
		len(ids), len(all), strings.Join(parts, " and "), len(all))
	return ids, why
}

// classPeriod is one rectangle of the bitmask panel: class clos held mask on socket from
// t0 to t1 (seconds).
type classPeriod struct {
	socket  int
	clos    string
	mask    uint64
	mba     float64
	members []int
	t0, t1  float64
}

// periods replays the allocation changes into constant (class, mask) periods per socket.
// A class whose member jobs have all stopped ends at the last stop even when the run
// recorded no removal for it (its ways are free from then on).
func (d *runData) periods() []classPeriod {
	clamp := func(p *classPeriod) {
		if len(p.members) == 0 {
			return
		}
		last := math.Inf(-1)
		for _, m := range p.members {
			j, ok := d.job[m]
			if !ok || j.Stop == store.Unset {
				return
			}
			last = math.Max(last, j.Stop.Seconds())
		}
		if last >= p.t0 && last < p.t1 {
			p.t1 = last
		}
	}
	type key struct {
		socket int
		clos   string
	}
	open := map[key]*classPeriod{}
	var out []classPeriod
	for _, a := range d.allocs {
		k := key{a.Socket, a.CLOS}
		t := a.T.Seconds()
		if p, ok := open[k]; ok {
			if p.mask == a.Mask && sameFloat(p.mba, a.MBA) && slices.Equal(p.members, a.Members) {
				continue
			}
			p.t1 = t
			clamp(p)
			if p.t1 > p.t0 {
				out = append(out, *p)
			}
			delete(open, k)
		}
		if a.Mask != 0 {
			open[k] = &classPeriod{socket: a.Socket, clos: a.CLOS, mask: a.Mask, mba: a.MBA, members: a.Members, t0: t}
		}
	}
	keys := make([]key, 0, len(open))
	for k := range open {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].socket != keys[j].socket {
			return keys[i].socket < keys[j].socket
		}
		return keys[i].clos < keys[j].clos
	})
	for _, k := range keys {
		p := open[k]
		p.t1 = d.tMax
		clamp(p)
		if p.t1 > p.t0 {
			out = append(out, *p)
		}
	}
	return out
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
