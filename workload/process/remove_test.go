package process

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// fakeRemove fails each directory with the errors queued for it, in order, then succeeds,
// counting the calls.
type fakeRemove struct {
	queued map[string][]error
	calls  map[string]int
}

func (f *fakeRemove) remove(d string) error {
	f.calls[d]++
	if q := f.queued[d]; len(q) > 0 {
		f.queued[d] = q[1:]
		return &os.PathError{Op: "remove", Path: d, Err: q[0]}
	}
	return nil
}

func newFake(q map[string][]error) *fakeRemove {
	return &fakeRemove{queued: q, calls: map[string]int{}}
}

// A cgroup whose last process is still exiting refuses rmdir with EBUSY for a moment
// (stress-suite: TestProcessReconcileAfterCrash failed with "device or resource busy"
// on every hierarchy); it is retried until free, other errors are not.
func TestRemoveWhenFree(t *testing.T) {
	busy, gone, perm := syscall.EBUSY, syscall.ENOENT, syscall.EPERM
	ctx := context.Background()

	f := newFake(map[string][]error{"cpu": {busy, busy, busy}, "pids": {gone}})
	if err := removeWhenFree(ctx, []string{"cpu", "memory", "pids"}, f.remove, 5, 0); err != nil {
		t.Fatalf("busy three times with five tries: %v", err)
	}
	if f.calls["cpu"] != 4 || f.calls["memory"] != 1 || f.calls["pids"] != 1 {
		t.Errorf("calls %v; want cpu 4 (3 busy + 1), memory 1, pids 1 (absent counts as removed)", f.calls)
	}

	f = newFake(map[string][]error{"cpu": {busy, busy, busy, busy}, "memory": {perm}})
	err := removeWhenFree(ctx, []string{"cpu", "memory"}, f.remove, 2, 0)
	if !errors.Is(err, busy) || !errors.Is(err, perm) {
		t.Fatalf("busy past the tries and a refusal: %v; want both errors", err)
	}
	if f.calls["cpu"] != 3 || f.calls["memory"] != 1 {
		t.Errorf("calls %v; want cpu 3 (the first and 2 retries), memory 1 (EPERM is not retried)", f.calls)
	}

	cctx, cancel := context.WithCancel(ctx)
	f = newFake(map[string][]error{"cpu": {busy, busy, busy}})
	cancelling := func(d string) error { cancel(); return f.remove(d) }
	// an hour apart: only the cancellation can end the wait
	if err := removeWhenFree(cctx, []string{"cpu"}, cancelling, 100, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while busy: %v; want context.Canceled", err)
	}
}
