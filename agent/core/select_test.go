package core

import "testing"

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
