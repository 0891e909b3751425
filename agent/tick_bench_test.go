package agent

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"colo/internal/machinetest"
	"colo/resctrl"
	"colo/resctrl/emu"
	"colo/sched"
)

// BenchmarkTick30 is one agent interval with 30 containers on the in-process emulator
// (no FUSE, no cgroups): the agent's own work per interval.
//
//	go test ./agent -run '^$' -bench Tick30
func BenchmarkTick30(b *testing.B) {
	em, _ := emu.NewNamed("intel", emu.Options{})
	m := machinetest.Get(b, "icx-4314-2s")
	inst := NewInstance()
	jr, err := OpenJournal(b.TempDir(), "emu", inst)
	if err != nil {
		b.Fatal(err)
	}
	defer jr.Close()
	g, _ := NewResctrl(resctrl.New(em.FS(), resctrl.Options{Prefix: GroupPrefix(inst), AllowDefault: true}), "emu", false)
	cfg := sched.DefaultConfig()
	s, _ := sched.New("static-cat", sched.Env{Machine: m, Config: cfg, IPCEUnavailable: "bench"})
	host := &fakeHost{threads: map[string][]int{}}
	a, err := New(Options{Machine: m, Scheduler: s, Groups: g, Journal: jr, Discovery: &fakeRuntime{}, Host: host,
		Interval: 50 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	a.start = time.Now()
	if err := a.saveDefault(); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		id := fmt.Sprintf("eeee%04d", i)
		host.threads[id] = []int{1000 + 10*i, 1001 + 10*i, 1002 + 10*i}
		a.add(Container{ID: id, Name: id, Labels: map[string]string{LabelClass: string(Classes[i%3])}})
	}
	a.tick()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.tick()
	}
}
