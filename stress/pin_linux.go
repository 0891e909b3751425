//go:build linux

package stress

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// PinThread restricts the calling OS thread to cpus (sched_setaffinity on thread 0 = self).
// Call it after runtime.LockOSThread, and do not unlock: a goroutine that exits while
// locked takes its thread with it, so the affinity never leaks to other goroutines.
func PinThread(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	var mask [16]uint64 // 1024 CPUs
	for _, c := range cpus {
		if c < 0 || c >= len(mask)*64 {
			return fmt.Errorf("cpu %d out of range 0-%d", c, len(mask)*64-1)
		}
		mask[c/64] |= 1 << (uint(c) % 64)
	}
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, uintptr(len(mask)*8), uintptr(unsafe.Pointer(&mask[0])))
	if e != 0 {
		return fmt.Errorf("sched_setaffinity %v: %w", cpus, e)
	}
	return nil
}

// OnThread runs f on a fresh OS thread pinned to cpus (none: unpinned); processes that f
// starts inherit the affinity, and ThreadCPUClock inside f reads that thread. The thread is
// discarded afterwards (the goroutine exits locked).
func OnThread(cpus []int, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := PinThread(cpus); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}
