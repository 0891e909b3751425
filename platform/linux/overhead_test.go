package linux

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func cpuSelf() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestPlatformCollectorOverhead measures the platform's own collector (Read: thread sync,
// perf sample, CPU time, resctrl when mounted) on 30 real containers at 10 Hz and 50 Hz.
// It measures, it does not assert: COLO_OVERHEAD=1 go test -run PlatformCollectorOverhead -v.
func TestPlatformCollectorOverhead(t *testing.T) {
	if os.Getenv("COLO_OVERHEAD") != "1" {
		t.Skip("measurement: set COLO_OVERHEAD=1 (starts 30 containers)")
	}
	e := newEnv(t)
	var b strings.Builder
	b.WriteString("benchmark:\n  name: overhead\n  platform: linux\n  max_t: 300\n  data: {frequency: 20, perf: true, docker: false, rdt: false}\ncontainers:\n")
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&b, "  j%d:\n    command: \"stress compute --duration 300s\"\n    num_cores: 1\n", i)
	}
	bm := parseBench(t, b.String())
	pf, err := New(bm, e.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	cpus := bm.Machine.Cores()
	for i, j := range bm.Jobs {
		if err := pf.Start(j, []int{i % cpus}); err != nil {
			t.Fatal(err)
		}
	}
	idle := func(hz int, dur time.Duration, read bool) (float64, float64) {
		tick := time.NewTicker(time.Second / time.Duration(hz))
		defer tick.Stop()
		c0, w0, rounds := cpuSelf(), time.Now(), 0
		for time.Since(w0) < dur {
			<-tick.C
			if read {
				for _, j := range bm.Jobs {
					if _, err := pf.Read(j.ID); err != nil {
						t.Error(err)
					}
				}
			}
			rounds++
		}
		cpu := cpuSelf() - c0
		return 100 * cpu.Seconds() / time.Since(w0).Seconds(), float64(cpu.Microseconds()) / float64(rounds*len(bm.Jobs))
	}
	base, _ := idle(50, 5*time.Second, false)
	t.Logf("baseline (50 Hz ticker, no reads): %.2f %% of one core", base)
	for _, hz := range []int{10, 50} {
		pct, us := idle(hz, 5*time.Second, true)
		t.Logf("platform Read, %d Hz × 30 containers (%s counters): %.2f %% of one core, %.1f µs CPU per container per sample",
			hz, pfMode(pf), pct, us)
	}
}

func pfMode(p *Platform) string {
	for _, j := range p.jobs {
		if j.counter != nil {
			return string(j.counter.Mode())
		}
	}
	return "no"
}
