package main

import (
	"fmt"
	"sync"

	"colo/internal/progress"
	"colo/platform/linux"
)

// The linux platform's notes (resctrl not mounted, counters unavailable) and perf's
// fallback warnings come once per process: `colo run --compare a,b,c` opens one platform
// per scheduler, and each used to repeat them. They go to the command's stderr, above a
// progress bar when one is drawn.
func init() {
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	linux.Defaults.Logf = func(format string, a ...any) {
		msg := fmt.Sprintf(format, a...)
		mu.Lock()
		defer mu.Unlock()
		if seen[msg] {
			return
		}
		seen[msg] = true
		progress.Println("colo: note:", msg)
	}
}
