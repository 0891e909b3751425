package agent

import (
	"testing"

	"colo/agent/api"
	"colo/agent/core"
	"colo/agent/discovery"
	"colo/resctrl/emu"
)

// An agent with --select manages only the matching containers of a runtime it shares
// (another agent's or a test's containers run beside them).
func TestAgentManagesOnlySelectedContainers(t *testing.T) {
	em, err := emu.NewNamed("intel", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := core.ParseSelector([]string{"owner=me"})
	if err != nil {
		t.Fatal(err)
	}
	h := startAgentWrapped(t, em, "static-cat", t.TempDir(), func(g Groups) Groups { return g },
		func(o *Options) { o.Select = sel })
	mine := newContainer("aaaa1111", core.Priority, []int{101}, h)
	mine.Labels["owner"] = "me"
	other := newContainer("bbbb2222", core.Priority, []int{201}, h)
	other.Labels["owner"] = "someone-else"
	late := newContainer("cccc3333", core.Batch, []int{301}, h)
	h.rt.ch <- discovery.Event{Kind: discovery.Sync, Containers: []core.Container{mine, other}}
	h.rt.ch <- discovery.Event{Kind: discovery.Upsert, Containers: []core.Container{late}}
	lateMine := newContainer("dddd4444", core.Batch, []int{401}, h)
	lateMine.Labels["owner"] = "me"
	h.rt.ch <- discovery.Event{Kind: discovery.Upsert, Containers: []core.Container{lateMine}}
	st := h.until("the selected containers managed", func(st api.Status) bool {
		return find(st, mine.ID) != nil && find(st, lateMine.ID) != nil
	})
	if len(st.Containers) != 2 || find(st, other.ID) != nil || find(st, late.ID) != nil {
		t.Errorf("managed %+v; want only %s and %s", st.Containers, mine.ID, lateMine.ID)
	}
	for _, g := range em.State().Groups {
		if contains(g.Tasks, 201) || contains(g.Tasks, 301) {
			if g.Path != "" {
				t.Errorf("an unselected container's thread is in %s", g.Path)
			}
		}
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}
