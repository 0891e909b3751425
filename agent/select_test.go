package agent

import (
	"testing"

	"colo/resctrl/emu"
)

func TestSelectorTerms(t *testing.T) {
	s, err := ParseSelector([]string{"team=web", "colo.io/class"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"team": "web", "colo.io/class": "batch"}, true},
		{map[string]string{"team": "web", "colo.io/class": ""}, true}, // KEY: present, any value
		{map[string]string{"team": "web"}, false},
		{map[string]string{"team": "db", "colo.io/class": "batch"}, false},
		{map[string]string{"team": "web=x", "colo.io/class": "batch"}, false},
		{nil, false},
	} {
		if got := s.Match(c.labels); got != c.want {
			t.Errorf("%s on %v: %v, want %v", s, c.labels, got, c.want)
		}
	}
	if s.String() != "team=web,colo.io/class" {
		t.Errorf("String %q", s)
	}
	var none Selector
	if !none.Match(nil) {
		t.Error("the empty selector must match every container")
	}
	for _, bad := range []string{"", "=x", " =x"} {
		if _, err := ParseSelector([]string{bad}); err == nil {
			t.Errorf("--select %q accepted", bad)
		}
	}
}

// An agent with --select manages only the matching containers of a runtime it shares
// (another agent's or a test's containers run beside them).
func TestAgentManagesOnlySelectedContainers(t *testing.T) {
	em, err := emu.NewNamed("intel", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := ParseSelector([]string{"owner=me"})
	if err != nil {
		t.Fatal(err)
	}
	h := startAgentWrapped(t, em, "static-cat", t.TempDir(), func(g Groups) Groups { return g },
		func(o *Options) { o.Select = sel })
	mine := newContainer("aaaa1111", Priority, []int{101}, h)
	mine.Labels["owner"] = "me"
	other := newContainer("bbbb2222", Priority, []int{201}, h)
	other.Labels["owner"] = "someone-else"
	late := newContainer("cccc3333", Batch, []int{301}, h)
	h.rt.ch <- Event{Kind: Sync, Containers: []Container{mine, other}}
	h.rt.ch <- Event{Kind: Upsert, Containers: []Container{late}}
	lateMine := newContainer("dddd4444", Batch, []int{401}, h)
	lateMine.Labels["owner"] = "me"
	h.rt.ch <- Event{Kind: Upsert, Containers: []Container{lateMine}}
	st := h.until("the selected containers managed", func(st Status) bool {
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
