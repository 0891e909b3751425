package bench

import (
	"strings"
	"testing"

	"colo/machine"
	"colo/sched"
)

// A partitioning scheduler on a real host without resctrl (the detected profile has one
// class of service) says resctrl is not mounted and what to do, not the policy's
// "max_clos = 1"; on sim, or with CAT, the scheduler's own error stands.
func TestRunWithoutResctrlSaysSo(t *testing.T) {
	m, err := machine.Get("icx-4314-2s")
	if err != nil {
		t.Fatal(err)
	}
	host := *m
	host.CAT.NumCLOSIDs = 1 // what machine.Detect reports without a resctrl mount
	_, serr := sched.New("static-cat", sched.Env{Machine: &host, Config: sched.Config{Implementation: "static-cat"}})
	if serr == nil {
		t.Fatal("static-cat accepted a machine with one class of service")
	}
	e := withoutResctrl("static-cat", "linux", &host, "/nonexistent/resctrl", serr)
	if e == nil {
		t.Fatal("no explanation")
	}
	for _, want := range []string{"resctrl is not mounted at /nonexistent/resctrl", "mount -t resctrl", "colo resctrl emulate", "--resctrl-root", "--platform sim"} {
		if !strings.Contains(e.Error(), want) {
			t.Errorf("%q lacks %q", e, want)
		}
	}
	if withoutResctrl("static-cat", "sim", &host, "", serr) != nil || withoutResctrl("static-cat", "linux", m, "", serr) != nil {
		t.Error("explained a refusal that is not about resctrl")
	}
}
