package lfocplus

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkDecision measures one fairness-mode partitioning period (classification already
// done, policy.LFOCPlus over every application, layout) for 16 and 64 applications of the
// data set on the 11-way Skylake-SP LLC: the Step at a 500 ms boundary.
func BenchmarkDecision(b *testing.B) {
	set, opt := skx(&testing.T{})
	names := set.Names()
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("apps=%d", n), func(b *testing.B) {
			r := newLRig(&testing.T{}, opt)
			for i := 0; i < n; i++ {
				tb, _ := set.Get(names[(i*7)%len(names)])
				r.add(fmt.Sprintf("a%02d", i), tableApp{t: tb})
			}
			for i := 0; i < 20000 && !(r.c.Mode() == Fairness && r.c.SamplingActivations == n); i++ {
				r.step(10 * time.Millisecond)
			}
			if r.c.SamplingActivations != n {
				b.Fatalf("only %d of %d sampled", r.c.SamplingActivations, n)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.now += opt.Period
				if _, ok, err := r.c.Step(r.now, nil); err != nil || !ok {
					b.Fatalf("no partitioning: %v", err)
				}
			}
		})
	}
}
