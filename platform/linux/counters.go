package linux

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"colo/counter"
	"colo/machine"
	"colo/perf"
	"colo/workload"
)

// Counters: perf per cgroup, runtime CPU time and statistics, resctrl monitoring.

// probeCounters opens perf counters on colo's own cgroup, as Start will on each job's,
// and says why IPCE cannot be measured (it needs hardware cycles and the
// microarchitecture's stall-cycles raw event) and why L2 misses cannot be counted (the
// microarchitecture's raw L2-miss event); "" when they open.
func (p *Platform) probeCounters() (noIPCE, noL2 string) {
	cg, err := workload.CgroupOfPID(os.Getpid())
	if err != nil {
		why := "perf: colo's own cgroup: " + err.Error()
		return why, why
	}
	cpu := 0
	if cpus, err := machine.ParseCPUList(readTrim("/sys/devices/system/cpu/online")); err == nil && len(cpus) > 0 {
		cpu = cpus[0]
	}
	c, err := perf.OpenCgroup(cg.PerfEventDir(), []int{cpu}, perf.Options{Sys: p.o.PerfSys, Microarch: p.o.Microarch, Quiet: true})
	if err != nil {
		return err.Error(), err.Error()
	}
	defer c.Close()
	if c.Mode() != perf.ModeHardware {
		why := fmt.Sprintf("perf counts %s events only (%s)", c.Mode(), c.Reason())
		return why, why
	}
	noIPCE = "no " + perf.StallsTotal + " raw event for this CPU (perf/events.yaml)"
	noL2 = "no raw L2-miss event for this CPU (perf/events.yaml l2_miss)"
	for _, e := range c.Events() {
		switch e {
		case perf.StallsTotal:
			noIPCE = ""
		case perf.L2Misses:
			noL2 = ""
		}
	}
	return noIPCE, noL2
}

// L2MissesUnavailable returns "" when jobs' L2 misses are counted (a hardware PMU and
// the microarchitecture's raw L2-miss event, perf/events.yaml), else why not; then
// counter.Reading.L2Misses stay 0, which sched.Sample documents as "no such counter".
func (p *Platform) L2MissesUnavailable() string { return p.noL2 }

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// IPCEUnavailable implements platform.CounterReporter: why this host's counters cannot give
// IPCE ("" when they can).
func (p *Platform) IPCEUnavailable() string { return p.noIPCE }

func (p *Platform) openCounters(j *job) {
	c, err := perf.OpenCgroup(j.cg.PerfEventDir(), j.cpus, perf.Options{Sys: p.o.PerfSys, Microarch: p.o.Microarch, Logf: p.o.Logf})
	if err != nil {
		p.notef("job %s: perf counters unavailable: %v; continuing with runtime CPU time", j.spec.Name, err)
	} else {
		j.counter = c
	}
	if j.counter == nil || j.counter.Mode() != perf.ModeSoftware {
		if ct, err := workload.OpenCPUTime(j.cg); err == nil {
			j.cputime = ct
		} else {
			p.notef("job %s: CPU time unavailable: %v", j.spec.Name, err)
		}
	}
}

func (p *Platform) closeCounters(j *job) {
	if j.counter != nil {
		j.counter.Close()
		j.counter = nil
	}
	if j.cputime != nil {
		j.cputime.Close()
		j.cputime = nil
	}
}

// Read implements platform.CounterSampler. It syncs the container's threads into its resctrl
// groups, then returns cumulative counters. Without hardware counters, instructions,
// cycles and stalls stay 0, so IPC and IPCE come out unavailable (NaN), never 0. A job
// whose container ended on its own gets one error saying so; later reads return its
// last counts.
func (p *Platform) Read(id int) (counter.Reading, error) {
	j, err := p.get(id)
	if err != nil {
		return counter.Reading{}, err
	}
	j.mu.Lock()
	exited, reported, ex := j.exited, j.exitReported, j.exit
	if exited {
		j.exitReported = true
	}
	j.mu.Unlock()
	if !exited {
		p.syncTasks(j)
	}
	c, err := p.read(j)
	if exited && !reported {
		return c, fmt.Errorf("its container ended before colo stopped it (%s); counters stop here", ex)
	}
	return c, err
}

func (p *Platform) read(j *job) (counter.Reading, error) {
	c := j.base
	if j.counter != nil {
		if _, err := j.counter.Sample(); err != nil {
			p.notef("job %s: perf read failed: %v; perf counters dropped for this job", j.spec.Name, err)
			j.counter.Close()
			j.counter = nil
		}
	}
	if j.counter != nil {
		t := j.counter.Totals()
		c.Instructions += t[perf.Instructions]
		c.Cycles += t[perf.Cycles]
		c.StallsTotal += t[perf.StallsTotal]
		c.StallsL3Miss += t[perf.StallsL3Miss]
		c.L2Misses += t[perf.L2Misses] // absent (0) without the raw event
		c.LLCReferences += t[perf.CacheReferences]
		c.LLCMisses += t[perf.CacheMisses]
		if v, ok := t[perf.TaskClock]; ok {
			c.CPUTime += time.Duration(v)
		}
	}
	if j.cputime != nil {
		if ns, err := j.cputime.Read(); err == nil {
			j.lastCPU = time.Duration(ns)
		}
		c.CPUTime = j.base.CPUTime + j.lastCPU
	}
	pl := p.placement(j.spec.ID)
	mon := pl.Mon
	if mon == "" {
		mon = pl.Group // monitored with its control group (no RMID left)
	}
	if p.rdt != nil && (mon != "" || pl.Mon != "") {
		occ, tot, loc, err := p.rdt.MonData(mon)
		if err == nil {
			c.LLCOccupancy, c.MBMTotalBytes, c.MBMLocalBytes = float64(occ), float64(tot), float64(loc)
		}
	}
	return c, nil
}

// DockerStats returns the latest runtime statistics sample of a job and how many were
// taken (the one-shot stats endpoint for Docker, cgroup files for processes).
func (p *Platform) DockerStats(id int) (workload.Stats, int, error) {
	j, err := p.get(id)
	if err != nil {
		return workload.Stats{}, 0, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stats, j.statsN, nil
}

// statsLoop polls the runtime statistics of one job (when its data block selects docker)
// until the job stops. dockerd 20.10 answers a one-shot call at its collector's next 1 s
// tick, so each job has its own loop and the effective rate is at most 1 Hz there.
func (p *Platform) statsLoop(j *job) {
	defer p.wg.Done()
	freq := j.spec.Data.Frequency
	if freq <= 0 {
		freq = time.Second
	}
	for {
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		s, err := p.rtm.Stats(ctx, j.rid)
		cancel()
		j.mu.Lock()
		stopping := j.stopping || j.exited
		if err == nil {
			j.stats, j.statsN = s, j.statsN+1
		}
		first := err != nil && j.statsErr == ""
		if err != nil {
			j.statsErr = err.Error()
		}
		j.mu.Unlock()
		if stopping {
			return
		}
		if first && p.ctx.Err() == nil {
			p.notef("job %s: runtime stats unavailable: %v (retrying)", j.spec.Name, err)
		}
		wait := freq - time.Since(t0)
		if wait < time.Millisecond {
			wait = time.Millisecond
		}
		select {
		case <-p.ctx.Done():
			return
		case <-j.done:
			return
		case <-time.After(wait):
		}
	}
}
