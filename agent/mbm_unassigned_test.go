package agent

import (
	"colo/agent/api"
	"colo/agent/core"
	"colo/agent/discovery"
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"strings"
	"testing"

	"colo/resctrl"
	"colo/resctrl/emu"
)

// TestMonDataUnassignedIsNotZero: the agent's counter reader on an ABMC mount says a
// group whose MBM counter is unassigned is not measured (ErrNotCounted), so its tick
// keeps the last reading instead of recording 0 B.
func TestMonDataUnassignedIsNotZero(t *testing.T) {
	e, err := emu.NewNamed("amd-abmc", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewResctrl(resctrl.New(e.FS(), resctrl.Options{Prefix: GroupPrefix("t"), AllowDefault: true}), "emu", false)
	if err != nil {
		t.Fatal(err)
	}
	g := GroupPrefix("t") + "a"
	if err := r.CreateGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := r.MonData(g); err != nil {
		t.Fatalf("assigned on mkdir: %v", err)
	}
	if err := e.WriteFile(g+"/mbm_L3_assignments", []byte("mbm_local_bytes:*=_\n")); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := r.MonData(g); !errors.Is(err, resctrl.ErrNotCounted) {
		t.Fatalf("unassigned local counter read as %v, want ErrNotCounted", err)
	}
}

// TestAgentRotatesAssignableCounters: on an ABMC mount with counters for 4 containers
// (10 counters per domain, 2 kept by the default group) and 10 containers (2 priority),
// the agent reports 4 counter slots; the priority containers hold counters in every
// interval observed, every other container holds one at some point (the rotation), and
// the emulator never has more counters in use than it has.
func TestAgentRotatesAssignableCounters(t *testing.T) {
	p, err := emu.NamedProfile("amd-abmc")
	if err != nil {
		t.Fatal(err)
	}
	p.Mon.Counters = 10
	em, err := emu.New(p, emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	em.SetSource(emu.SourceFunc(func(pid, dom int) emu.Sample {
		return emu.Sample{Footprint: 1 << 20, TotalBytes: uint64(pid) * 1000, LocalBytes: uint64(pid) * 500, CPU: -1}
	}))
	h := startAgentWrapped(t, em, "static-cat", t.TempDir(), func(g Groups) Groups { return g },
		func(o *Options) { o.MBMPeriod = o.Interval })
	var cs []core.Container
	for i := 0; i < 10; i++ {
		class := core.Batch
		if i < 2 {
			class = core.Priority
		}
		cs = append(cs, newContainer(fmt.Sprintf("eeee%04d", i), class, []int{500 + i}, h))
	}
	h.rt.ch <- discovery.Event{Kind: discovery.Sync, Containers: cs}
	// placement settles first (groups made on mkdir take counters until the next rotation)
	groups := map[string]string{}
	h.until("all placed and rotating", func(st api.Status) bool {
		em.Tick()
		n := 0
		for _, c := range st.Containers {
			if c.MonGroup != "" && c.MBMCounter != "" && groups[c.ID] == c.MonGroup {
				n++
			}
			groups[c.ID] = c.MonGroup
		}
		return n == 10 && st.MBMRotationPeriods > 0
	})
	seen := map[string]bool{}
	ticks := 0
	h.until("every container measured once", func(st api.Status) bool {
		em.Tick()
		ticks++
		if st.MBMCounters != 4 {
			t.Fatalf("%d counter slots, want 4", st.MBMCounters)
		}
		for _, c := range st.Containers {
			if c.MonGroup != groups[c.ID] {
				t.Fatalf("%s moved from %s to %s", c.Name, groups[c.ID], c.MonGroup)
			}
			if c.Request.Class == core.Priority && c.MBMCounter != "assigned" {
				b, _ := em.ReadFile(c.MonGroup + "/mbm_L3_assignments")
				t.Fatalf("priority container %s is %s (%q)", c.Name, c.MBMCounter, b)
			}
			if c.MBMCounter == "assigned" {
				seen[c.ID] = true
			}
		}
		return len(seen) == 10
	})
	t.Logf("all 10 measured within %d intervals (rotation %d periods)", ticks, 7)
	if b, _ := em.ReadFile("info/L3_MON/available_mbm_cntrs"); strings.Contains(string(b), "-") {
		t.Fatalf("counters overcommitted: %q", b)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(api.NewCollector(h.a.Status))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, mf := range mfs {
		got[mf.GetName()] = len(mf.GetMetric())
		if mf.GetName() == "colo_agent_mbm_counter_slots" && mf.GetMetric()[0].GetGauge().GetValue() != 4 {
			t.Fatalf("slots metric %v", mf.GetMetric()[0])
		}
	}
	if got["colo_agent_mbm_counter_slots"] != 1 || got["colo_container_mbm_unassigned"] != 10 {
		t.Fatalf("metrics %v", got)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}
