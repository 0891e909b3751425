package bench

import (
	"math"
	"testing"
)

// TestThesisExamples checks the three Table 5.1 scenarios: ~720 arrivals in an hour at
// N(5 s, 2), the priority share, lengths N(140, 30) floored at 30 s, 1.5 cores on average.
func TestThesisExamples(t *testing.T) {
	for name, share := range map[string]float64{"low-demand": 0.10, "high-utilization": 0.20, "exceeding-demand": 0.50} {
		bm, err := Load("../examples/thesis/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		n, prio, cores, length := len(bm.Jobs), 0, 0, 0.0
		for _, j := range bm.Jobs {
			if j.Priority {
				prio++
				if j.IPCETarget != 0.9 {
					t.Fatalf("%s: priority job %s target %v", name, j.Name, j.IPCETarget)
				}
			}
			cores += j.Cores
			length += j.Length.Seconds()
		}
		if n < 650 || n > 790 {
			t.Errorf("%s: %d jobs in an hour", name, n)
		}
		if got := float64(prio) / float64(n); math.Abs(got-share) > 0.05 {
			t.Errorf("%s: priority share %.3f, want %.2f", name, got, share)
		}
		// priority jobs are single-core, so the mean cores fall below 1.5 with more of them
		if c := float64(cores) / float64(n); c < 1.2 || c > 1.6 {
			t.Errorf("%s: %.2f cores per job", name, c)
		}
		if l := length / float64(n); math.Abs(l-140) > 8 {
			t.Errorf("%s: mean length %.1f s", name, l)
		}
		if bm.MaxT.Seconds() != 3600 || bm.Data.Frequency.Milliseconds() != 6000 || bm.Sched.Probe.SegmentTime().Seconds() != 2 {
			t.Errorf("%s: header %v %v %v", name, bm.MaxT, bm.Data.Frequency, bm.Sched.Probe.SegmentTime())
		}
	}
}
