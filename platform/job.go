package platform

import "time"

// DataConfig is a job's resolved collector configuration (benchmark data: blocks).
type DataConfig struct {
	Frequency time.Duration
	Perf      bool
	Docker    bool
	RDT       bool
}

// Job is one job a platform runs (bench.JobSpec: one job of a benchmark's trace).
type Job struct {
	ID       int
	Name     string
	Arrival  time.Duration
	Length   time.Duration // run time after admission; 0: until StopAt or max_t
	StopAt   time.Duration // absolute stop time; 0: none
	Cores    int
	CPUs     []int
	Priority bool
	// IPCETarget is a fraction in (0, 1]; 0: none.
	IPCETarget  float64
	Image       string
	Command     string
	Workload    string
	Env         map[string]string
	Kind        string
	Sensitivity string
	Data        DataConfig
	// SLOms is a latency SLO (p99, ms) of a server job; Rate its request arrival rate
	// (requests/s) and RequestMInstr the instructions one request retires (millions): the
	// simulated server's M/M/1 (metric.MM1P99). 0: not a server.
	SLOms, Rate, RequestMInstr float64
	// MBAMBps is a requested memory bandwidth (MB/s) held by policy/mbps; 0: none.
	MBAMBps float64
	// Antagonist marks the job a scenario knows to be the cause of interference: never
	// shown to a scheduler, only used to score a guard's blame (antagonist precision).
	Antagonist bool
	// Source is "file:line" of the entry the job came from.
	Source string
}
