//go:build linux

package stress

import (
	"syscall"
	"time"
	"unsafe"
)

const clockThreadCPUTimeID = 3 // CLOCK_THREAD_CPUTIME_ID

// ThreadCPUClock returns a clock that reads the calling OS thread's CPU time (as a
// time.Time since the epoch). Use it from a goroutine locked to its thread
// (runtime.LockOSThread): it then measures the thread's own running time, including cycles
// stalled on memory but not the time it was preempted by other processes, which on a shared
// 2-core machine is most of the noise of wall-clock timing.
func ThreadCPUClock() func() time.Time {
	return func() time.Time {
		var ts syscall.Timespec
		syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
		return time.Unix(ts.Sec, ts.Nsec)
	}
}

// ProcessCPUSeconds is the user + system CPU time of this process so far.
func ProcessCPUSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
