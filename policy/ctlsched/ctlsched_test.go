package ctlsched

import (
	"reflect"
	"strings"
	"testing"

	"colo/sched"
)

func TestScoped(t *testing.T) {
	o := map[string]any{"baseline": 2, "dcat.baseline": 3, "vp.window": 4, "period_t": 1.0, "lfoc+.x": 1}
	d := Scoped(o, "dcat.", "static-cat.")
	if len(d) != 2 || d["baseline"] != 3 || d["period_t"] != 1.0 {
		t.Fatalf("dcat scope %v", d)
	}
	v := Scoped(o, "vp.")
	if len(v) != 3 || v["window"] != 4 || v["baseline"] != 2 {
		t.Fatalf("vp scope %v", v)
	}
	if k := Keys(v); !reflect.DeepEqual(k, []string{"baseline", "period_t", "window"}) {
		t.Fatalf("keys %v", k)
	}
}

func TestNumbers(t *testing.T) {
	if f, err := Number("x", "k", 3); err != nil || f != 3 {
		t.Fatalf("int: %v %v", f, err)
	}
	if f, err := Number("x", "k", int64(4)); err != nil || f != 4 {
		t.Fatalf("int64: %v %v", f, err)
	}
	if _, err := Number("x", "k", "3"); err == nil || !strings.Contains(err.Error(), "x: scheduler.options.k = 3 is not a number") {
		t.Fatalf("string: %v", err)
	}
	if n, err := Whole("x", "k", 5.0); err != nil || n != 5 {
		t.Fatalf("5.0: %v %v", n, err)
	}
	if _, err := Whole("x", "k", 1.5); err == nil || !strings.Contains(err.Error(), "whole number") {
		t.Fatalf("1.5: %v", err)
	}
}

// Two jobs pinned to the same cores cannot both be placed in one tick; a job of n cores
// takes n cores; sockets come most-free first.
func TestPlacement(t *testing.T) {
	free := CopyFree([][]int{{0, 1, 2, 3}, {4, 5, 6, 7, 8}})
	if s := Sockets(sched.Job{Cores: 2}, free); !reflect.DeepEqual(s, []int{1, 0}) {
		t.Fatalf("order %v, want [1 0]", s)
	}
	pinned := sched.Job{CPUs: []int{2, 3}}
	if s := Sockets(pinned, free); !reflect.DeepEqual(s, []int{0}) {
		t.Fatalf("pinned order %v, want [0]", s)
	}
	Take(pinned, 0, free)
	if !reflect.DeepEqual(free[0], []int{0, 1}) {
		t.Fatalf("after the pinned job socket 0 has %v free, want [0 1]", free[0])
	}
	if s := Sockets(pinned, free); len(s) != 0 {
		t.Fatalf("the same pinned cores fit again on %v", s)
	}
	Take(sched.Job{Cores: 3}, 1, free)
	if !reflect.DeepEqual(free[1], []int{7, 8}) || Cores(pinned) != 2 {
		t.Fatalf("socket 1 free %v", free[1])
	}
}
