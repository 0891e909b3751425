package bench

import (
	"bytes"
	"strings"
	"testing"
)

// Every job ends the run in exactly one summary count: the thesis's low-demand hour ends
// with jobs still running at max_t, and the table says so in a row of its own (before,
// it hid them: completed + rejected + queued + not started fell short of the jobs), then
// explains its metrics: what each is, its unit, which way is better.
func TestSummaryCountsKilledJobsAndExplainsItself(t *testing.T) {
	bm, err := Load("../examples/thesis/low-demand.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunAll(bm, []string{"least-loaded"}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Schedulers[0]
	if s.JobsKilledAtEnd == 0 {
		t.Fatalf("no job still running at max_t: %+v", s)
	}
	if got := s.JobsCompleted + s.JobsRejected + s.JobsQueuedAtEnd + s.JobsNotStarted + s.JobsKilledAtEnd; got != s.JobsTotal {
		t.Errorf("completed %d + rejected %d + queued %d + not started %d + killed %d = %d, want every job (%d)",
			s.JobsCompleted, s.JobsRejected, s.JobsQueuedAtEnd, s.JobsNotStarted, s.JobsKilledAtEnd, got, s.JobsTotal)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"jobs killed at max_t", "IPCE: IPC efficiency", "higher is better", "at or above their target"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}
