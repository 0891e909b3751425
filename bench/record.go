package bench

import "time"

// Recorder receives everything a run produces, as it happens. The store package's run
// writer is the persistent implementation (see cmd/colo/run.go); Memory keeps it in RAM.
// Record types mirror the store's rows field for field.
type Recorder interface {
	Job(JobRecord) error
	Sample(SampleRecord) error
	Allocation(AllocationRecord) error
	Event(EventRecord) error
	Probe(ProbeRecord) error
}

// Job states.
const (
	StateQueued    = "queued"
	StateRunning   = "running"
	StateCompleted = "completed"
	StateRejected  = "rejected"
	StateKilled    = "killed" // still running at max_t
	StateExpired   = "expired"
	// StateNotStarted: the job arrives at or after max_t, so the run ends before it could
	// be admitted (a static trace longer than max_t).
	StateNotStarted = "not-started"
)

// JobRecord is a job and its current state (upserted on every change).
type JobRecord struct {
	ID         int
	Name       string
	Kind       string
	Model      string
	Priority   bool
	IPCETarget float64 // fraction, NaN when none
	Cores      int
	CoreList   string
	Socket     int // -1 when not placed
	Arrival    time.Duration
	Start      time.Duration // -1 when never started
	Stop       time.Duration // -1 when not stopped
	State      string
	Reason     string
}

// SampleRecord is one collector interval of one job; counts cover (T−Interval, T].
type SampleRecord struct {
	Job            int
	T              time.Duration
	Interval       time.Duration
	Socket         int
	Instructions   float64
	Cycles         float64
	StallsTotal    float64
	StallsL3Miss   float64
	LLCRefs        float64
	LLCMisses      float64
	OccupancyBytes float64
	MemBytesLocal  float64
	MemBytesTotal  float64
	IPC            float64
	IPCE           float64
	Stalled        float64
}

// AllocationRecord: from T on, group CLOS on Socket holds Mask and MBA for Members.
// Source is "sched" (applied) or "readback" (read back by the collector).
type AllocationRecord struct {
	T       time.Duration
	Socket  int
	CLOS    string
	Mask    uint64
	MBA     float64
	Members []int
	Source  string
}

// EventRecord is a decision or marker; Job is -1 when it concerns no single job.
type EventRecord struct {
	T    time.Duration
	Kind string
	Job  int
	Text string
}

// ProbeRecord is one measured combination of an allocation probe.
type ProbeRecord struct {
	Job    int
	Start  time.Duration
	End    time.Duration
	Kind   string
	Socket int
	Ways   int
	Mask   uint64
	MBA    float64
	IPC    float64
	IPCE   float64
	Result string
}

// Discard is a Recorder that keeps nothing.
type Discard struct{}

func (Discard) Job(JobRecord) error               { return nil }
func (Discard) Sample(SampleRecord) error         { return nil }
func (Discard) Allocation(AllocationRecord) error { return nil }
func (Discard) Event(EventRecord) error           { return nil }
func (Discard) Probe(ProbeRecord) error           { return nil }

// Memory is a Recorder that keeps everything in RAM (tests, small runs).
type Memory struct {
	Jobs        map[int]JobRecord
	Samples     []SampleRecord
	Allocations []AllocationRecord
	Events      []EventRecord
	Probes      []ProbeRecord
}

func (m *Memory) Job(j JobRecord) error {
	if m.Jobs == nil {
		m.Jobs = map[int]JobRecord{}
	}
	m.Jobs[j.ID] = j
	return nil
}
func (m *Memory) Sample(s SampleRecord) error { m.Samples = append(m.Samples, s); return nil }
func (m *Memory) Allocation(a AllocationRecord) error {
	m.Allocations = append(m.Allocations, a)
	return nil
}
func (m *Memory) Event(e EventRecord) error { m.Events = append(m.Events, e); return nil }
func (m *Memory) Probe(p ProbeRecord) error { m.Probes = append(m.Probes, p); return nil }
