package linux

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"colo/bench"
	"colo/internal/bwtwin"
	"colo/internal/testenv"
	"colo/machine"
	"colo/resctrl"
	"colo/resctrl/emu"
	"colo/sched"
	"colo/workload/docker"
)

// twinRDT is the in-process emulator with bwtwin behind its MBM files: every read of a
// group's counters first caps the group's traffic at the ceiling of its control group's MB
// value, min(demand, ceiling(MB)), split over the group's threads, and lets the emulator
// count the traffic since the previous read (wall time), so the platform's MB writes
// change what it reads next.
type twinRDT struct {
	*emuRDT
	tw     *bwtwin.Twin
	rule   bwtwin.Rule
	demand float64
	mu     sync.Mutex
	last   time.Time
}

func (r *twinRDT) MonData(path string) (uint64, uint64, uint64, error) {
	r.mu.Lock()
	ctrl := path
	if i := strings.Index(path, "mon_groups/"); i >= 0 {
		ctrl = strings.TrimSuffix(path[:i], "/")
	}
	_, mba, err := r.ReadSchemata(ctrl, 0)
	tids, err2 := r.Tasks(path)
	if err == nil && err2 == nil && len(tids) > 0 {
		// the MB value caps the group (the twin's rule applies per task): each thread
		// gets its share of min(demand, ceiling(MB))
		g := math.Min(r.demand, r.rule(mba))
		for _, tid := range tids {
			r.tw.SetTask(tid, g/float64(len(tids)), 0)
		}
	}
	now := time.Now()
	if !r.last.IsZero() {
		r.tw.Advance(now.Sub(r.last).Seconds())
		r.em.Tick()
	}
	r.last = now
	r.mu.Unlock()
	return r.emuRDT.MonData(path)
}

// mba_mbps on the linux platform (process runtime, the emulator behind the real resctrl
// client, bwtwin behind its MBM): colo run's MB/s loop writes the group's MB value until
// the job's MBM bandwidth is the 12 000 MB/s it asked for (30 % of a 40 000 MB/s twin).
func TestMBAMBpsOnLinuxPlatform(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Need(t, "the process runtime", errors.New("needs root"))
	}
	bin, cleanup, err := docker.StaticColo(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	bm := parseBench(t, `benchmark:
  name: linux-mbps
  platform: linux
  max_t: 60
  scheduler:
    implementation: least-loaded
  data:
    frequency: 1000
    perf: true
containers:
  hog:
    command: "stress compute --duration 120s"
    num_cores: 1
    length: 14
    mba_mbps: 12000
`)
	bm.MaxT = 0
	e := newEmuRDT(t, "icx-4314-2s")
	mb := machine.MBA{Min: 10, Max: 100, Gran: 10, Unit: machine.MBAPercent}
	rule := bwtwin.RuleFor(mb, 40000, nil)
	rdt := &twinRDT{emuRDT: e, tw: bwtwin.New(func(int) float64 { return math.Inf(1) }), rule: rule, demand: 30000}
	// the same emulator with the twin as its monitoring source
	if e.em, err = emu.New(e.em.Profile(), emu.Options{Source: rdt.tw}); err != nil {
		t.Fatal(err)
	}
	if e.Adapter, err = resctrl.NewAdapter(resctrl.New(e.em.FS(), resctrl.Options{AllowDefault: true}), "emu+bwtwin"); err != nil {
		t.Fatal(err)
	}
	pf := newPlatform(t, bm, Options{Runtime: "process", Self: bin, StateDir: t.TempDir(), RDT: rdt, Machine: e.m, Logf: func(string, ...any) {}})
	defer pf.Close()
	s, err := sched.New("least-loaded", sched.Env{Machine: e.m, Config: bm.Sched})
	if err != nil {
		t.Fatal(err)
	}
	rec := &bench.Memory{}
	if _, err := bench.Run(bm, pf, s, bench.Options{Recorder: rec}); err != nil {
		t.Fatal(err)
	}
	var states []string
	conv := false
	for _, ev := range rec.Events {
		if ev.Kind == "bandwidth" {
			states = append(states, ev.Text)
			conv = conv || strings.HasPrefix(ev.Text, "converged")
		}
	}
	if !conv {
		t.Fatalf("never converged: %q", states)
	}
	var sum, n float64
	for _, smp := range rec.Samples {
		if smp.T > 8*time.Second && smp.Interval > 0 {
			sum += smp.MemBytesTotal / 1e6 / smp.Interval.Seconds()
			n++
		}
	}
	if n == 0 || math.Abs(sum/n-12000) > 0.08*12000 {
		t.Errorf("held at %.0f MB/s over %v samples, want 12000 ± 8 %% (%q)", sum/n, n, states)
	}
}
