package sim

import (
	"sync"
	"sync/atomic"
	"time"
)

// StepAll advances every machine of ms by dt on up to workers goroutines (workers ≤ 1:
// in the caller's goroutine) and returns out with out[i] = ms[i].Step(dt): the machines
// share nothing, so the counters are exactly those of stepping them one by one, in any
// order and with any number of workers (TestStepAllIsStepByStep). out is reused when it
// is long enough; each out[i] is the slice ms[i].Step returned (reused by its next Step).
// The machines must be distinct.
func StepAll(ms []*Machine, dt time.Duration, workers int, out [][]Counters) [][]Counters {
	if cap(out) < len(ms) {
		out = make([][]Counters, len(ms))
	}
	out = out[:len(ms)]
	workers = min(workers, len(ms))
	if workers <= 1 {
		for i, m := range ms {
			out[i] = m.Step(dt)
		}
		return out
	}
	// machines are handed out in small chunks from a shared counter: a goroutine that
	// drew cheap machines takes more, so every core stays busy to the end
	const chunk = 4
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= len(ms) {
					return
				}
				for i := lo; i < min(lo+chunk, len(ms)); i++ {
					out[i] = ms[i].Step(dt)
				}
			}
		}()
	}
	wg.Wait()
	return out
}
