package process

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"colo/agent/core"
	"colo/agent/discovery"
	"colo/workload"
)

// fakeTree is a cgroup tree in a temp directory: a hybrid host whose cpu (v1) hierarchy
// is at root/cpu and unified one at root/unified.
type fakeTree struct{ root string }

func (f fakeTree) resolve(p string) (workload.Cgroup, error) {
	return workload.Cgroup{Version: 1, Path: p, Dirs: map[string]string{
		"cpu": filepath.Join(f.root, "cpu", p), "": filepath.Join(f.root, "unified", p)}}, nil
}

// put creates cgroup name under /colo in the cpu hierarchy holding pids, atomically (a
// staging directory renamed into place, so a poll never sees it half made).
func (f fakeTree) put(t *testing.T, name, pids string) {
	t.Helper()
	stage := filepath.Join(f.root, "stage-"+name)
	if err := os.MkdirAll(stage, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stage, "cgroup.procs"), []byte(pids), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(f.root, "cpu", "colo", name)
	os.RemoveAll(dst)
	if err := os.Rename(stage, dst); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// next waits for the discovery's next event.
func next(t *testing.T, ch <-chan discovery.Event) discovery.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no discovery event")
		return discovery.Event{}
	}
}

// The process discovery follows a (fake) cgroup tree: a Sync of the cgroups holding
// processes with their labels files, Upsert when a cgroup gets a process or appears,
// Gone when one is removed, Down while the parent is missing and a Sync when it is back;
// colo run's own workloads are left out.
func TestProcessDiscoveryFollowsCgroups(t *testing.T) {
	tree := fakeTree{t.TempDir()}
	labels, state := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(tree.root, "cpu", "colo"), 0o755); err != nil {
		t.Fatal(err)
	}
	tree.put(t, "web", "12\n7\n")
	tree.put(t, "idle", "")
	tree.put(t, "run-1", "30\n")
	writeFile(t, filepath.Join(labels, "web.labels"), "# web tier\ncolo.io/class = priority\nnot a label\n\ncolo.io/target-ipce=0.9\n")
	writeFile(t, filepath.Join(state, "run-1.json"), `{"name":"run-1","labels":{"colo.owner":"colo"},"pid":30}`)
	writeFile(t, filepath.Join(state, "batch.json"), `{"name":"batch","labels":{"team":"b"},"pid":40}`)
	if err := os.WriteFile(filepath.Join(tree.root, "cpu", "colo", "cgroup.procs"), nil, 0o644); err != nil {
		t.Fatal(err) // a file of the parent: not a tenant
	}

	var logb bytes.Buffer
	p := &Source{Parent: "colo", LabelsDir: labels, StateDir: state, Interval: 20 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&logb, nil)), resolve: tree.resolve}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan discovery.Event)
	done := make(chan struct{})
	go func() { p.Run(ctx, ch); close(done) }()

	ev := next(t, ch)
	webDirs := map[string]string{"cpu": filepath.Join(tree.root, "cpu", "colo", "web")}
	web := core.Container{ID: "web", Name: "web", PID: 7, Cgroup: "/colo/web", CgroupDirs: webDirs, CgroupV: 1,
		Labels: map[string]string{core.LabelClass: "priority", core.LabelTargetIPCE: "0.9"}}
	if ev.Kind != discovery.Sync || !reflect.DeepEqual(ev.Containers, []core.Container{web}) {
		t.Fatalf("first event %+v, want Sync of %+v", ev, web)
	}
	if req, errs := core.ParseRequest(ev.Containers[0].Labels, nil); req.Class != core.Priority || len(errs) != 0 {
		t.Errorf("labels %v give %+v %v, want a priority request", ev.Containers[0].Labels, req, errs)
	}

	tree.put(t, "idle", "5\n")
	ev = next(t, ch)
	if ev.Kind != discovery.Upsert || len(ev.Containers) != 1 || ev.Containers[0].ID != "idle" || ev.Containers[0].PID != 5 || ev.Containers[0].Labels != nil {
		t.Fatalf("after a process joined idle: %+v, want Upsert of idle, PID 5, unlabelled", ev)
	}
	tree.put(t, "batch", "40\n41\n")
	ev = next(t, ch)
	if ev.Kind != discovery.Upsert || ev.Containers[0].ID != "batch" || !reflect.DeepEqual(ev.Containers[0].Labels, map[string]string{"team": "b"}) {
		t.Fatalf("new cgroup batch: %+v, want Upsert with the process runtime's recorded labels", ev)
	}
	if err := os.RemoveAll(filepath.Join(tree.root, "cpu", "colo", "web")); err != nil {
		t.Fatal(err)
	}
	if ev = next(t, ch); ev.Kind != discovery.Gone || ev.ID != "web" {
		t.Fatalf("web removed: %+v, want Gone web", ev)
	}
	tree.put(t, "idle", "")
	if ev = next(t, ch); ev.Kind != discovery.Gone || ev.ID != "idle" {
		t.Fatalf("idle emptied: %+v, want Gone idle", ev)
	}

	if err := os.Rename(filepath.Join(tree.root, "cpu", "colo"), filepath.Join(tree.root, "cpu", "away")); err != nil {
		t.Fatal(err)
	}
	if ev = next(t, ch); ev.Kind != discovery.Down || ev.Err == nil || !bytes.Contains([]byte(ev.Err.Error()), []byte("cgroup parent /colo")) {
		t.Fatalf("parent removed: %+v, want Down naming the parent", ev)
	}
	if err := os.Rename(filepath.Join(tree.root, "cpu", "away"), filepath.Join(tree.root, "cpu", "colo")); err != nil {
		t.Fatal(err)
	}
	for ev = next(t, ch); ev.Kind == discovery.Down; ev = next(t, ch) {
	}
	if ev.Kind != discovery.Sync || len(ev.Containers) != 1 || ev.Containers[0].ID != "batch" {
		t.Fatalf("parent back: %+v, want Sync of batch", ev)
	}
	cancel()
	<-done
	log := logb.Bytes()
	if n := bytes.Count(log, []byte("web.labels:3")); n != 1 {
		t.Errorf("bad label line logged %d times, want once with file:line:\n%s", n, log)
	}
	if n := bytes.Count(log, []byte("cgroup parent unreadable")); n != 1 {
		t.Errorf("missing parent logged %d times, want once:\n%s", n, log)
	}
}

// changes orders a poll's events: Gone by ID, then Upsert by ID for the new and changed.
func TestProcessChangesOrder(t *testing.T) {
	known := map[string]core.Container{"b": {ID: "b", PID: 1}, "a": {ID: "a", PID: 2}, "c": {ID: "c", PID: 3}, "d": {ID: "d", PID: 4}}
	now := []core.Container{{ID: "c", PID: 9}, {ID: "d", PID: 4}, {ID: "e", PID: 5}}
	var got []string
	for _, ev := range changes(known, now) {
		switch ev.Kind {
		case discovery.Gone:
			got = append(got, "-"+ev.ID)
		case discovery.Upsert:
			got = append(got, "+"+ev.Containers[0].ID)
		}
	}
	if want := []string{"-a", "-b", "+c", "+e"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestParseLabelLines(t *testing.T) {
	l, bad := parseLabelLines([]byte("a=1\n=2\nb\n c d=3\n# x=y\n e = f g \nk=v=w"))
	if want := map[string]string{"a": "1", "e": "f g", "k": "v=w"}; !reflect.DeepEqual(l, want) {
		t.Errorf("labels %v, want %v", l, want)
	}
	if want := []int{2, 3, 4}; !reflect.DeepEqual(bad, want) {
		t.Errorf("bad lines %v, want %v", bad, want)
	}
}

// BenchmarkProcessesScan is one poll of --runtime process over 30 tenants (a fake tree on
// the temp file system: the cost of the polling itself, without cgroupfs).
func BenchmarkProcessesScan(b *testing.B) {
	tree := fakeTree{b.TempDir()}
	labels := b.TempDir()
	for i := range 30 {
		dir := filepath.Join(tree.root, "cpu", "colo", fmt.Sprintf("t%02d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprintf("%d\n", 100+i)), 0o644)
		os.WriteFile(filepath.Join(labels, fmt.Sprintf("t%02d.labels", i)), []byte(core.LabelClass+"=batch\n"), 0o644)
	}
	p := &Source{Parent: "colo", LabelsDir: labels, resolve: tree.resolve}
	b.ReportAllocs()
	for b.Loop() {
		if cs, err := p.scan(); err != nil || len(cs) != 30 {
			b.Fatalf("%d tenants, %v", len(cs), err)
		}
	}
}
