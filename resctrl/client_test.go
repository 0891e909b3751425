package resctrl_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"colo/cbm"
	"colo/resctrl"
	"colo/resctrl/emu"
)

// world is a client on a fresh emulator; the FUSE test builds the same over a mount.
type world struct {
	c  *resctrl.Client
	e  *emu.Emulator
	fs resctrl.FS
}

type mkWorld func(t *testing.T, profile string) world

func inProcess(t *testing.T, profile string) world {
	e, err := emu.NewNamed(profile, emu.Options{PIDExists: func(p int) bool { return p > 0 && p < 100000 }})
	if err != nil {
		t.Fatal(err)
	}
	fs := e.FS()
	return world{c: resctrl.New(fs, resctrl.Options{}), e: e, fs: fs}
}

// clientTests run against every FS implementation.
var clientTests = []struct {
	name string
	run  func(t *testing.T, mk mkWorld)
}{
	{"info", testInfo},
	{"groups-and-ownership", testOwnership},
	{"schemata-roundtrip", testSchemataRoundTrip},
	{"rejected-write-carries-status", testRejected},
	{"tasks-and-mon", testTasksMon},
	{"apply-rolls-back", testApplyRollback},
	{"apply-commits", testApplyCommit},
	{"reconcile", testReconcile},
	{"place-masks", testPlace},
	{"move-mon-group", testMoveMon},
	{"apply-mbps-partial-write", testApplyMBps},
}

// testApplyMBps: under mba_MBps the kernel keeps MB values of a write that fails on a
// later line; Apply still restores the state before it.
func testApplyMBps(t *testing.T, mk mkWorld) {
	w := mk(t, "intel-mbps")
	c := w.c
	if err := c.CreateGroup("colo.a"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetSchemata("colo.a", resctrl.Schemata{}.Set("MB", 0, 3000)); err != nil {
		t.Fatal(err)
	}
	bad := resctrl.Schemata{{Resource: "MB", Values: []resctrl.DomainValue{{0, 500}}}, {Resource: "L4", Values: []resctrl.DomainValue{{0, 1}}}}
	err := c.Apply(resctrl.Change{Group: "colo.a", Schemata: bad})
	var ae *resctrl.ApplyError
	if !errors.As(err, &ae) || ae.RollbackErr != nil {
		t.Fatalf("Apply: %v", err)
	}
	wantMB0(t, c, "colo.a", 3000)
}

func testMoveMon(t *testing.T, mk mkWorld) {
	w := mk(t, "intel")
	c := w.c
	for _, g := range []string{"colo.a", "colo.b", "colo.a/mon_groups/colo.m"} {
		if err := c.CreateGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.AddTasks("colo.a", 5); err != nil {
		t.Fatal(err)
	}
	if err := c.AddTasks("colo.a/mon_groups/colo.m", 5); err != nil {
		t.Fatal(err)
	}
	if err := c.MoveMonGroup("colo.a/mon_groups/colo.m", "colo.b/mon_groups/colo.m"); err != nil {
		t.Fatal(err)
	}
	if g, _ := c.TaskGroup(5); g != "colo.b/mon_groups/colo.m" {
		t.Fatalf("task 5 in %q after the move", g)
	}
	err := c.MoveMonGroup("colo.b/mon_groups/colo.m", "colo.a")
	if err == nil {
		t.Fatal("moving a MON group onto a CTRL_MON path accepted")
	}
}

func TestClientInProcess(t *testing.T) {
	for _, ct := range clientTests {
		t.Run(ct.name, func(t *testing.T) { ct.run(t, inProcess) })
	}
}

func testInfo(t *testing.T, mk mkWorld) {
	cases := []struct {
		profile              string
		res                  string
		cbmLen, minBits      int
		sparse               bool
		closids              int
		mbMin, mbGran        int
		cdp, mbps, hasMon    bool
		throttle, mbResource string
		rmids                int
	}{
		{profile: "intel", res: "L3", cbmLen: 12, minBits: 1, closids: 8, mbMin: 10, mbGran: 10, hasMon: true, throttle: "per-thread", mbResource: "MB", rmids: 144},
		{profile: "intel-cdp", res: "L3CODE", cbmLen: 12, minBits: 1, closids: 8, mbMin: 10, mbGran: 10, cdp: true, hasMon: true, throttle: "per-thread", mbResource: "MB", rmids: 144},
		{profile: "intel-mbps", res: "L3", cbmLen: 12, minBits: 1, closids: 8, mbMin: 10, mbGran: 10, mbps: true, hasMon: true, throttle: "per-thread", mbResource: "MB", rmids: 144},
		{profile: "intel-nomba", res: "L3", cbmLen: 16, minBits: 1, closids: 4, hasMon: true, rmids: 64},
		{profile: "amd", res: "L3", cbmLen: 16, minBits: 0, sparse: true, closids: 16, mbMin: 0, mbGran: 1, hasMon: true, mbResource: "MB", rmids: 256},
		{profile: "mpam", res: "L3", cbmLen: 16, minBits: 1, sparse: true, closids: 16, mbMin: 5, mbGran: 5, hasMon: true, mbResource: "MB", rmids: 16},
	}
	for _, c := range cases {
		w := mk(t, c.profile)
		in, err := w.c.Info()
		if err != nil {
			t.Fatalf("%s: %v", c.profile, err)
		}
		r := in.Resource(c.res)
		if r == nil || r.CBMLen != c.cbmLen || r.MinCBMBits != c.minBits || r.SparseMasks != c.sparse || !r.Cache {
			t.Fatalf("%s: %s = %+v", c.profile, c.res, r)
		}
		if in.CDP() != c.cdp || in.MBps != c.mbps || (in.Mon != nil) != c.hasMon {
			t.Fatalf("%s: cdp %v mbps %v mon %v", c.profile, in.CDP(), in.MBps, in.Mon)
		}
		if c.profile != "mpam" && in.CLOSIDs() != c.closids {
			t.Fatalf("%s: CLOSIDs %d want %d", c.profile, in.CLOSIDs(), c.closids)
		}
		if in.Mon != nil && (in.Mon.NumRMIDs != c.rmids || len(in.Mon.Features) != 3) {
			t.Fatalf("%s: mon %+v", c.profile, in.Mon)
		}
		mb := in.Resource("MB")
		if (mb != nil) != (c.mbResource != "") {
			t.Fatalf("%s: MB %+v", c.profile, mb)
		}
		if mb != nil && (mb.MinBandwidth != c.mbMin || mb.BandwidthGran != c.mbGran || mb.ThrottleMode != c.throttle || mb.Cache) {
			t.Fatalf("%s: MB %+v", c.profile, mb)
		}
	}
}

func testOwnership(t *testing.T, mk mkWorld) {
	w := mk(t, "intel")
	// A foreign agent's groups.
	admin := resctrl.New(w.fs, resctrl.Options{AllowForeign: true})
	if err := admin.CreateGroup("other"); err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateGroup("other/mon_groups/colo.m"); err != nil {
		t.Fatal(err)
	}
	if err := w.c.CreateGroup("web"); err == nil || !strings.Contains(err.Error(), "prefix") {
		t.Fatalf("unprefixed create: %v", err)
	}
	if err := w.c.CreateGroup("colo.web"); err != nil {
		t.Fatal(err)
	}
	if err := w.c.CreateGroup("colo.web/mon_groups/colo.a"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"other", ""} {
		if err := w.c.SetSchemata(p, resctrl.Schemata{{Resource: "L3", Values: []resctrl.DomainValue{{0, 1}}}}); err == nil {
			t.Fatalf("client changed foreign group %q", p)
		}
		if err := w.c.AddTasks(p, 5); err == nil {
			t.Fatalf("client moved a task into foreign group %q", p)
		}
	}
	if err := w.c.RemoveGroup("other"); err == nil {
		t.Fatal("client removed a foreign group")
	}
	gs, err := w.c.Groups()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range gs {
		got = append(got, fmt.Sprintf("%s:%v:%v", g.Path, g.Mon, g.Owned))
	}
	want := []string{":false:false", "colo.web:false:true", "colo.web/mon_groups/colo.a:true:true", "other:false:false", "other/mon_groups/colo.m:true:true"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("groups %v\nwant %v", got, want)
	}
	for _, bad := range []string{"info", "a/b", "a/mon_groups", "mon_data", "../x"} {
		if _, _, err := resctrl.SplitGroup(bad); err == nil {
			t.Fatalf("SplitGroup(%q) accepted", bad)
		}
	}
}

func testSchemataRoundTrip(t *testing.T, mk mkWorld) {
	for _, prof := range []string{"intel", "intel-newfmt", "amd-smba", "intel-cdp"} {
		w := mk(t, prof)
		if err := w.c.CreateGroup("colo.a"); err != nil {
			t.Fatal(err)
		}
		res := "L3"
		if prof == "intel-cdp" {
			res = "L3DATA"
		}
		want := resctrl.Schemata{}.Set(res, 0, 0x3c)
		if prof != "intel-cdp" {
			want = want.Set("MB", 1, map[string]uint64{"intel": 40, "intel-newfmt": 40, "amd-smba": 16}[prof])
		}
		if err := w.c.SetSchemata("colo.a", want); err != nil {
			t.Fatalf("%s: %v", prof, err)
		}
		got, err := w.c.Schemata("colo.a")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range want {
			for _, dv := range l.Values {
				if v, ok := got.Get(l.Resource, dv.Domain); !ok || v != dv.Value {
					t.Fatalf("%s: %s:%d = %x (%v) want %x\n%s", prof, l.Resource, dv.Domain, v, ok, dv.Value, got)
				}
			}
		}
		// untouched domain keeps the default
		if v, _ := got.Get(res, 1); v != 0xfff && v != 0xffff {
			t.Fatalf("%s: domain 1 changed to %x", prof, v)
		}
	}
}

func testRejected(t *testing.T, mk mkWorld) {
	w := mk(t, "intel")
	if err := w.c.CreateGroup("colo.a"); err != nil {
		t.Fatal(err)
	}
	err := w.c.SetSchemata("colo.a", resctrl.Schemata{}.Set("L3", 0, 0xf7))
	var we *resctrl.WriteError
	if !errors.As(err, &we) || we.Status != "The mask f7 has non-consecutive 1-bits" || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"L3:0=f7", "colo.a/schemata", "non-consecutive", "one run of set bits"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("error %q lacks %q", msg, want)
		}
	}
	// out of CLOSIDs says so and what to do
	for i := 1; i < 7; i++ {
		if err := w.c.CreateGroup(fmt.Sprintf("colo.g%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	err = w.c.CreateGroup("colo.extra")
	if !errors.As(err, &we) || we.Status != "Out of CLOSIDs" || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "remove an unused group") {
		t.Fatalf("got %v", err)
	}
	if err := w.c.AddTasks("colo.a", 999999); err == nil || !strings.Contains(err.Error(), "No task 999999") {
		t.Fatalf("missing task: %v", err)
	}
}

func testTasksMon(t *testing.T, mk mkWorld) {
	w := mk(t, "intel")
	c := w.c
	for _, g := range []string{"colo.a", "colo.a/mon_groups/colo.m"} {
		if err := c.CreateGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.AddTasks("colo.a", 10, 11); err != nil {
		t.Fatal(err)
	}
	if err := c.AddTasks("colo.a/mon_groups/colo.m", 11); err != nil {
		t.Fatal(err)
	}
	ts, err := c.Tasks("colo.a")
	if err != nil || !reflect.DeepEqual(ts, []int{10, 11}) {
		t.Fatalf("tasks %v %v", ts, err)
	}
	for pid, want := range map[int]string{10: "colo.a", 11: "colo.a/mon_groups/colo.m", 12: ""} {
		if g, err := c.TaskGroup(pid); err != nil || g != want {
			t.Fatalf("TaskGroup(%d) = %q %v want %q", pid, g, err, want)
		}
	}
	if err := c.SetCPUs("colo.a", []int{2, 3, 4, 8}); err != nil {
		t.Fatal(err)
	}
	if cpus, err := c.CPUs("colo.a"); err != nil || !reflect.DeepEqual(cpus, []int{2, 3, 4, 8}) {
		t.Fatalf("cpus %v %v", cpus, err)
	}
	md, err := c.MonData("colo.a")
	if err != nil || len(md) != 2 || md[1].Domain != 1 || len(md[0].Unavailable) != 0 {
		t.Fatalf("mon %+v %v", md, err)
	}
	if _, err := c.Schemata("colo.a/mon_groups/colo.m"); err == nil {
		t.Fatal("MON group schemata read accepted")
	}
}

// snapshot is everything observable through files, for before/after comparisons.
// wantMB0 requires group's MB value on domain 0 to be want.
func wantMB0(t *testing.T, c *resctrl.Client, group string, want uint64) {
	t.Helper()
	s, err := c.Schemata(group)
	if v, _ := s.Get("MB", 0); err != nil || v != want {
		t.Fatalf("%s MB:0 = %d (%v), want %d", group, v, err, want)
	}
}

func snapshot(t *testing.T, c *resctrl.Client) string {
	t.Helper()
	gs, err := c.Groups()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, g := range gs {
		ts, _ := c.Tasks(g.Path)
		cpus, _ := c.CPUs(g.Path)
		fmt.Fprintf(&b, "%s tasks=%v cpus=%v", g.Path, ts, cpus)
		if !g.Mon {
			s, _ := c.Schemata(g.Path)
			m, _ := c.Mode(g.Path)
			fmt.Fprintf(&b, " mode=%s schemata=%q", m, s.String())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func testApplyRollback(t *testing.T, mk mkWorld) {
	w := mk(t, "intel")
	c := w.c
	if err := c.CreateGroup("colo.a"); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateGroup("colo.a/mon_groups/colo.m"); err != nil {
		t.Fatal(err)
	}
	if err := c.AddTasks("colo.a", 20, 21); err != nil {
		t.Fatal(err)
	}
	if err := c.AddTasks("colo.a/mon_groups/colo.m", 21); err != nil {
		t.Fatal(err)
	}
	if err := c.SetSchemata("colo.a", resctrl.Schemata{}.Set("L3", 0, 0xff0).Set("MB", 0, 70)); err != nil {
		t.Fatal(err)
	}
	// PID 30 exists in the default group; a real root tasks file lists every process, the
	// emulator's lists those it was told about.
	w.e.Declare(30)
	before := snapshot(t, c)
	var st0 emu.State
	if w.e != nil {
		st0 = w.e.State()
	}
	err := c.Apply(
		resctrl.Change{Group: "colo.a", Schemata: resctrl.Schemata{}.Set("L3", 0, 0x00f).Set("MB", 0, 30)},
		resctrl.Change{Group: "colo.b", Create: true, Schemata: resctrl.Schemata{}.Set("L3", 0, 0xff0), Tasks: []int{20, 21, 30}},
		resctrl.Change{Group: "colo.c", Create: true, Schemata: resctrl.Schemata{}.Set("L3", 1, 0x5)}, // rejected: non-contiguous
	)
	var ae *resctrl.ApplyError
	if !errors.As(err, &ae) || ae.Step != 2 || ae.RollbackErr != nil || !strings.Contains(err.Error(), "non-consecutive") {
		t.Fatalf("Apply: %v", err)
	}
	if after := snapshot(t, c); after != before {
		t.Fatalf("rollback incomplete:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if w.e != nil {
		st1 := w.e.State()
		st0.Generation, st1.Generation = 0, 0
		for i := range st1.Groups {
			// CLOSIDs may be reassigned, everything else must be equal
			st1.Groups[i].CLOSID = st0.Groups[i].CLOSID
			st1.Groups[i].RMID = st0.Groups[i].RMID
		}
		if !reflect.DeepEqual(st0, st1) {
			t.Fatalf("emulator state differs after rollback:\n%+v\n%+v", st0, st1)
		}
	}
}

func testApplyCommit(t *testing.T, mk mkWorld) {
	w := mk(t, "intel")
	c := w.c
	err := c.Apply(
		resctrl.Change{Group: "colo.lc", Create: true, Schemata: resctrl.Schemata{}.Set("L3", 0, 0xf00).Set("L3", 1, 0xf00), Tasks: []int{1, 2}},
		resctrl.Change{Group: "colo.be", Create: true, Schemata: resctrl.Schemata{}.Set("L3", 0, 0x0ff).Set("L3", 1, 0x0ff).Set("MB", 0, 20), Tasks: []int{3}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := c.TaskGroup(2); g != "colo.lc" {
		t.Fatalf("task 2 in %q", g)
	}
	wantMB0(t, c, "colo.be", 20)
}

func testReconcile(t *testing.T, mk mkWorld) {
	w := mk(t, "intel")
	admin := resctrl.New(w.fs, resctrl.Options{AllowForeign: true})
	for _, g := range []string{"colo.keep", "colo.old", "colo.old/mon_groups/colo.x", "theirs", "theirs/mon_groups/colo.left", "theirs/mon_groups/mine-not"} {
		if err := admin.CreateGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.AddTasks("colo.old", 44); err != nil {
		t.Fatal(err)
	}
	removed, err := w.c.Reconcile(func(p string) bool { return p == "colo.keep" })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"colo.old", "colo.old/mon_groups/colo.x", "theirs/mon_groups/colo.left"}
	if !reflect.DeepEqual(removed, want) {
		t.Fatalf("removed %v want %v", removed, want)
	}
	gs, _ := w.c.Groups()
	var left []string
	for _, g := range gs {
		left = append(left, g.Path)
	}
	if !reflect.DeepEqual(left, []string{"", "colo.keep", "theirs", "theirs/mon_groups/mine-not"}) {
		t.Fatalf("left %v", left)
	}
	if g, _ := w.c.TaskGroup(44); g != "" {
		t.Fatalf("task of a removed group should be in the default group, is in %q", g)
	}
}

func testPlace(t *testing.T, mk mkWorld) {
	for _, prof := range []string{"intel", "amd"} {
		w := mk(t, prof)
		in, err := w.c.Info()
		if err != nil {
			t.Fatal(err)
		}
		r := in.Resource("L3")
		// other groups hold bits 0-1 and 5-6 (and 9 on AMD's 16 bits): free runs 2-4, 7-...
		used := uint64(0b1100011)
		m, err := resctrl.Place(r, r.CBMMask&^used, 3)
		if err != nil || m != 0b11100 {
			t.Fatalf("%s: Place 3 = %b %v", prof, m, err)
		}
		if err := w.c.CreateGroup("colo.p"); err != nil {
			t.Fatal(err)
		}
		if err := w.c.SetSchemata("colo.p", resctrl.Schemata{}.Set("L3", 0, m)); err != nil {
			t.Fatalf("%s: kernel rejected a placed mask: %v", prof, err)
		}
		// a request larger than any hole: sparse on AMD, an error on Intel
		free := r.CBMMask &^ uint64(0b1010101010) & 0x3ff
		m, err = resctrl.Place(r, free, 4)
		if prof == "intel" {
			if err == nil || !strings.Contains(err.Error(), "contiguous") {
				t.Fatalf("intel: Place sparse = %b %v", m, err)
			}
			continue
		}
		if err != nil || cbm.Mask(m).Ones() != 4 || cbm.Mask(m).Contiguous() {
			t.Fatalf("amd: Place = %b %v", m, err)
		}
		if err := w.c.SetSchemata("colo.p", resctrl.Schemata{}.Set("L3", 0, m)); err != nil {
			t.Fatalf("amd rejected a sparse mask: %v", err)
		}
	}
}

func TestParseSchemataFormats(t *testing.T) {
	cases := []struct {
		in   string
		want string
	}{
		{"L3:0=fff;1=fff\nMB:0=100;1=100\n", "L3:0=fff;1=fff\nMB:0=100;1=100\n"},
		{"    L3:0=00ff;1=0ff0\n    MB:0=2048;1=  16\n", "L3:0=ff;1=ff0\nMB:0=2048;1=16\n"},
		{"L3CODE:0=fffff;1=fffff\nL3DATA:0=fffff;1=fffff\n", "L3CODE:0=fffff;1=fffff\nL3DATA:0=fffff;1=fffff\n"},
		{"L2:1=0x3;0=0xfc;\n\n", "L2:0=fc;1=3\n"},
		{"SMBA:0=16\n", "SMBA:0=16\n"},
		{"    L3:0=0ff0\n    MB:0=050;1=100\n", "L3:0=ff0\nMB:0=50;1=100\n"},
		{"MB:0=4294967295\n", "MB:0=4294967295\n"},
	}
	for _, c := range cases {
		s, err := resctrl.ParseSchemata(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if s.String() != c.want {
			t.Fatalf("%q -> %q want %q", c.in, s.String(), c.want)
		}
		again, err := resctrl.ParseSchemata(s.String())
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("round trip of %q: %v %v", s.String(), again, err)
		}
	}
	for _, bad := range []string{"L3 0=f", "L3:0=xyz", "L3:x=f", "MB:0=ff", "L3:0=1;0=2", "L3:0=1\nL3:1=1", ":0=1", "L3:", "MB:0=-1", "L3:0=+1", "L3:uninitialized", "L 3:0=1"} {
		if _, err := resctrl.ParseSchemata(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

func TestMaskHelpers(t *testing.T) {
	// icx-4314: 24 MiB, 12 ways → 2 MiB per way.
	if w := resctrl.WayBytes(24<<20, 12); w != 2<<20 {
		t.Fatalf("WayBytes %d", w)
	}
	if b := resctrl.MaskBytes(0x3c, 24<<20, 12); b != 8<<20 {
		t.Fatalf("MaskBytes %d", b)
	}
	for _, c := range []struct {
		bytes uint64
		ways  int
	}{{1, 1}, {2 << 20, 1}, {2<<20 + 1, 2}, {100 << 20, 12}, {0, 0}} {
		if got := resctrl.BytesToWays(c.bytes, 24<<20, 12); got != c.ways {
			t.Fatalf("BytesToWays(%d) = %d want %d", c.bytes, got, c.ways)
		}
	}
}

// The emulator's Lock is exclusive: a second Lock returns only after the first holder
// unlocked. The second locker is given every chance to run first (started, then the
// holder yields); the order of events shows whether it waited.
func TestLockSerialises(t *testing.T) {
	e, _ := emu.NewNamed("intel", emu.Options{})
	fs := e.FS()
	unlock, err := fs.Lock()
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 2)
	started, done := make(chan struct{}), make(chan struct{})
	go func() {
		close(started)
		u, _ := fs.Lock()
		events <- "second locked"
		u()
		close(done)
	}()
	<-started
	for i := 0; i < 100; i++ {
		runtime.Gosched()
	}
	events <- "first unlocks"
	unlock()
	<-done
	if a, b := <-events, <-events; a != "first unlocks" || b != "second locked" {
		t.Fatalf("events %q, %q: the second Lock did not wait for the first", a, b)
	}
}

func TestResolveRoot(t *testing.T) {
	t.Setenv(resctrl.EnvRoot, "")
	if r := resctrl.ResolveRoot(""); r != resctrl.DefaultRoot {
		t.Fatal(r)
	}
	t.Setenv(resctrl.EnvRoot, "/tmp/x")
	if r := resctrl.ResolveRoot(""); r != "/tmp/x" {
		t.Fatal(r)
	}
	if r := resctrl.ResolveRoot("/flag"); r != "/flag" {
		t.Fatal(r)
	}
}

func TestParseSpec(t *testing.T) {
	s, err := resctrl.ParseSpec("L3:0=f;1=f0;MB:0=50")
	if err != nil || s.String() != "L3:0=f;1=f0\nMB:0=50\n" {
		t.Fatalf("%q %v", s.String(), err)
	}
	s, err = resctrl.ParseSpec("L3:0=f\nMB:1=20\n")
	if err != nil || s.String() != "L3:0=f\nMB:1=20\n" {
		t.Fatalf("%q %v", s.String(), err)
	}
	for _, bad := range []string{"", ";", "0=f", "L3:0=f;x"} {
		if _, err := resctrl.ParseSpec(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// OSFS.Lock is flock(LOCK_EX) on the mount root (the kernel documentation's locking
// protocol for resctrl): while it is held another open file of the root cannot take the
// lock (checked without blocking, LOCK_NB), and after unlock it can.
func TestOSFSLockIsFlock(t *testing.T) {
	dir := t.TempDir()
	unlock, err := resctrl.OSFS{Root: dir}.Lock()
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != syscall.EWOULDBLOCK {
		t.Fatalf("flock while Lock is held: %v, want EWOULDBLOCK", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("flock after unlock: %v", err)
	}
	if _, err := (resctrl.OSFS{Root: filepath.Join(dir, "absent")}).Lock(); err == nil {
		t.Fatal("Lock on a missing root must fail")
	}
}

func TestMissingTasks(t *testing.T) {
	for _, c := range []struct{ have, tids, want []int }{
		{nil, []int{3, 1}, []int{3, 1}},
		{[]int{1, 2, 3}, []int{3, 1}, nil},
		{[]int{2}, []int{5, 2, 4}, []int{5, 4}},
	} {
		if got := resctrl.MissingTasks(c.have, c.tids); !reflect.DeepEqual(got, c.want) {
			t.Errorf("MissingTasks(%v, %v) = %v, want %v", c.have, c.tids, got, c.want)
		}
	}
}
