//go:build !linux

package stress

import (
	"errors"
	"runtime"
)

// PinThread is only supported on Linux.
func PinThread(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	return errors.New("CPU pinning needs Linux")
}

// OnThread runs f on a fresh locked OS thread (pinning needs Linux).
func OnThread(cpus []int, f func() error) error {
	if err := PinThread(cpus); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { runtime.LockOSThread(); errc <- f() }()
	return <-errc
}
