package perf

import (
	"golang.org/x/sys/unix"
)

// Sys is the syscall boundary of the package: tests replace it with a fake PMU.
type Sys interface {
	// Open is perf_event_open(2).
	Open(attr *unix.PerfEventAttr, pid, cpu, groupFd, flags int) (int, error)
	// Read reads the event's counter (read_format: value, time_enabled, time_running).
	Read(fd int, buf []byte) (int, error)
	Close(fd int) error
}

// RealSys performs the real system calls.
type RealSys struct{}

// Open implements Sys.
func (RealSys) Open(attr *unix.PerfEventAttr, pid, cpu, groupFd, flags int) (int, error) {
	return unix.PerfEventOpen(attr, pid, cpu, groupFd, flags)
}

// Read implements Sys.
func (RealSys) Read(fd int, buf []byte) (int, error) { return unix.Read(fd, buf) }

// Close implements Sys.
func (RealSys) Close(fd int) error { return unix.Close(fd) }
