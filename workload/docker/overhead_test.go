package docker_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"colo/perf"
	"colo/workload"
	"colo/workload/docker"
	"colo/workload/docker/dockertest"
	"colo/workload/process"
)

// fleet starts n idle containers and opens per-cgroup perf counters on each.
type fleet struct {
	r        *docker.Runtime
	ids      []string
	infos    []workload.Info
	counters []*perf.Counter
	cputime  []*workload.CPUTime
}

func startFleet(t testing.TB, n int) *fleet {
	r := dockertest.Require(t, docker.Options{})
	img := dockertest.BuildProgImage(t, r, "testdata/prog")
	ctx := context.Background()
	f := &fleet{r: r}
	cpus, _ := workload.OnlineCPUs()
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id, err := r.Create(ctx, workload.Spec{Name: dockertest.Name(t, fmt.Sprintf("ovh%d", i)), Image: img, Command: []string{"sleep", "1h"}})
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			f.ids = append(f.ids, id)
			mu.Unlock()
			if err := r.Start(ctx, id); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range f.counters {
			c.Close()
		}
		for _, c := range f.cputime {
			c.Close()
		}
		for _, id := range f.ids {
			r.Remove(context.Background(), id)
		}
	})
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range f.ids {
		info, err := r.Inspect(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		c, err := perf.OpenCgroup(info.Cgroup.PerfEventDir(), cpus, perf.Options{Logf: func(string, ...any) {}})
		if err != nil {
			t.Fatal(err)
		}
		ct, err := workload.OpenCPUTime(info.Cgroup)
		if err != nil {
			t.Fatal(err)
		}
		f.infos = append(f.infos, info)
		f.counters = append(f.counters, c)
		f.cputime = append(f.cputime, ct)
	}
	return f
}

func cpuSelf() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuOfPID is utime+stime of a process (clock ticks of 10 ms on Linux).
func cpuOfPID(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond
}

func pidOf(name string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, _ := os.ReadFile("/proc/" + e.Name() + "/comm"); strings.TrimSpace(string(b)) == name {
			return pid
		}
	}
	return 0
}

// BenchmarkCollectorOverhead measures the collector's CPU cost on 30 real containers
// (thesis: 10 Hz was the limit beyond 30 containers, 50 Hz up to 6; seed000.md §1.4). One
// op is one collection round over the 30 containers; cpu-µs/sample is colo's own CPU time
// per container per sample, %core@10Hz and %core@50Hz what that costs at those rates, and
// dockerd-µs/op the daemon's CPU time per round.
//
//	go test -run '^$' -bench CollectorOverhead ./workload/docker
func BenchmarkCollectorOverhead(b *testing.B) {
	const n = 30
	f := startFleet(b, n)
	ctx := context.Background()
	dockerd := pidOf("dockerd")
	b.Logf("perf mode: %s, events %v", f.counters[0].Mode(), f.counters[0].Events())
	round := func(name string, sample func(b *testing.B, i int)) {
		b.Run(name, func(b *testing.B) {
			c0, d0 := cpuSelf(), cpuOfPID(dockerd)
			rounds := 0
			for b.Loop() {
				for i := 0; i < n; i++ {
					sample(b, i)
				}
				rounds++
			}
			self, dd := cpuSelf()-c0, cpuOfPID(dockerd)-d0
			us := float64(self.Microseconds()) / float64(rounds*n)
			b.ReportMetric(us, "cpu-µs/sample")
			b.ReportMetric(us*n*10/1e4, "%core@10Hz")
			b.ReportMetric(us*n*50/1e4, "%core@50Hz")
			b.ReportMetric(float64(dd.Microseconds())/float64(rounds), "dockerd-µs/op")
		})
	}
	round("perf+cgroup-cputime", func(b *testing.B, i int) {
		if _, err := f.counters[i].Sample(); err != nil {
			b.Fatal(err)
		}
		if _, err := f.cputime[i].Read(); err != nil {
			b.Fatal(err)
		}
	})
	round("perf", func(b *testing.B, i int) {
		if _, err := f.counters[i].Sample(); err != nil {
			b.Fatal(err)
		}
	})
	round("cgroup-stat-files", func(b *testing.B, i int) {
		if _, err := process.CgroupStats(f.infos[i].Cgroup, ""); err != nil {
			b.Fatal(err)
		}
	})
	// dockerd 20.10 answers a one-shot stats call at its collector's next 1 s tick, so
	// the calls of a round are concurrent: one round of 30 takes about a second.
	round("docker-stats-concurrent", func(b *testing.B, i int) {
		if i > 0 {
			return
		}
		var wg sync.WaitGroup
		for k := 0; k < n; k++ {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				if _, err := f.r.Stats(ctx, f.ids[k]); err != nil {
					b.Error(err)
				}
			}(k)
		}
		wg.Wait()
	})
}

// BenchmarkPerfSample is the cost of one perf sample of one container (all events, all CPUs).
func BenchmarkPerfSample(b *testing.B) {
	f := startFleet(b, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.counters[0].Sample(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDockerStats is the latency of one one-shot stats call.
func BenchmarkDockerStats(b *testing.B) {
	f := startFleet(b, 1)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.r.Stats(ctx, f.ids[0]); err != nil {
			b.Fatal(err)
		}
	}
}
