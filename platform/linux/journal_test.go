package linux

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"colo/bench"
	"colo/resctrl"
	"colo/resctrl/journal"
)

// fakeOptions are the options of a linux platform on rdt with a fake runtime.
func fakeOptions(t *testing.T, rdt *emuRDT, state string) Options {
	return Options{RDT: rdt, Runtime0: newFakeRuntime(t, func(pid int) { rdt.em.Forget(pid) }), StateDir: state,
		Machine: rdt.m, StartGrace: time.Nanosecond, Logf: func(string, ...any) {}}
}

func fakeJob(id int) bench.JobSpec {
	return bench.JobSpec{ID: id, Name: fmt.Sprintf("j%d", id), Command: "stress compute", Cores: 1}
}

// A second colo on the same mount and state directory runs beside the first: it never
// removes the first's groups (at its start, during its run, at its end), nor a user's
// own colo.web group, and sees both as another agent's (their ways are not free).
func TestConcurrentInstancesOnOneMount(t *testing.T) {
	rdt := newEmuRDT(t, "icx-4314-2s")
	user := resctrl.New(rdt.em.FS(), resctrl.Options{AllowForeign: true})
	if err := user.Apply(resctrl.Change{Group: "colo.web", Create: true, Schemata: mustSchemata(t, "L3:0=c00;1=c00")}); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	p1, err := New(nil, fakeOptions(t, rdt, state))
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	for i := 0; i < 2; i++ {
		if err := p1.Start(fakeJob(i), []int{i}); err != nil {
			t.Fatal(err)
		}
		if err := p1.SetAllocation(i, 0, 0x3<<(2*i), 10); err != nil {
			t.Fatal(err)
		}
	}
	if err := p1.SetDefaultMask(0, 0x3f0); err != nil {
		t.Fatal(err)
	}
	mine := rdt.groups(p1.prefix)
	before := tree(t, user)
	p2, err := New(nil, fakeOptions(t, rdt, state))
	if err != nil {
		t.Fatal(err)
	}
	if got := tree(t, user); got != before {
		t.Fatalf("the second instance's start changed the mount:\n%s\nwas\n%s", got, before)
	}
	b := p2.CLOSBudget()
	if b[0].Foreign != 0xc0f || b[0].Groups != 8-1-3 {
		t.Fatalf("the second instance's budget %+v: want the first's and colo.web's ways (0xc0f) foreign, 4 groups", b)
	}
	if err := p2.Start(fakeJob(100), []int{4}); err != nil {
		t.Fatal(err)
	}
	if err := p2.SetAllocation(100, 0, 0x3, 10); err == nil || !strings.Contains(err.Error(), "another agent") {
		t.Fatalf("the second instance took the first's ways: %v", err)
	}
	if err := p2.SetAllocation(100, 0, 0x30, 10); err != nil {
		t.Fatal(err)
	}
	if err := p2.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rdt.groups(p1.prefix); strings.Join(got, " ") != strings.Join(mine, " ") || len(rdt.groups(p2.prefix)) != 0 {
		t.Fatalf("after the second instance: first's groups %v (were %v), second's %v", got, mine, rdt.groups(p2.prefix))
	}
	if got := tree(t, user); got != before {
		t.Fatalf("the second instance left the mount changed:\n%s\nwas\n%s", got, before)
	}
	if err := p1.Close(); err != nil {
		t.Fatal(err)
	}
	if g := rdt.groups("colo."); len(g) != 1 || g[0] != "colo.web" {
		t.Fatalf("after both: %v (the user's colo.web must stay)", g)
	}
	if rs, _ := journal.List(state, rdt.Root()); len(rs) != 0 {
		t.Fatalf("journal records left after clean ends: %+v", rs)
	}
}

// kill -9 of a run on mount A, a complete run on mount B (same state directory), then
// reconcile on A (what colo resctrl reconcile does): A's system/default comes back
// exactly, A's dead groups go, B's run touched nothing of A.
func TestKilledRunOnOneMountReconciledAfterARunOnAnother(t *testing.T) {
	a, b := newEmuRDT(t, "icx-4314-2s"), newEmuRDT(t, "icx-4314-2s")
	a.Adapter, _ = resctrl.NewAdapter(a.Adapter.Client(), "/emu/A") // two mounts, two journal keys
	b.Adapter, _ = resctrl.NewAdapter(b.Adapter.Client(), "/emu/B")
	ac := resctrl.New(a.em.FS(), resctrl.Options{AllowForeign: true})
	if err := ac.Apply(resctrl.Change{Group: "", Schemata: mustSchemata(t, "MB:0=90")}); err != nil {
		t.Fatal(err)
	}
	found := tree(t, ac)
	state := t.TempDir()
	pa, err := New(nil, fakeOptions(t, a, state))
	if err != nil {
		t.Fatal(err)
	}
	startAllocated(t, pa, fakeJob(0), 0, 0x7, 20, 0xff8)
	// kill -9: nothing undone; the PID now names another process (start time differs)
	kill9(t, pa)
	killed := tree(t, ac)
	if killed == found {
		t.Fatal("the killed run changed nothing")
	}
	pb, err := New(nil, fakeOptions(t, b, state))
	if err != nil {
		t.Fatal(err)
	}
	startAllocated(t, pb, fakeJob(1), 1, 0x3, 10, 0xffc)
	if err := pb.Close(); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, ac); got != killed {
		t.Fatalf("a run on mount B changed mount A:\n%s\nwas\n%s", got, killed)
	}
	a.em.Forget(10000) // the killed run's container is gone too (colo cleanup stops it)
	done, err := journal.Reconcile(a.em.FS(), state, a.Root(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || len(done[0].Removed) != 2 || done[0].Default == "" {
		t.Fatalf("reconcile did %v", done)
	}
	// system/default exactly as found (schemata, MB 90 included), no groups of the run
	if got := tree(t, ac); got != found {
		t.Fatalf("mount A after reconcile:\n%s\nwant as found:\n%s", got, found)
	}
}

func mustSchemata(t *testing.T, s string) resctrl.Schemata {
	t.Helper()
	sc, err := resctrl.ParseSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// colo cleanup after a crash: the dead run's containers and network (by its run label,
// from its journal), its groups and system/default as found; nothing of a live run.
func TestCleanupAfterCrash(t *testing.T) {
	e := newEnv(t)
	rdt, o := emuOptions(t, e)
	bm := parseBench(t, smokeYAML)
	live, err := New(nil, o) // a live run beside it keeps everything
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := live.Start(bm.Jobs[1], []int{1}); err != nil {
		t.Fatal(err)
	}
	def0, _ := rdt.DefaultSchemata()
	pf, err := New(bm, o)
	if err != nil {
		t.Fatal(err)
	}
	startAllocated(t, pf, bm.Jobs[0], 0, 0x3, 0, 0xffc)
	kill9(t, pf) // "kill -9"
	did, err := Cleanup(context.Background(), e.state, func(string) resctrl.FS { return rdt.em.FS() })
	t.Logf("cleanup: %q", did)
	if err != nil {
		t.Fatal(err)
	}
	joined := fmt.Sprint(did)
	if !strings.Contains(joined, "removed docker") || !strings.Contains(joined, "removed network "+pf.network) || !strings.Contains(joined, "restored system/default") {
		t.Fatalf("cleanup did %q", did)
	}
	if g := rdt.groups(pf.prefix); len(g) != 0 {
		t.Fatalf("the dead run's groups left: %v", g)
	}
	// the live run's container still runs and its groups are there
	if _, err := live.Read(bm.Jobs[1].ID); err != nil {
		t.Fatalf("the live run's job: %v", err)
	}
	if g := rdt.groups(live.prefix); len(g) != 1 {
		t.Fatalf("the live run's groups: %v", g)
	}
	if d, _ := rdt.DefaultSchemata(); d != def0 {
		t.Fatalf("system/default %q, want as found %q", d, def0)
	}
}
