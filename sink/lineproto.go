package sink

import (
	"math"
	"strconv"
	"strings"
	"time"

	"colo/store"
)

// Measurement names of the sink's schema (docs/report.md; dashboards/grafana-colo.json).
const (
	MeasSample     = "colo_sample"
	MeasAllocation = "colo_allocation"
	MeasEvent      = "colo_event"
	MeasSummary    = "colo_summary"
)

// Source is what every point of one scheduler run is tagged with.
type Source struct {
	Run       string    // run directory name (tag run)
	Scheduler string    // tag scheduler
	Start     time.Time // absolute time of the run's offset 0
}

var (
	measEscaper = strings.NewReplacer(",", `\,`, " ", `\ `, "\n", `\n`)
	tagEscaper  = strings.NewReplacer(",", `\,`, " ", `\ `, "=", `\=`, "\n", `\n`)
	strEscaper  = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
)

// line builds one line-protocol line: measurement,tags fields timestamp.
type line struct {
	sb     strings.Builder
	fields int
}

func newLine(meas string) *line {
	l := &line{}
	l.sb.Grow(256)
	l.sb.WriteString(measEscaper.Replace(meas))
	return l
}

// tag adds a tag (tags must come before fields; empty values are left out, as the line
// protocol has no empty tag values).
func (l *line) tag(k, v string) *line {
	if v == "" {
		return l
	}
	l.sb.WriteByte(',')
	l.sb.WriteString(tagEscaper.Replace(k))
	l.sb.WriteByte('=')
	l.sb.WriteString(tagEscaper.Replace(v))
	return l
}

func (l *line) sep() {
	if l.fields == 0 {
		l.sb.WriteByte(' ')
	} else {
		l.sb.WriteByte(',')
	}
	l.fields++
}

// float adds a float field; NaN and ±Inf are left out (the line protocol cannot carry
// them, so "unavailable" is the field's absence).
func (l *line) float(k string, v float64) *line {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return l
	}
	l.sep()
	l.sb.WriteString(tagEscaper.Replace(k))
	l.sb.WriteByte('=')
	l.sb.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	return l
}

func (l *line) int(k string, v int64) *line {
	l.sep()
	l.sb.WriteString(tagEscaper.Replace(k))
	l.sb.WriteByte('=')
	l.sb.WriteString(strconv.FormatInt(v, 10))
	l.sb.WriteByte('i')
	return l
}

func (l *line) str(k, v string) *line {
	l.sep()
	l.sb.WriteString(tagEscaper.Replace(k))
	l.sb.WriteString(`="`)
	l.sb.WriteString(strEscaper.Replace(v))
	l.sb.WriteByte('"')
	return l
}

func (l *line) at(t time.Time) string {
	l.sb.WriteByte(' ')
	l.sb.WriteString(strconv.FormatInt(t.UnixNano(), 10))
	return l.sb.String()
}

func (src Source) tags(l *line) *line {
	return l.tag("run", src.Run).tag("scheduler", src.Scheduler)
}

// SampleLine encodes one sample of job j: tags run, scheduler, job, name, priority,
// socket; fields as store.SampleColumns (left out when unavailable) plus interval_ns
// (always present) and mem_bandwidth_bps.
func SampleLine(src Source, j store.Job, s store.Sample) string {
	l := src.tags(newLine(MeasSample)).
		tag("job", strconv.Itoa(s.Job)).tag("name", j.Name).tag("priority", strconv.FormatBool(j.Priority)).
		tag("socket", strconv.Itoa(s.Socket))
	l.int("interval_ns", int64(s.Interval))
	l.float("instructions", s.Instructions).float("cycles", s.Cycles).float("stalls_total", s.StallsTotal).
		float("stalls_l3_miss", s.StallsL3Miss).float("llc_refs", s.LLCRefs).float("llc_misses", s.LLCMisses).
		float("llc_occupancy_bytes", s.OccupancyBytes).float("mem_bytes_local", s.MemBytesLocal).
		float("mem_bytes_total", s.MemBytesTotal).float("mem_bandwidth_bps", s.MemBandwidth()).
		float("ipc", s.IPC).float("ipce", s.IPCE).float("stalled", s.Stalled)
	return l.at(src.Start.Add(s.T))
}

// AllocationLine encodes one allocation change: tags run, scheduler, socket, clos,
// source; fields mask (integer), ways, mba (left out when uncontrolled), members.
func AllocationLine(src Source, a store.Allocation) string {
	m := make([]string, len(a.Members))
	for i, x := range a.Members {
		m[i] = strconv.Itoa(x)
	}
	l := src.tags(newLine(MeasAllocation)).tag("socket", strconv.Itoa(a.Socket)).tag("clos", a.CLOS).tag("source", a.Source)
	l.int("mask", int64(a.Mask)).int("ways", int64(popcount(a.Mask))).float("mba", a.MBA).str("members", strings.Join(m, ","))
	return l.at(src.Start.Add(a.T))
}

// EventLine encodes one decision or marker: tags run, scheduler, kind; fields job, text.
func EventLine(src Source, e store.Event) string {
	l := src.tags(newLine(MeasEvent)).tag("kind", e.Kind)
	l.int("job", int64(e.Job)).str("text", e.Text)
	return l.at(src.Start.Add(e.T))
}

// SummaryLine encodes a run's summary at time at: fields as store.SummaryColumns.
func SummaryLine(src Source, s store.Summary, at time.Time) string {
	l := src.tags(newLine(MeasSummary))
	l.int("jobs_completed", int64(s.JobsCompleted)).int("jobs_rejected", int64(s.JobsRejected)).
		float("priority_ipce", s.PriorityIPCE).float("batch_ipce", s.BatchIPCE).float("global_ipce", s.GlobalIPCE).
		float("time_over_target", s.TimeOverTarget).float("time_over_target_p90", s.TimeOverTargetP90).
		float("queue_delay_mean_s", s.QueueDelayMean).float("queue_delay_p90_s", s.QueueDelayP90).
		float("virtual_seconds", s.VirtualSeconds).float("wall_seconds", s.WallSeconds)
	return l.at(at)
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}
