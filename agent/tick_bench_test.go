package agent

import (
	"testing"
	"time"
)

// BenchmarkTick30 is one agent interval (50ms, monitoring read every second as colo
// agent's default) with 30 containers on the in-process emulator (no FUSE, no cgroups):
// the agent's own work per interval.
//
//	go test ./agent -run '^$' -bench Tick30
func BenchmarkTick30(b *testing.B) {
	a, _, _ := tickAgent(b, "static-cat", 30, time.Second, func(g Groups) Groups { return g })
	a.tick()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.tick()
	}
}
