package agent

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
	"time"

	"colo/agent/api"
	"colo/agent/core"
	"colo/metric"
)

func ptr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// snapshot builds the status after a tick (run loop only) and publishes it.
func (a *Agent) snapshot(took time.Duration) api.Status {
	m := a.o.Machine
	st := api.Status{Instance: strings.TrimPrefix(a.o.Journal.Record().Instance, "agent-"), Policy: a.core.Scheduler(), Interval: a.o.Interval.String(),
		Runtime: a.o.Discovery.Name(), ResctrlRoot: a.o.Groups.Root(), Machine: m.Name, Sockets: m.Sockets,
		LLCWays: m.LLC.Ways, DefaultMasks: map[string]string{}, Decisions: a.core.Stats(),
		TickSeconds: took.Seconds(), Updated: time.Now().UTC()}
	if a.rdtErr != nil {
		st.ResctrlError = a.rdtErr.Error()
	}
	if a.mbm.on {
		st.MBMCounters, st.MBMRotationPeriods = a.mbm.slots, a.mbm.rotation
	}
	for s, v := range a.def {
		st.DefaultMasks[fmt.Sprint(s)] = fmt.Sprintf("%#x", v)
	}
	var cons []core.Container // parallel to st.Containers
	for _, mb := range a.core.Members() {
		l := a.live[mb.ID]
		if l == nil {
			continue
		}
		pl := a.al.Placement(l.tenant)
		cs := api.ContainerStatus{ID: mb.ID, Name: mb.Name, Image: mb.Image, Cgroup: mb.Cgroup, Request: mb.Req,
			State: mb.State, Reason: mb.Reason, Socket: mb.Socket, CtrlGroup: pl.Group, MonGroup: pl.Mon,
			Threads: l.threads, CPUSeconds: l.reading.CPUTime.Seconds(), CPUCores: l.cpuCores,
			Counters: "cputime", Probe: "none", Since: a.start.Add(mb.Since).UTC()}
		if pl.Mask != 0 {
			cs.Mask, cs.Ways, cs.MBA = fmt.Sprintf("%#x", pl.Mask), bits.OnesCount64(pl.Mask), pl.MBA
		}
		if a.mbm.on && pl.Mon != "" {
			cs.MBMCounter = "unassigned"
			if a.mbm.held[pl.Mon] {
				cs.MBMCounter = "assigned"
			}
		}
		if l.refused != nil && cs.Reason == "" {
			cs.Reason = fmt.Sprintf("waiting for %#x: %s (retried every interval)", l.refused.Mask, l.refusedWhy)
		}
		if l.counters != nil {
			cs.Counters = l.counters.Mode()
		}
		if st.Decisions.Probes["refused"] > 0 && mb.Req.Class == core.Priority {
			cs.Probe = "refused"
		}
		switch {
		case pl.Mon != "":
			cs.Monitoring = "container"
		case pl.Group != "":
			cs.Monitoring, cs.MonGroup = "control", pl.Group
		case l.classMon != "":
			cs.Monitoring, cs.MonGroup = "class", l.classMon
		default:
			cs.Monitoring = "none"
		}
		if l.monOK && pl.Mon != "" {
			cs.LLCOccupancyBytes = ptr(l.reading.LLCOccupancy)
			cs.MBMTotalBytes = ptr(l.reading.MBMTotalBytes)
			cs.MBMLocalBytes = ptr(l.reading.MBMLocalBytes)
			if l.sample.Interval > 0 {
				cs.MemBandwidthMBps = ptr(l.sample.MemBandwidthMBps)
			}
		}
		if l.sample.Interval > 0 && l.sample.Cycles > 0 {
			cs.IPC = ptr(metric.IPC(l.sample.Instructions, l.sample.Cycles))
			if l.sample.StallsTotal > 0 {
				cs.IPCE = ptr(metric.IPCE(l.sample.StallsTotal, l.sample.Cycles))
			}
		}
		st.Containers = append(st.Containers, cs)
		cons = append(cons, mb.Container)
	}
	if a.o.Predictor != nil {
		a.o.Predictor.predictions(st.Containers)
	}
	if a.o.Profiler != nil {
		a.o.Profiler.Annotate(&st, cons)
	}
	a.mu.Lock()
	st.RuntimeConnected, st.RuntimeError = a.runtime.up, a.runtime.err
	st.Counts = map[string]int{}
	for k, v := range a.counts {
		st.Counts[k] = v
	}
	st.LabelErrors = map[string]int{}
	for k, v := range a.labelErr {
		st.LabelErrors[k] = v
	}
	st.Ticks = a.status.Ticks + 1
	st.Notes = append([]string(nil), a.notes...)
	a.status = st
	a.mu.Unlock()
	return st
}

// Status returns the latest published status (safe from any goroutine).
func (a *Agent) Status() api.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}
