package testenv

import (
	"errors"
	"testing"
)

// recorder is a testing.TB that records whether Fatalf or Skipf was called.
type recorder struct {
	testing.TB
	fatal, skip bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.fatal = true }
func (r *recorder) Skipf(string, ...any)  { r.skip = true }

func TestNeed(t *testing.T) {
	for _, c := range []struct {
		ci          string
		err         error
		fatal, skip bool
	}{
		{"true", errors.New("missing"), true, false},
		{"", errors.New("missing"), false, true},
		{"false", errors.New("missing"), false, true},
		{"true", nil, false, false},
		{"", nil, false, false},
	} {
		t.Setenv("CI", c.ci)
		r := &recorder{TB: t}
		Need(r, "thing", c.err)
		if r.fatal != c.fatal || r.skip != c.skip {
			t.Errorf("CI=%q err=%v: fatal=%v skip=%v, want fatal=%v skip=%v", c.ci, c.err, r.fatal, r.skip, c.fatal, c.skip)
		}
	}
}
