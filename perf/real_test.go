package perf_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"colo/perf"
	"colo/workload"
)

func TestMain(m *testing.M) {
	if os.Getenv("COLO_PERF_SPIN") == "1" {
		x := 0
		for i := 0; ; i++ {
			x += i
			if x == -7 {
				fmt.Println(x)
			}
		}
	}
	os.Exit(m.Run())
}

// perfCgroupRoot is the hierarchy holding the perf_event controller: v1 perf_event or v2.
func perfCgroupRoot(t *testing.T) string {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Skip(err)
	}
	var v2 string
	for _, m := range workload.Mounts(mi) {
		if m.Version == 1 {
			for _, c := range m.Controllers {
				if c == "perf_event" {
					return m.Dir
				}
			}
		} else if m.Root == "/" {
			v2 = m.Dir
		}
	}
	if v2 == "" {
		t.Skip("no cgroup hierarchy with perf_event is mounted")
	}
	return v2
}

// TestSoftwareEventsReal counts software events for a real cgroup with a spinning task:
// this host has no PMU, so the counter must fall back to software events and task-clock
// must see the spinner's CPU time.
func TestSoftwareEventsReal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a cgroup")
	}
	dir := filepath.Join(perfCgroupRoot(t), fmt.Sprintf("colo-perftest-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("create cgroup: %v", err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	cpus, err := workload.OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	c, err := perf.OpenCgroup(dir, cpus, perf.Options{Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Logf("%s (%s)", c, c.Reason())
	if c.Mode() == perf.ModeNone {
		t.Fatalf("perf unusable as root: %s", c.Reason())
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "COLO_PERF_SPIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Sample until an interval saw the spinner run (an event: a loaded host only delays
	// it; a spinner starved for a whole interval is no failure of perf).
	counter := perf.Instructions
	if c.Mode() == perf.ModeSoftware {
		counter = perf.TaskClock
	}
	c.Sample() // discard what ran before
	var s perf.Sample
	var elapsed time.Duration
	for deadline := time.Now().Add(60 * time.Second); ; {
		start := time.Now()
		time.Sleep(300 * time.Millisecond)
		s, err = c.Sample()
		elapsed = time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := s.Get(counter); v > 0 || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("sample after %v: %v = %v", elapsed, s.Names, s.Values)
	if c.Mode() == perf.ModeSoftware {
		tc, ok := s.Get(perf.TaskClock)
		// The spinner ran, and never for more than the interval (it has one thread).
		if !ok || tc <= 0 || tc > 1.05*float64(elapsed) {
			t.Errorf("task-clock %v ns over %v", tc, elapsed)
		}
		if _, ok := s.Get(perf.Instructions); ok {
			t.Error("instructions present in software mode")
		}
		if len(logs) > 1 {
			t.Errorf("fallback warned %d times", len(logs))
		}
	} else {
		if v, ok := s.Get(perf.Instructions); !ok || v <= 0 {
			t.Errorf("instructions %v", v)
		}
	}
}
