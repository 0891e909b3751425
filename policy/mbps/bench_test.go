package mbps

import (
	"math"
	"testing"
)

// BenchmarkDecision is one period of 30 groups' loops (Observe only, not the plant), on
// Intel's percentage grid and AMD's 1/8 GB/s one.
func BenchmarkDecision(b *testing.B) {
	for _, tc := range []struct {
		name string
		c    func(v int) float64
	}{{"intel", concave}, {"amd", func(v int) float64 { return 500 * float64(v) }}} {
		b.Run(tc.name+"/groups=30", func(b *testing.B) {
			mba := intel
			if tc.name == "amd" {
				mba = amd
			}
			ctl := make([]*Controller, 30)
			for i := range ctl {
				ctl[i], _ = New(mba, DefaultOptions())
				ctl[i].Request(2000 + 700*float64(i))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				for i, c := range ctl {
					v, q := c.Setting()
					// a plant whose demand changes phase every 64 periods
					d := 30000.0
					if (n/64)%2 == 1 {
						d = 9000 + 100*float64(i)
					}
					c.Observe(q * math.Min(d, tc.c(v)))
				}
			}
		})
	}
}
