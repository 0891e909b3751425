package probe

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

func TestSensitivityProbeStateMachine(t *testing.T) {
	p, err := NewSensitivityProbe(SensitivityConfig{DefaultT: 600 * time.Millisecond, Frequency: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Result(); err == nil {
		t.Fatal("result before the end")
	}
	// Baseline IPC 2 with 20 % stalls; each stressor halves IPC and raises stalls to 60 %.
	var kinds []string
	for {
		i, kind, done := p.Segment()
		if done {
			break
		}
		kinds = append(kinds, kind)
		inst, stall := 2000.0, 200.0
		if i > 0 {
			inst, stall = 1000, 600
		}
		for k := 0; k < 2; k++ {
			p.Add(CounterSample{Instructions: inst, Cycles: 1000, StallCycles: stall})
		}
		p.Next()
	}
	if len(kinds) != 6 || kinds[0] != "" || kinds[1] != "llc" || kinds[5] != "prefetch" {
		t.Fatalf("segments %q", kinds)
	}
	r, err := p.Result()
	if err != nil {
		t.Fatal(err)
	}
	// IPC ς = (2−1)/2; IPCE 0.8 → 0.4: ς = 0.5; stalls (60−20)/(100−20) = 0.5.
	if r.IPC.LLC != 0.5 || math.Abs(r.IPCE.MemRead-0.5) > 1e-12 || math.Abs(r.Stalled.Prefetch-0.5) > 1e-12 {
		t.Fatalf("%+v", r)
	}
	if StalledSensitivity(20, 10) != 0 || StalledSensitivity(100, 100) != 0 {
		t.Fatal("stalled sensitivity not clamped")
	}
	if sensitivityDrop(30) != 0 || sensitivityDrop(31) != 3 {
		t.Fatal("repo trimming: 3 each side above 30 samples")
	}
}

func TestSensitivityBadInput(t *testing.T) {
	for _, c := range []SensitivityConfig{
		{DefaultT: 0, Frequency: 50 * time.Millisecond},
		{DefaultT: 200 * time.Millisecond, Frequency: 50 * time.Millisecond},
		{DefaultT: 12 * time.Second, Frequency: 50 * time.Millisecond, Isolated: true, Ways: 0, MBA: 50},
	} {
		if _, err := NewSensitivityProbe(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestCooldown(t *testing.T) {
	c := Cooldown{T: 10 * time.Second}
	if !c.Allowed("a", 0) {
		t.Fatal("first probe refused")
	}
	c.Done("a", 5*time.Second)
	if c.Allowed("a", 14*time.Second) || !c.Allowed("a", 15*time.Second) || !c.Allowed("b", 6*time.Second) {
		t.Fatal("cooldown_t not enforced per target")
	}
}

type fakeNeighbour struct {
	running string
	started []string
}

func (f *fakeNeighbour) Start(_ context.Context, kind string) (func() error, error) {
	f.running = kind
	f.started = append(f.started, kind)
	return func() error { f.running = ""; return nil }, nil
}

// fakeTarget: IPC 2 alone; the LLC stressor halves it, the others cost 10 %.
type fakeTarget struct{ nb *fakeNeighbour }

func (f fakeTarget) Sample() (CounterSample, error) {
	inst := 2000.0
	switch f.nb.running {
	case "":
	case "llc":
		inst = 1000
	default:
		inst = 1800
	}
	return CounterSample{Instructions: inst, Cycles: 1000, StallCycles: 1000 - inst/2.5}, nil
}

func TestDriveSensitivity(t *testing.T) {
	nb := &fakeNeighbour{}
	var waited time.Duration
	wait := func(_ context.Context, d time.Duration) error { waited += d; return nil }
	cfg := SensitivityConfig{DefaultT: 12 * time.Second, Frequency: 50 * time.Millisecond}
	r, err := DriveSensitivity(context.Background(), cfg, nb, fakeTarget{nb}, wait)
	if err != nil {
		t.Fatal(err)
	}
	if waited != 12*time.Second || strings.Join(nb.started, ",") != "llc,mem-read,mem-write,syscall,prefetch" || nb.running != "" {
		t.Fatalf("waited %v, started %v, left %q", waited, nb.started, nb.running)
	}
	if r.IPC.LLC != 0.5 || math.Abs(r.IPC.MemRead-0.1) > 1e-12 || r.Base.Samples != 40 {
		t.Fatalf("%+v", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := DriveSensitivity(ctx, cfg, nb, fakeTarget{nb}, func(ctx context.Context, _ time.Duration) error { return ctx.Err() }); err == nil {
		t.Fatal("cancelled probe returned a result")
	}
}
