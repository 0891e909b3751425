// Package apitest holds the API-level tests (tier 1 of scripts/k8s-e2e.sh): colo's
// scheduler plugin inside the real kube-scheduler and the extender, both against a real
// kube-apiserver with the NodeInterference CRD from deploy/base.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"colo/internal/testenv"
	"colo/k8s/extender"
	"colo/k8s/kwokrun"
	"colo/k8s/nodestate"
	"colo/k8s/placement"
	"colo/k8s/publish"
	"colo/k8s/scoring"
	"colo/k8s/testcluster"
)

const need = "the Kubernetes binaries (bash scripts/k8s-build.sh; scripts/k8s-e2e.sh builds them)"

func cluster(t *testing.T) (*testcluster.Cluster, dynamic.Interface, *placement.Library) {
	t.Helper()
	var err error
	if m := testcluster.Missing("etcd", "kube-apiserver", "kwok"); len(m) > 0 {
		err = fmt.Errorf("%v missing in %s", m, testcluster.BinDir())
	}
	testenv.Need(t, need, err)
	ctx := context.Background()
	c, err := testcluster.Start(ctx, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	dc, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := kwokrun.InstallCRD(ctx, dc, c); err != nil {
		t.Fatal(err)
	}
	lib, err := placement.LoadLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	return c, dc, lib
}

func state(lib *placement.Library, node string, updated time.Time, residents ...nodestate.Resident) nodestate.State {
	return nodestate.State{FormatVersion: nodestate.FormatVersion, Node: node, Updated: updated, DialsMB: lib.Dials, Residents: residents,
		Sockets: []nodestate.Socket{{ID: 0, FreeWays: 11, FreeMBA: 100, CLOSIDsLeft: 15}}}
}

func resident(t *testing.T, lib *placement.Library, spec string) nodestate.Resident {
	r, err := publish.ParseResident(lib, spec)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func pod(name string, ann map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann},
		Spec: corev1.PodSpec{SchedulerName: "colo-scheduler", Containers: []corev1.Container{{Name: "c", Image: "colo.local/tenant"}}}}
}

// eventually waits for cond, which reads the API server's state; the deadline only bounds
// a failure.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ok, s := cond()
		if ok {
			return
		}
		last = s
	}
	t.Fatalf("%s: not reached in 60 s (last: %s)", what, last)
}

// schedulerBin is the colo-kube-scheduler binary named by $COLO_KUBE_SCHEDULER.
func schedulerBin() (string, error) {
	bin := os.Getenv("COLO_KUBE_SCHEDULER")
	if bin == "" {
		return "", errors.New("COLO_KUBE_SCHEDULER (path of colo-kube-scheduler) not set")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", err
	}
	return filepath.Abs(bin)
}

// The plugin inside the real kube-scheduler: a sensitive priority pod goes to the node
// whose published residents hurt it least, never to a node that would put it below its
// target; a pod with an invalid annotation is still scheduled (neutral); a pod without a
// profile is marked for profiling.
func TestPluginInRealScheduler(t *testing.T) {
	bin, err := schedulerBin()
	testenv.Need(t, "colo-kube-scheduler (scripts/k8s-e2e.sh builds it)", err)
	c, dc, lib := cluster(t)
	ctx := context.Background()
	if err := c.StartKwok(); err != nil {
		t.Fatal(err)
	}
	w := publish.Writer{Client: c.Client, Dynamic: dc, Annotation: true, Object: true}
	now := time.Now()
	for _, n := range []string{"noisy", "quiet", "mid"} {
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, kwokrun.FakeNode(n, 8000), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write(ctx, state(lib, "noisy", now, resident(t, lib, "etl=619.lbm_s:batch"))); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, state(lib, "mid", now, resident(t, lib, "xz=657.xz_s:batch"))); err != nil {
		t.Fatal(err)
	}
	// The quiet node publishes through its annotation only.
	if err := (publish.Writer{Client: c.Client, Annotation: true}).Write(ctx, state(lib, "quiet", now, resident(t, lib, "calc=644.nab_s:batch"))); err != nil {
		t.Fatal(err)
	}
	if err := c.StartScheduler(ctx, "scheduler", bin, deployedSchedulerConfig(t), 90*time.Second); err != nil {
		t.Fatal(err)
	}
	pods := c.Client.CoreV1().Pods("default")
	nodeOf := func(name string) func() (bool, string) {
		return func() (bool, string) {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return p.Spec.NodeName != "", fmt.Sprintf("node %q, conditions %v", p.Spec.NodeName, p.Status.Conditions)
		}
	}
	for _, p := range []*corev1.Pod{
		pod("sensitive", map[string]string{"colo.io/class": "priority", "colo.io/target-ipce": "0.8", "colo.io/profile": "620.omnetpp_s"}),
		pod("invalid", map[string]string{"colo.io/class": "gold", "colo.io/profile": "619.lbm_s"}),
		pod("unprofiled", map[string]string{"colo.io/class": "batch"}),
	} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"sensitive", "invalid", "unprofiled"} {
		eventually(t, n+" bound", nodeOf(n))
	}
	if p, _ := pods.Get(ctx, "sensitive", metav1.GetOptions{}); p.Spec.NodeName != "quiet" {
		t.Errorf("sensitive priority pod on %s, want quiet (nab resident)", p.Spec.NodeName)
	}
	eventually(t, "unprofiled pod marked", func() (bool, string) {
		p, err := pods.Get(ctx, "unprofiled", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Annotations[nodestate.NeedsProfileAnnotation] == "true", fmt.Sprint(p.Annotations)
	})
	// Filter: a second sensitive priority pod with a tight target fits nowhere but the node
	// without a contentious resident; with that node cordoned it stays pending.
	if _, err := c.Client.CoreV1().Nodes().Patch(ctx, "quiet", "application/merge-patch+json", []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, pod("tight", map[string]string{"colo.io/class": "priority", "colo.io/target-ipce": "0.97", "colo.io/profile": "620.omnetpp_s"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "tight pod rejected by ColoInterference", func() (bool, string) {
		p, err := pods.Get(ctx, "tight", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("tight pod bound to %s", p.Spec.NodeName)
		}
		for _, cd := range p.Status.Conditions {
			if cd.Type == corev1.PodScheduled && cd.Status == corev1.ConditionFalse && strings.Contains(cd.Message, "below its target") {
				return true, cd.Message
			}
		}
		return false, fmt.Sprint(p.Status.Conditions)
	})
}

type extenderCall struct {
	srv *httptest.Server
}

func (e extenderCall) do(t *testing.T, path string, p *corev1.Pod, nodes []string, out any) {
	t.Helper()
	b, _ := json.Marshal(extenderv1.ExtenderArgs{Pod: p, NodeNames: &nodes})
	resp, err := http.Post(e.srv.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

func (e extenderCall) scores(t *testing.T, p *corev1.Pod, nodes []string) map[string]int64 {
	var hp extenderv1.HostPriorityList
	e.do(t, "/prioritize", p, nodes, &hp)
	m := map[string]int64{}
	for _, h := range hp {
		m[h.Host] = h.Score
	}
	return m
}

// The extender against the real API server, with every kind of bad node state: missing,
// stale, of an unknown formatVersion; and an API server that restarts under it.
func TestExtenderBadInputAndRestart(t *testing.T) {
	c, dc, lib := cluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := publish.Writer{Client: c.Client, Dynamic: dc, Annotation: true, Object: true}
	now := time.Now()
	nodes := []string{"noisy", "quiet", "missing", "stale", "future"}
	for _, n := range nodes {
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, kwokrun.FakeNode(n, 8000), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range []nodestate.State{
		state(lib, "noisy", now, resident(t, lib, "etl=619.lbm_s:batch"), resident(t, lib, "sim=654.roms_s:batch")),
		state(lib, "quiet", now, resident(t, lib, "calc=644.nab_s:batch")),
		state(lib, "stale", now.Add(-time.Hour)),
	} {
		if err := w.Write(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	future := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "colo.io/v1alpha1", "kind": "NodeInterference",
		"metadata": map[string]any{"name": "future"}, "spec": map[string]any{"formatVersion": int64(2), "node": "future", "updated": now.UTC().Format(time.RFC3339)}}}
	if _, err := dc.Resource(scoring.GVR).Create(ctx, future, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []string
	logf := func(f string, a ...any) { mu.Lock(); logs = append(logs, fmt.Sprintf(f, a...)); mu.Unlock() }
	s := scoring.New(lib, scoring.Config{Seed: 3, MaxAge: 10 * time.Minute, Logf: logf})
	srv, err := extender.Start(ctx, c.Client, dc, s, logf)
	if err != nil {
		t.Fatal(err)
	}
	e := extenderCall{httptest.NewServer(srv.Handler())}
	defer e.srv.Close()
	sensitive := pod("p", map[string]string{"colo.io/class": "priority", "colo.io/target-ipce": "0.8", "colo.io/profile": "620.omnetpp_s"})
	sensitive.UID = "uid-p"
	neutral := extender.Scale(placement.NeutralScore)
	eventually(t, "extender sees the published states", func() (bool, string) {
		sc := e.scores(t, sensitive, nodes)
		return sc["quiet"] == extenderv1.MaxExtenderPriority && sc["noisy"] < neutral, fmt.Sprint(sc)
	})
	sc := e.scores(t, sensitive, nodes)
	for _, n := range []string{"missing", "stale", "future"} {
		if sc[n] != neutral {
			t.Errorf("%s scores %d, want neutral %d", n, sc[n], neutral)
		}
	}
	// Twice more: each bad node is logged once.
	e.scores(t, sensitive, nodes)
	mu.Lock()
	joined := strings.Join(logs, "\n")
	mu.Unlock()
	for _, want := range []string{"node missing: no NodeInterference object", "node stale: NodeInterference stale updated", "node future: NodeInterference future: formatVersion: 2"} {
		if strings.Count(joined, want) != 1 {
			t.Errorf("log %q %d times in:\n%s", want, strings.Count(joined, want), joined)
		}
	}
	// Filter: the noisy node would put the priority pod below its target.
	var fr extenderv1.ExtenderFilterResult
	e.do(t, "/filter", sensitive, nodes, &fr)
	if _, failed := fr.FailedNodes["noisy"]; !failed || len(*fr.NodeNames) != len(nodes)-1 {
		t.Errorf("filter: kept %v, failed %v", *fr.NodeNames, fr.FailedNodes)
	}
	// A pod with an invalid target scores neutrally everywhere.
	bad := pod("bad", map[string]string{"colo.io/target-ipce": "2", "colo.io/profile": "619.lbm_s"})
	for n, v := range e.scores(t, bad, nodes) {
		if v != neutral {
			t.Errorf("invalid pod scores %d on %s", v, n)
		}
	}
	// The API server goes away and comes back: the extender keeps answering from its cache,
	// then sees a state published after the restart.
	c.StopComponent("kube-apiserver")
	if got := e.scores(t, sensitive, nodes); got["quiet"] != sc["quiet"] || got["noisy"] != sc["noisy"] {
		t.Errorf("while the API server is down: %v, before %v", got, sc)
	}
	if err := c.Restart(ctx, "kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, state(lib, "missing", time.Now())); err != nil {
		t.Fatal(err)
	}
	eventually(t, "state published after the restart seen", func() (bool, string) {
		got := e.scores(t, sensitive, nodes)
		return got["missing"] != neutral, fmt.Sprint(got)
	})
}
