package registry

import (
	"slices"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := New[int]("test: thing")
	r.Register("b", 2)
	r.Register("a", 1)
	if got := r.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Names() = %v, want sorted [a b]", got)
	}
	if v, ok := r.Get("b"); !ok || v != 2 {
		t.Errorf("Get(b) = %v, %v", v, ok)
	}
	if _, ok := r.Get("c"); ok {
		t.Error("Get of an unregistered name succeeded")
	}
	defer func() {
		if p := recover(); p != "test: thing a registered twice" {
			t.Errorf("second Register panicked with %v", p)
		}
	}()
	r.Register("a", 3)
}
