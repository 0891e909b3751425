package bench

import (
	"testing"
	"time"

	"colo/sched"
	"colo/store"
)

// TestRunIntoStore writes a run through the store and reads it back.
func TestRunIntoStore(t *testing.T) {
	bm := mustParse(t, genOK)
	st, err := store.Create(t.TempDir(), store.Meta{Name: bm.Name, Created: time.Unix(0, 0).UTC()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.BeginRun(store.Run{Scheduler: "dynamic"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := bm.Sched
	cfg.Implementation = "dynamic"
	s, _ := sched.New("dynamic", sched.Env{Machine: bm.Machine, Config: cfg})
	res, err := Run(bm, newFake(bm.Machine), s, Options{Recorder: StoreRecorder{W: w}})
	if err != nil {
		t.Fatal(err)
	}
	sum := Summarize(res, 0)
	if err := w.Finish(StoreSummary(sum)); err != nil {
		t.Fatal(err)
	}
	if err := st.Complete(); err != nil {
		t.Fatal(err)
	}
	jobs, err := st.Jobs(w.ID())
	if err != nil || len(jobs) != len(bm.Jobs) {
		t.Fatalf("jobs %d/%d %v", len(jobs), len(bm.Jobs), err)
	}
	n, _ := st.SampleCount(w.ID())
	if int(n) != sum.Samples {
		t.Fatalf("stored %d samples, ran %d", n, sum.Samples)
	}
	probes, _ := st.Probes(w.ID())
	if len(probes) == 0 {
		t.Fatal("no probe segments stored")
	}
	got, ok, err := st.Summary(w.ID())
	if err != nil || !ok || got.JobsCompleted != sum.JobsCompleted || got.Extra["probes"] != float64(sum.Probes) {
		t.Fatalf("summary %+v %v %v", got, ok, err)
	}
	st.Close()
}
