package bench

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"colo/counter"
	"colo/machine"
)

// fakePlatform is a deliberately crude machine for testing the run loop: a job whose
// workload is "tip:N" runs at IPCE 0.95 with ≥ N exclusive ways and 0.30 without; "flat:X"
// runs at X minus 0.005 per way held exclusively by other jobs of its socket.
type fakePlatform struct {
	m         *machine.Profile
	now       time.Duration
	jobs      map[int]*fakeJob
	def       map[int]uint64
	failAlloc map[int]bool // SetAllocation with a mask fails for these jobs
	allocs    int
}

type fakeJob struct {
	spec    JobSpec
	started time.Duration
	socket  int
	cores   int
	mask    uint64
	mba     int
	c       counter.Reading
}

func newFake(m *machine.Profile) *fakePlatform {
	return &fakePlatform{m: m, jobs: map[int]*fakeJob{}, def: map[int]uint64{}, failAlloc: map[int]bool{}}
}

func (f *fakePlatform) Machine() *machine.Profile { return f.m }
func (f *fakePlatform) Check(j JobSpec) error {
	if !strings.HasPrefix(j.Workload, "tip:") && !strings.HasPrefix(j.Workload, "flat:") && !strings.HasPrefix(j.Workload, "phase:") {
		return fmt.Errorf("workload %q is not tip:N, phase:N:M:T or flat:X", j.Workload)
	}
	return nil
}
func (f *fakePlatform) Start(j JobSpec, cpus []int) error {
	f.jobs[j.ID] = &fakeJob{spec: j, socket: f.m.SocketOfCore(cpus[0]), cores: len(cpus), started: f.now}
	return nil
}
func (f *fakePlatform) Stop(id int) error { delete(f.jobs, id); return nil }
func (f *fakePlatform) Move(id int, cpus []int) error {
	j := f.jobs[id]
	j.socket, j.mask, j.mba = f.m.SocketOfCore(cpus[0]), 0, 0
	return nil
}
func (f *fakePlatform) SetAllocation(id, socket int, mask uint64, mba int) error {
	if mask != 0 && f.failAlloc[id] {
		return fmt.Errorf("no free CLOS")
	}
	j, ok := f.jobs[id]
	if !ok {
		return fmt.Errorf("job %d not running", id)
	}
	f.allocs++
	j.mask, j.mba = mask, mba
	return nil
}
func (f *fakePlatform) SetDefaultMask(s int, m uint64) error { f.def[s] = m; return nil }
func (f *fakePlatform) Read(id int) (counter.Reading, error) {
	j, ok := f.jobs[id]
	if !ok {
		return counter.Reading{}, fmt.Errorf("job %d not running", id)
	}
	return j.c, nil
}
func (f *fakePlatform) ReadAllocation(id int) (AllocationReading, error) {
	j := f.jobs[id]
	if j.mask == 0 {
		return AllocationReading{}, nil
	}
	return AllocationReading{Group: fmt.Sprint("job-", id), Mask: j.mask, MBA: j.mba}, nil
}
func (f *fakePlatform) Now() time.Duration { return f.now }
func (f *fakePlatform) Close() error       { return nil }

func (f *fakePlatform) ipce(j *fakeJob) float64 {
	kind, arg, _ := strings.Cut(j.spec.Workload, ":")
	if kind == "phase" { // phase:N:M:T — tip:N until T seconds of run time, then tip:M
		var n, m, at int
		fmt.Sscanf(arg, "%d:%d:%d", &n, &m, &at)
		kind, arg = "tip", strconv.Itoa(n)
		if f.now-j.started >= time.Duration(at)*time.Second {
			arg = strconv.Itoa(m)
		}
	}
	x, _ := strconv.ParseFloat(arg, 64)
	if kind == "tip" {
		if bits.OnesCount64(j.mask) >= int(x) {
			return 0.95
		}
		return 0.30
	}
	held := 0
	for _, o := range f.jobs {
		if o != j && o.socket == j.socket {
			held += bits.OnesCount64(o.mask)
		}
	}
	return x - 0.005*float64(held)
}

func (f *fakePlatform) Advance(t time.Duration) error {
	if t < f.now {
		return fmt.Errorf("time goes backwards")
	}
	dt := (t - f.now).Seconds()
	ids := make([]int, 0, len(f.jobs))
	for id := range f.jobs {
		ids = append(ids, id)
	}
	for _, id := range ids {
		j := f.jobs[id]
		e := f.ipce(j)
		cyc := 2.4e9 * dt * float64(j.cores)
		j.c.Cycles += cyc
		j.c.StallsTotal += (1 - e) * cyc
		j.c.StallsL3Miss += 0.5 * (1 - e) * cyc
		j.c.Instructions += 2 * e * cyc
	}
	f.now = t
	return nil
}
