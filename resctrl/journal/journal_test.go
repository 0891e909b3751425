package journal

import (
	"os"
	"strings"
	"testing"

	"colo/resctrl"
	"colo/resctrl/emu"
)

func mount(t *testing.T) (*emu.Emulator, *resctrl.Client) {
	t.Helper()
	e, err := emu.NewNamed("intel", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e, resctrl.New(e.FS(), resctrl.Options{AllowForeign: true})
}

func spec(t *testing.T, s string) resctrl.Schemata {
	sc, err := resctrl.ParseSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func kill(t *testing.T, j *Journal) {
	t.Helper()
	r := j.Record()
	r.Start++ // the PID now names a process with another start time
	if err := r.Save(); err != nil {
		t.Fatal(err)
	}
}

// The record is on disk before each change and says what the instance holds.
func TestRecordIsWrittenAhead(t *testing.T) {
	state := t.TempDir()
	j, err := Open(state, "/mnt/a", Record{Kind: "test", Prefix: "colo.t."})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.SaveDefault("L3:0=fff\n"); err != nil {
		t.Fatal(err)
	}
	j.SaveDefault("L3:0=1\n") // kept once
	j.AddGroup("colo.t.c0")
	j.AddGroup("colo.t.c0/mon_groups/colo.t.j1")
	j.AddGroup("colo.t.c1")
	j.DropGroup("colo.t.c0") // its MON group goes with it
	rs, err := List(state, "/mnt/a")
	if err != nil || len(rs) != 1 {
		t.Fatalf("%v %v", rs, err)
	}
	r := rs[0]
	if r.Default != "L3:0=fff\n" || strings.Join(r.Groups, ",") != "colo.t.c1" || !r.Alive() || r.PID != os.Getpid() {
		t.Fatalf("record %+v", r)
	}
	if other, _ := List(state, "/mnt/b"); len(other) != 0 {
		t.Fatalf("mount b sees mount a's records: %+v", other)
	}
	r.PIDNS = "pid-elsewhere"
	if !r.Alive() {
		t.Fatal("a record of another PID namespace judged dead")
	}
	kill(t, j)
	if rs, _ := List(state, "/mnt/a"); rs[0].Alive() {
		t.Fatal("a reused PID judged alive")
	}
	if _, err := Open(state, "/mnt/a", Record{Instance: r.Instance}); err == nil {
		t.Fatal("an instance name taken twice")
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if rs, _ := List(state, "/mnt/a"); len(rs) != 0 {
		t.Fatalf("closed record still listed: %+v", rs)
	}
}

// Reconcile removes exactly what dead instances recorded or named with their prefix and
// writes system/default back as the oldest dead one found it; a live instance's groups,
// another agent's and a user's colo.web stay.
func TestReconcileOnlyDeadInstances(t *testing.T) {
	e, c := mount(t)
	state := t.TempDir()
	found, _ := c.Schemata("")
	for _, g := range []string{"colo.web", "theirs"} { // a user's, another agent's
		if err := c.Apply(resctrl.Change{Group: g, Create: true, Schemata: spec(t, "L3:0=3")}); err != nil {
			t.Fatal(err)
		}
	}
	dead, _ := Open(state, "emu", Record{Instance: "dead", Prefix: "colo.d."})
	live, _ := Open(state, "emu", Record{Instance: "live", Prefix: "colo.l."})
	dead.SaveDefault(found.String())
	for _, g := range []string{"colo.d.c0", "colo.d.c0/mon_groups/colo.d.j0", "mon_groups/colo.d.j1"} {
		dead.AddGroup(g)
		if err := c.CreateGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CreateGroup("colo.d.c1"); err != nil { // not recorded yet: its prefix says whose
		t.Fatal(err)
	}
	live.AddGroup("colo.l.c0")
	c.CreateGroup("colo.l.c0")
	if err := c.SetSchemata("", spec(t, "L3:0=ff0;1=ff0")); err != nil {
		t.Fatal(err)
	}
	if done, err := Reconcile(e.FS(), state, "emu", nil); err != nil || len(done) != 0 {
		t.Fatalf("both alive: %v %v", done, err)
	}
	kill(t, dead)
	done, err := Reconcile(e.FS(), state, "emu", nil)
	if err != nil || len(done) != 1 {
		t.Fatalf("%v %v", done, err)
	}
	if got := strings.Join(done[0].Removed, ","); got != "colo.d.c1,colo.d.c0/mon_groups/colo.d.j0,colo.d.c0,mon_groups/colo.d.j1" {
		t.Fatalf("removed %s", got)
	}
	var left []string
	for _, g := range e.State().Groups {
		left = append(left, g.Path)
	}
	if strings.Join(left, ",") != ",colo.l.c0,colo.web,theirs" {
		t.Fatalf("left %v", left)
	}
	if now, _ := c.Schemata(""); now.String() != found.String() {
		t.Fatalf("system/default %q, want %q", now, found)
	}
	if rs, _ := List(state, "emu"); len(rs) != 1 || rs[0].Instance != "live" {
		t.Fatalf("records %+v", rs)
	}
	// A dead instance's default is left while a live one holds the administrator's (the
	// live one restores at its end): the dead record goes.
	live.SaveDefault("L3:0=ff0;1=ff0\n")
	d2, _ := Open(state, "emu", Record{Instance: "dead2", Prefix: "colo.e."})
	d2.SaveDefault("L3:0=fff;1=fff\n")
	kill(t, d2)
	c.SetSchemata("", spec(t, "L3:0=f00"))
	done, err = Reconcile(e.FS(), state, "emu", nil)
	if err != nil || len(done) != 1 || done[0].DefaultLeft == "" || done[0].Default != "" {
		t.Fatalf("%v %v", done, err)
	}
	if now, _ := c.Schemata(""); !strings.Contains(now.String(), "L3:0=f00") {
		t.Fatalf("a live instance's system/default was overwritten: %q", now)
	}
	if rs, _ := List(state, "emu"); len(rs) != 1 || rs[0].Instance != "live" {
		t.Fatalf("records %+v", rs)
	}
}
