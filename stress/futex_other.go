//go:build !linux

package stress

import "errors"

type futexWorker struct{}

func newFutexWorker(*uint32) (*futexWorker, error) {
	return nil, errors.New("the syscall (futex) stressor needs Linux")
}

func (w *futexWorker) step() int64 { return 0 }
