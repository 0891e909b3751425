package linux

import (
	"testing"

	"colo/bench"
)

// startAllocated starts js on CPU cpu, gives it mask and mba on socket 0, and squeezes
// system/default on socket 0 to defaultMask: the state a run is in when it is killed.
func startAllocated(t *testing.T, pf *Platform, js bench.JobSpec, cpu int, mask uint64, mba int, defaultMask uint64) {
	t.Helper()
	if err := pf.Start(js, []int{cpu}); err != nil {
		t.Fatal(err)
	}
	if err := pf.SetAllocation(js.ID, 0, mask, mba); err != nil {
		t.Fatal(err)
	}
	if err := pf.SetDefaultMask(0, defaultMask); err != nil {
		t.Fatal(err)
	}
}

// kill9 stops pf as kill -9 would: nothing is undone, its journal stays, and its PID (this
// test's) now names another process (the journal's start time no longer matches).
func kill9(t *testing.T, pf *Platform) {
	t.Helper()
	pf.cancel()
	pf.wg.Wait()
	r := pf.jr.Record()
	r.Start++
	if err := r.Save(); err != nil {
		t.Fatal(err)
	}
}

// emuOptions are e's options on a new in-process emulator of icx-4314-2s (the machine is
// the emulator's, not this host's).
func emuOptions(t *testing.T, e testEnv) (*emuRDT, Options) {
	t.Helper()
	rdt := newEmuRDT(t, "icx-4314-2s")
	o := e.options(rdt)
	o.Machine = rdt.m
	return rdt, o
}

// newPlatform is New(bm, o), failing the test on an error.
func newPlatform(t testing.TB, bm *bench.Benchmark, o Options) *Platform {
	t.Helper()
	pf, err := New(bm, o)
	if err != nil {
		t.Fatal(err)
	}
	return pf
}
