package linux

import (
	"fmt"
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

// BenchmarkPlatformRead measures the platform's own collector (Read: thread sync, perf
// sample, CPU time, resctrl when mounted) on 30 real containers: one op reads all 30;
// cpu-µs/sample is colo's CPU time per container per sample and %core@10Hz / %core@50Hz
// what that costs at those sampling rates.
//
//	go test -run '^$' -bench PlatformRead ./platform/linux
func BenchmarkPlatformRead(b *testing.B) {
	e := newEnv(b)
	var sb strings.Builder
	sb.WriteString("benchmark:\n  name: overhead\n  platform: linux\n  max_t: 300\n  data: {frequency: 20, perf: true, docker: false, rdt: false}\ncontainers:\n")
	const n = 30
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "  j%d:\n    command: \"stress compute --duration 300s\"\n    num_cores: 1\n", i)
	}
	bm := parseBench(b, sb.String())
	pf := newPlatform(b, bm, e.options(nil))
	defer pf.Close()
	cpus := bm.Machine.Cores()
	for i, j := range bm.Jobs {
		if err := pf.Start(j, []int{i % cpus}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%s counters", pfMode(pf))
	c0, rounds := cpuSelf(), 0
	for b.Loop() {
		for _, j := range bm.Jobs {
			if _, err := pf.Read(j.ID); err != nil {
				b.Fatal(err)
			}
		}
		rounds++
	}
	us := float64((cpuSelf() - c0).Microseconds()) / float64(rounds*n)
	b.ReportMetric(us, "cpu-µs/sample")
	b.ReportMetric(us*n*10/1e4, "%core@10Hz")
	b.ReportMetric(us*n*50/1e4, "%core@50Hz")
}

func pfMode(p *Platform) string {
	for _, j := range p.jobs {
		if j.counter != nil {
			return string(j.counter.Mode())
		}
	}
	return "no"
}
