package linux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"colo/machine"
	"colo/platform"
	"colo/resctrl/plan"
	"colo/workload"
	"colo/workload/process"
)

// Jobs: each job is a container (or a process) pinned to its cores; Start, Stop, Move
// and the CPU quota.

// Check implements platform.Platform: the job must name a command, and its image must be
// present locally (colo never pulls).
func (p *Platform) Check(j platform.Job) error {
	args, err := SplitCommand(j.Command)
	if err != nil {
		return err
	}
	if len(args) == 0 && j.Image == "" {
		if j.Workload != "" {
			return fmt.Errorf("workload %q is a simulator model; on platform linux give image and/or command (e.g. command: stress compute --duration 60s)", j.Workload)
		}
		return errors.New("no image and no command: give image (default " + p.o.Image + ") and command")
	}
	img := p.image(j)
	if p.dock != nil {
		ok, err := p.dock.ImageExists(p.ctx, img)
		if err != nil {
			return err
		}
		if !ok {
			hint := "load or build it locally"
			if img == p.o.Image || strings.HasPrefix(img, "colo") {
				hint = "build it with `colo image build --tag " + img + "`"
			}
			return fmt.Errorf("image %q is not present locally and colo never pulls; %s", img, hint)
		}
	} else if j.Image != "" && j.Image != p.o.Image {
		return fmt.Errorf("image %q: the process runtime can only run colo's own workloads (image %s) or a command", j.Image, p.o.Image)
	}
	return nil
}

func (p *Platform) image(j platform.Job) string {
	if j.Image != "" {
		return j.Image
	}
	return p.o.Image
}

// SplitCommand splits a command line into words: blanks separate, single and double
// quotes group, backslash escapes (no variable expansion: there is no shell).
func SplitCommand(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	esc := false
	for _, r := range s {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case r == '\\' && quote != '\'':
			esc, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("command %q: unterminated %c quote", s, quote)
	}
	if esc {
		return nil, fmt.Errorf("command %q: ends with a backslash", s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

func (p *Platform) get(id int) (*job, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, ok := p.jobs[id]
	if !ok {
		return nil, fmt.Errorf("job %d is not running", id)
	}
	return j, nil
}

// Start implements platform.Platform.
func (p *Platform) Start(js platform.Job, cpus []int) error {
	if len(cpus) == 0 {
		return fmt.Errorf("job %s: no CPUs", js.Name)
	}
	args, err := SplitCommand(js.Command)
	if err != nil {
		return err
	}
	spec := workload.Spec{
		Name:    fmt.Sprintf("colo-%s-j%d-%s", p.run, js.ID, sanitize(js.Name)),
		Command: args, Env: js.Env, Cpuset: machine.FormatCPUList(cpus),
		Labels: map[string]string{workload.LabelRun: p.run, workload.LabelJob: js.Name},
	}
	if a := sanitize(js.Name); a != "" {
		spec.Aliases = []string{a}
	}
	if p.dock != nil {
		spec.Image = p.image(js)
	} else {
		self := p.o.Self
		if self == "" {
			self, _ = os.Executable()
		}
		if js.Image == "" || js.Image == p.o.Image {
			spec.Command = append([]string{self}, args...)
		}
	}
	rid, err := p.rtm.Create(p.ctx, spec)
	if err != nil {
		return fmt.Errorf("job %s: %w", js.Name, err)
	}
	undo := func() { p.rtm.Remove(context.Background(), rid) }
	if err := p.rtm.Start(p.ctx, rid); err != nil {
		undo()
		return fmt.Errorf("job %s: %w", js.Name, err)
	}
	// A workload that cannot start (wrong command, missing file) exits at once: wait a
	// moment for that before counting on it.
	wctx, wcancel := context.WithTimeout(p.ctx, p.o.StartGrace)
	_, werr := p.rtm.Wait(wctx, rid)
	wcancel()
	info, err := p.rtm.Inspect(p.ctx, rid)
	if err != nil {
		undo()
		return fmt.Errorf("job %s: %w", js.Name, err)
	}
	if werr == nil || info.State != workload.Running {
		msg := p.output(rid)
		undo()
		return fmt.Errorf("job %s: its container exited at once (%s)%s; check the image and command %q", js.Name, info.Exit, msg, js.Command)
	}
	j := &job{spec: js, rid: rid, cpus: append([]int(nil), cpus...), socket: p.m.SocketOfCore(cpus[0]), cg: info.Cgroup, done: make(chan struct{})}
	p.openCounters(j)
	p.mu.Lock()
	p.jobs[js.ID] = j
	p.mu.Unlock()
	p.joinRDT(j)
	p.wg.Add(1)
	go p.watch(j)
	if js.Data.Docker {
		p.wg.Add(1)
		go p.statsLoop(j)
	}
	return nil
}

func (p *Platform) output(rid string) string {
	var out string
	if p.dock != nil {
		out, _ = p.dock.Logs(context.Background(), rid, 5)
	} else if pr, ok := p.rtm.(*process.Runtime); ok {
		out, _ = pr.Output(rid)
	}
	if out == "" {
		return ""
	}
	return "; it printed: " + strings.ReplaceAll(strings.TrimSpace(out), "\n", " | ")
}

// watch records how a job's workload ended.
func (p *Platform) watch(j *job) {
	defer p.wg.Done()
	defer close(j.done)
	ex, err := p.rtm.Wait(p.ctx, j.rid)
	if err != nil {
		return // platform closing
	}
	j.mu.Lock()
	stopping := j.stopping
	j.exited, j.exit = true, ex
	j.mu.Unlock()
	if !stopping {
		p.notef("job %s: its container ended before colo stopped it: %s%s", j.spec.Name, ex, p.output(j.rid))
	}
}

// Stop implements platform.Platform: the job's counters, resctrl groups and container go.
func (p *Platform) Stop(id int) error {
	j, err := p.get(id)
	if err != nil {
		return err
	}
	p.mu.Lock()
	delete(p.jobs, id)
	p.mu.Unlock()
	return p.stopJob(j)
}

func (p *Platform) stopJob(j *job) error {
	j.mu.Lock()
	j.stopping = true
	j.mu.Unlock()
	var errs []error
	p.closeCounters(j)
	if err := p.leaveRDT(j); err != nil {
		errs = append(errs, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.o.StopGrace+10*time.Second)
	defer cancel()
	if err := p.rtm.Stop(ctx, j.rid, p.o.StopGrace); err != nil && !errors.Is(err, workload.ErrNotFound) {
		errs = append(errs, err)
	}
	if err := p.rtm.Remove(ctx, j.rid); err != nil && !errors.Is(err, workload.ErrNotFound) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Move implements platform.Platform: new cpuset, counters reopened on the new CPUs (counts
// carried over), and back to system/default.
func (p *Platform) Move(id int, cpus []int) error {
	j, err := p.get(id)
	if err != nil {
		return err
	}
	if err := p.rtm.SetCpuset(p.ctx, j.rid, machine.FormatCPUList(cpus)); err != nil {
		return fmt.Errorf("job %s: %w", j.spec.Name, err)
	}
	c, _ := p.read(j)
	j.base = c
	p.closeCounters(j)
	j.cpus, j.socket = append([]int(nil), cpus...), p.m.SocketOfCore(cpus[0])
	p.openCounters(j)
	if j.quota > 0 && j.quota < 1 { // the quota is per core: it follows the job's core count
		if err := p.SetQuota(id, j.quota); err != nil {
			return err
		}
	}
	if p.rdt != nil { // back to system/default, its monitoring group on the new socket
		p.setWant(id, func(w *plan.Want) { w.Socket, w.Mask, w.MBA = j.socket, 0, 0 })
		if err := p.replan(); err != nil {
			return fmt.Errorf("job %s: %w", j.spec.Name, err)
		}
		p.syncTasks(j)
	}
	return nil
}

// SetQuota implements platform.QuotaSetter: job id may run quota ∈ (0, 1] of its cores'
// time, a CFS bandwidth limit on its cgroup (runtime.CFSQuota over runtime.CFSPeriod;
// Docker: the container's CPUQuota/CPUPeriod, process runtime: cpu.cfs_quota_us or
// cpu.max). 1 removes the limit. A later Move keeps the fraction on the new cores.
func (p *Platform) SetQuota(id int, quota float64) error {
	j, err := p.get(id)
	if err != nil {
		return err
	}
	if !(quota > 0 && quota <= 1) {
		return fmt.Errorf("job %s: CPU quota %v: want a fraction in (0, 1] of its cores' time", j.spec.Name, quota)
	}
	q, err := workload.CFSQuota(quota, len(j.cpus), workload.CFSPeriod)
	if err != nil {
		return fmt.Errorf("job %s: %w", j.spec.Name, err)
	}
	if err := p.rtm.SetCPUQuota(p.ctx, j.rid, q, workload.CFSPeriod); err != nil {
		return fmt.Errorf("job %s: %w", j.spec.Name, err)
	}
	j.quota = quota
	return nil
}
