package apitest

// Tier 3 of scripts/k8s-e2e.sh, a real node: containerd (NRI enabled) + runc + a kubelet
// registered to the test API server, kube-controller-manager (deployments, replica sets)
// and colo-kube-scheduler; colo agent --runtime nri on that containerd, on the resctrl
// emulator mounted through FUSE. Deployments whose pods carry colo.io/* annotations are
// scheduled by colo's profile, run by the kubelet, and get their resctrl groups on the
// emulator mount; the publisher turns the agent's status into the node's
// NodeInterference. Images come from `docker save` | `ctr images import` (no registry).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"colo/agent/api"
	"colo/agent/core"
	"colo/internal/containerdtest"
	"colo/internal/testenv"
	"colo/k8s/publish"
	"colo/k8s/scoring"
	"colo/k8s/testcluster"
	"colo/resctrl/emu"
	"colo/workload/docker"
)

// nodeImages builds the static colo binary, its image (`colo image build`) and the pod
// sandbox image: a FROM scratch image around a static program that waits for SIGTERM.
// The images are removed from Docker at cleanup.
func nodeImages(t *testing.T) (colo, app, pause string) {
	t.Helper()
	dir := t.TempDir()
	colo = filepath.Join(dir, "colo")
	build := exec.Command("go", "build", "-o", colo, "colo/cmd/colo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build colo: %v\n%s", err, out)
	}
	app = fmt.Sprintf("colo.local/k8s-tenant-%d:e2e", os.Getpid())
	if out, err := exec.Command(colo, "image", "build", "--binary", colo, "--tag", app).CombinedOutput(); err != nil {
		t.Fatalf("colo image build: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", app).Run() })
	pause = fmt.Sprintf("colo.local/k8s-pause-%d:1", os.Getpid())
	if err := containerdtest.BuildPauseImage(context.Background(), dir, pause); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", pause).Run() })
	return colo, app, pause
}

// nodeAgent is `colo agent --runtime nri` as a process.
type nodeAgent struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	logf string
	done chan error
}

func startNodeAgent(t *testing.T, bin string, args ...string) *nodeAgent {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	a := &nodeAgent{t: t, url: "http://" + addr, logf: filepath.Join(t.TempDir(), "agent.log"), done: make(chan error, 1)}
	f, err := os.Create(a.logf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a.cmd = exec.Command(bin, append(append([]string{"agent"}, args...), "--listen", addr, "--interval", "200ms", "--no-perf")...)
	a.cmd.Stdout, a.cmd.Stderr = f, f
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.done <- a.cmd.Wait() }()
	t.Cleanup(func() {
		if a.cmd.ProcessState == nil {
			a.cmd.Process.Kill()
			<-a.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(a.logf)
			t.Logf("agent log:\n%s", tailLines(string(b), 60))
		}
	})
	return a
}

func tailLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

func (a *nodeAgent) status() (api.Status, error) {
	var st api.Status
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(a.url + api.Version + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// until waits for the agent's status (one per interval) to satisfy ok; the deadline only
// bounds a failure.
func (a *nodeAgent) until(what string, ok func(api.Status) bool) api.Status {
	a.t.Helper()
	var last api.Status
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-a.done:
			a.t.Fatalf("agent exited (%v) while waiting for %s", err, what)
		default:
		}
		if st, err := a.status(); err == nil {
			last = st
			if ok(st) {
				return st
			}
		}
	}
	a.t.Fatalf("timed out waiting for %s; last agent status %+v", what, last)
	return last
}

func (a *nodeAgent) term() {
	a.t.Helper()
	a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-a.done:
		if err != nil {
			a.t.Fatalf("agent after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		a.t.Fatal("agent did not exit after SIGTERM")
	}
}

// stableState is the emulator's state without what legitimately changes: the generation
// and the tasks of system/default (threads come back to it).
func stableState(e *emu.Emulator) emu.State {
	s := e.State()
	s.Generation = 0
	s.Groups[0].Tasks = nil
	return s
}

func hostPIDExists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// tenantDeployment runs replicas of colo's stress program (throttled to 5 % of a CPU) as a
// host-network Deployment scheduled by colo's profile, its pods annotated with the colo.io/*
// vocabulary.
func tenantDeployment(name, image string, replicas int32, ann map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	cpu := resource.MustParse("50m")
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: ann},
				Spec: corev1.PodSpec{
					SchedulerName: "colo-scheduler",
					HostNetwork:   true,
					DNSPolicy:     corev1.DNSDefault,
					// the node runs no CNI and no node lifecycle controller
					Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					TerminationGracePeriodSeconds: new(int64),
					Containers: []corev1.Container{{
						Name: name, Image: image, ImagePullPolicy: corev1.PullNever,
						Command:   []string{"/colo", "stress", "compute", "--duration", "900s"},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: cpu}, Limits: corev1.ResourceList{corev1.ResourceCPU: cpu}},
					}},
				},
			},
		},
	}
}

// containerIDs lists the CRI container IDs of the running pods of a Deployment.
func containerIDs(ctx context.Context, c *testcluster.Cluster, app string) ([]string, error) {
	pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil {
				_, id, _ := strings.Cut(cs.ContainerID, "://")
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

func managed(st api.Status, id string) *api.ContainerStatus {
	for i := range st.Containers {
		if st.Containers[i].ID == id {
			return &st.Containers[i]
		}
	}
	return nil
}

func TestRealNode(t *testing.T) {
	sched, err := schedulerBin()
	testenv.Need(t, "colo-kube-scheduler (scripts/k8s-e2e.sh builds it)", err)
	var kerr error
	if m := testcluster.Missing("etcd", "kube-apiserver", "kubelet", "kube-controller-manager"); len(m) > 0 {
		kerr = fmt.Errorf("%v missing in %s", m, testcluster.BinDir())
	}
	testenv.Need(t, "the Kubernetes binaries with kube-controller-manager (K8S_BUILD_KCM=1 bash scripts/k8s-build.sh; scripts/k8s-e2e.sh builds them)", kerr)
	var rootErr error
	if os.Geteuid() != 0 {
		rootErr = errors.New("not root")
	}
	testenv.Need(t, "root (a kubelet and containerd)", rootErr)
	pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, derr := docker.Probe(pctx)
	cancel()
	testenv.Need(t, "dockerd (scripts/setup.sh installs and starts it)", derr)
	testenv.Need(t, "FUSE (apt-get install fuse3; scripts/setup.sh installs it)", emu.FUSEAvailable())
	cbin, cerr := containerdtest.Bin()
	testenv.Need(t, "containerd v2, runc and crictl (scripts/build-containerd.sh, run by scripts/setup.sh)", cerr)

	ctx := context.Background()
	colo, app, pause := nodeImages(t)
	c, dc, lib := cluster(t)
	node := "colo-node"
	n, err := c.StartNode(ctx, node, testcluster.NodeOptions{ContainerdBin: cbin, SandboxImage: pause}, 2*time.Minute)
	if err != nil {
		t.Fatalf("%v\ncontainerd:\n%s\nkubelet:\n%s", err, c.Log(node+"-containerd", 30), c.Log(node+"-kubelet", 30))
	}
	for _, img := range []string{pause, app} {
		if err := n.ImportImage(ctx, img); err != nil {
			t.Fatal(err)
		}
	}

	e, err := emu.NewNamed("intel", emu.Options{PIDExists: hostPIDExists})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	m, err := emu.Mount(e, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Unmount() })
	before := stableState(e)
	a := startNodeAgent(t, colo, "--runtime", "nri", "--nri-socket", n.NRISock(), "--policy", "static-cat",
		"--resctrl-root", root, "--state-dir", t.TempDir())
	a.until("the NRI plugin synchronized with the node's containerd", func(st api.Status) bool { return st.RuntimeConnected })

	if err := c.StartControllerManager(ctx, []string{"deployment-controller", "replicaset-controller"}, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := c.StartScheduler(ctx, "scheduler", sched, deployedSchedulerConfig(t), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node "+node+" registered", func() (bool, string) {
		_, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})

	deps := c.Client.AppsV1().Deployments("default")
	for _, d := range []*appsv1.Deployment{
		tenantDeployment("db", app, 2, map[string]string{"colo.io/class": "priority", "colo.io/target-ipce": "0.8", "colo.io/profile": "620.omnetpp_s"}),
		tenantDeployment("etl", app, 1, map[string]string{"colo.io/class": "batch", "colo.io/profile": "619.lbm_s"}),
	} {
		if _, err := deps.Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string][]string{}
	for _, d := range []struct {
		name string
		n    int
	}{{"db", 2}, {"etl", 1}} {
		waitLong(t, "deployment "+d.name+" running on the node", func() (bool, string) {
			var err error
			ids[d.name], err = containerIDs(ctx, c, d.name)
			if err != nil {
				return false, err.Error()
			}
			pods, _ := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + d.name})
			var ph []string
			for _, p := range pods.Items {
				ph = append(ph, fmt.Sprintf("%s on %q: %s %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions))
			}
			return len(ids[d.name]) == d.n, strings.Join(ph, "; ") + "\nkubelet:\n" + c.Log(node+"-kubelet", 15)
		})
	}

	// every container of the Deployments: its class read from the pod's annotations, its
	// control and monitoring groups on the emulator mount, holding its threads
	st := a.until("the Deployments' containers managed with their resctrl groups", func(st api.Status) bool {
		for _, id := range append(append([]string{}, ids["db"]...), ids["etl"]...) {
			if c := managed(st, id); c == nil || c.CtrlGroup == "" || c.Monitoring != "container" {
				return false
			}
		}
		return true
	})
	es := e.State()
	for app, class := range map[string]core.Class{"db": core.Priority, "etl": core.Batch} {
		for _, id := range ids[app] {
			ct := managed(st, id)
			if ct.Request.Class != class {
				t.Errorf("%s container %.12s: class %q, want %q from the pod annotation", app, id, ct.Request.Class, class)
			}
			g, ok := es.Group(ct.CtrlGroup)
			if !ok || fmt.Sprintf("%#x", g.Schemata["L3"][ct.Socket]) != ct.Mask || len(g.Tasks) == 0 {
				t.Errorf("%s: control group %q on the emulator: %v %+v (mask %s)", app, ct.CtrlGroup, ok, g, ct.Mask)
			}
			if mg, ok := es.Group(ct.MonGroup); !ok || len(mg.Tasks) == 0 {
				t.Errorf("%s: monitoring group %q: %v %+v", app, ct.MonGroup, ok, mg)
			}
		}
	}

	// the publisher: the agent's status becomes the node's NodeInterference, which the
	// scheduler's cache reads back with the residents' classes and profiles
	ast, err := publish.FetchAgent(ctx, a.url)
	if err != nil {
		t.Fatal(err)
	}
	// the agent does not report profiles: they come by container name (--profile-of)
	doc := publish.FromAgent(ast, lib, node, map[string]string{"db": "620.omnetpp_s", "etl": "619.lbm_s"}, 16, time.Now())
	if err := (publish.Writer{Client: c.Client, Dynamic: dc, Object: true}).Write(ctx, doc); err != nil {
		t.Fatal(err)
	}
	obj, err := dc.Resource(scoring.GVR).Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	cache := scoring.NewCache()
	cache.SetObject(node, spec)
	got, _, err := cache.Get(node)
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]int{}
	for _, r := range got.Residents {
		classes[r.Class+"/"+r.Profile]++
	}
	if want := map[string]int{"priority/620.omnetpp_s": 2, "batch/619.lbm_s": 1}; !reflect.DeepEqual(classes, want) {
		t.Errorf("NodeInterference residents %v, want %v (document %+v)", classes, want, got)
	}
	if len(got.Sockets) == 0 || got.Sockets[0].CLOSIDsLeft >= 15 {
		t.Errorf("NodeInterference sockets %+v: the groups in use are not counted", got.Sockets)
	}

	// scaled to zero: the kubelet stops the containers, the agent removes their groups
	scale, err := deps.GetScale(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 0
	if _, err := deps.UpdateScale(ctx, "db", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.until("the scaled-down containers released", func(st api.Status) bool {
		for _, id := range ids["db"] {
			if managed(st, id) != nil {
				return false
			}
		}
		return true
	})
	inUse := map[string]bool{}
	for _, id := range ids["etl"] {
		inUse[managed(st, id).CtrlGroup] = true
	}
	for _, id := range ids["db"] {
		if g := managed(st, id).CtrlGroup; !inUse[g] {
			if _, ok := e.State().Group(g); ok {
				t.Errorf("group %s of a stopped db container still on the emulator", g)
			}
		}
	}
	a.term()
	if after := stableState(e); !reflect.DeepEqual(before, after) {
		t.Errorf("emulator after the agent's SIGTERM differs from before:\nbefore %+v\nafter  %+v", before, after)
	}
}

// waitLong is eventually with a deadline for a kubelet starting containers on a loaded
// 2-core machine.
func waitLong(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ok, s := cond()
		if ok {
			return
		}
		last = s
	}
	t.Fatalf("%s: not reached in 4 min (last: %s)", what, last)
}
