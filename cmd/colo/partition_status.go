package main

import (
	"fmt"
	"time"

	"colo/internal/progress"
)

// searchStatus is policy.Options.Status for an exact search drawn on bar: the label gets
// the search's rate (nodes/s since the branch and bound started) and its current proven gap.
func searchStatus(bar *progress.Bar, label string) func(nodes int64, gap float64) {
	if bar == nil {
		return nil
	}
	var t0 time.Time
	var n0 int64
	return func(nodes int64, gap float64) {
		now := time.Now()
		if t0.IsZero() {
			t0, n0 = now, nodes
			return
		}
		rate := float64(nodes-n0) / now.Sub(t0).Seconds()
		bar.Describe(fmt.Sprintf("%s %s nodes/s, gap %.3g %%", label, siCount(rate), 100*gap))
	}
}

// siCount writes x with a k/M/G suffix (3 significant digits).
func siCount(x float64) string {
	for _, u := range []string{"", "k", "M"} {
		if x < 999.5 {
			return fmt.Sprintf("%.3g%s", x, u)
		}
		x /= 1000
	}
	return fmt.Sprintf("%.3gG", x)
}
