package agent

import (
	"fmt"
	"strings"
	"testing"

	"colo/agent/api"
	"colo/agent/core"
	"colo/agent/discovery"
	"colo/resctrl/emu"
)

// Issue #26 item 6: a container refused for lack of CLOSIDs waits with a reason, and is
// allocated within an interval of another tool's groups going (before: never, reason
// empty; the refused target was not asked for again until the policy changed it).
func TestAgentAllocatesWhenCLOSIDsFree(t *testing.T) {
	p, err := emu.NamedProfile("intel")
	if err != nil {
		t.Fatal(err)
	}
	p.L3.NumCLOSIDs, p.MB.NumCLOSIDs = 4, 4
	em, err := emu.New(p, emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var fills []string
	for i := 0; ; i++ { // another tool takes every CLOSID but system/default's
		g := fmt.Sprintf("fill-%d", i)
		if err := em.FS().Mkdir(g); err != nil {
			break
		}
		fills = append(fills, g)
	}
	if len(fills) == 0 {
		t.Fatal("no group could be made")
	}
	h := startAgent(t, em, "static-cat", t.TempDir())
	h.rt.ch <- discovery.Event{Kind: discovery.Sync, Containers: []core.Container{newContainer("ffff0001", core.Priority, []int{500}, h)}}
	st := h.until("the priority container refused with a reason", func(st api.Status) bool {
		return len(st.Containers) == 1 && st.Containers[0].CtrlGroup == "" && st.Counts["closid_exhausted"] > 0
	})
	if c := st.Containers[0]; !strings.Contains(c.Reason, "waiting") {
		t.Errorf("refused container without a waiting reason: %+v", c)
	}
	for _, g := range fills {
		if err := em.FS().Rmdir(g); err != nil {
			t.Fatal(err)
		}
	}
	// within an interval after the groups went: the next ticks (each is one interval)
	n := 0
	h.until("allocated after the CLOSIDs were freed", func(st api.Status) bool {
		n++
		if n > 3 {
			t.Fatalf("still not allocated %d intervals after the CLOSIDs were freed: %+v", n-1, st.Containers)
		}
		return len(st.Containers) == 1 && st.Containers[0].CtrlGroup != "" && st.Containers[0].Reason == ""
	})
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}
