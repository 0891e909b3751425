//go:build linux

package stress

import (
	"syscall"
	"unsafe"
)

const (
	futexWait = 0 // FUTEX_WAIT
	futexWake = 1 // FUTEX_WAKE
)

// futexWorker hammers the kernel futex hash table: FUTEX_WAKE on a shared word, then a
// FUTEX_WAIT whose expected value never matches (returns EAGAIN at once, after taking the
// hash-bucket lock). Like stress-ng --futex it contends on the futex hash table, but it
// can never block (seed000.md §2.6, SysCall stressor).
type futexWorker struct{ word *uint32 }

func newFutexWorker(word *uint32) (*futexWorker, error) { return &futexWorker{word: word}, nil }

const futexPairs = 256

func (w *futexWorker) step() int64 {
	addr := uintptr(unsafe.Pointer(w.word))
	for i := 0; i < futexPairs; i++ {
		syscall.Syscall6(syscall.SYS_FUTEX, addr, futexWake, 1, 0, 0, 0)
		// *word is always 0, so expecting 1 fails with EAGAIN without sleeping.
		syscall.Syscall6(syscall.SYS_FUTEX, addr, futexWait, 1, 0, 0, 0)
	}
	return 2 * futexPairs
}
