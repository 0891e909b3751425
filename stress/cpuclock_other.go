//go:build !linux

package stress

import "time"

// ThreadCPUClock falls back to the wall clock outside Linux.
func ThreadCPUClock() func() time.Time { return time.Now }

// ProcessCPUSeconds is not available outside Linux (0).
func ProcessCPUSeconds() float64 { return 0 }
