// Package kwokrun runs the placement experiment on a real control plane: a fresh etcd and
// kube-apiserver, kwok faking the trace's nodes, a real kube-scheduler (the stock one, or
// colo's with the ColoInterference plugin as an additional profile), and the trace's pods
// created one after the other. The placements the scheduler makes are the ground truth;
// package experiment scores them and predicts colo's.
package kwokrun

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"colo/k8s/deploy"
	"colo/k8s/experiment"
	"colo/k8s/nodestate"
	"colo/k8s/placement"
	"colo/k8s/publish"
	"colo/k8s/testcluster"
)

// Arm is one scheduler set-up.
type Arm struct {
	Name          string // "default" or "colo"
	Binary        string // a name in testcluster.BinDir() or an absolute path
	SchedulerName string // the profile the pods ask for
	Config        string // KubeSchedulerConfiguration (KUBECONFIG is replaced)
	Precreate     bool   // create every pod before starting the scheduler (throughput runs)
}

// DefaultConfig is the stock scheduler's configuration: the default profile, scoring
// every feasible node (percentageOfNodesToScore 100, as colo's profile).
const DefaultConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection: {kubeconfig: KUBECONFIG, qps: 1000, burst: 2000}
percentageOfNodesToScore: 100
profiles:
- schedulerName: default-scheduler
`

// ColoConfig is colo's scheduler configuration: the default profile unchanged plus the
// profile colo-scheduler, where ColoInterference filters and is the only scorer.
// profiles is the plugin's library ("" embedded SPEC CPU2017, "twin" the twin's).
func ColoConfig(seed uint64, maxAgeSeconds int, profiles string) string {
	return DefaultConfig + fmt.Sprintf(`- schedulerName: colo-scheduler
  plugins:
    preFilter:
      enabled: [{name: ColoInterference}]
    filter:
      enabled: [{name: ColoInterference}]
    preScore:
      enabled: [{name: ColoInterference}]
    score:
      disabled: [{name: "*"}]
      enabled: [{name: ColoInterference, weight: 1}]
    reserve:
      enabled: [{name: ColoInterference}]
    bind:
      disabled: [{name: DefaultBinder}]
      enabled: [{name: ColoInterference}, {name: DefaultBinder}]
  pluginConfig:
  - name: ColoInterference
    args: {seed: %d, maxAgeSeconds: %d, markUnprofiled: true, profiles: %q}
`, seed, maxAgeSeconds, profiles)
}

// Result is one arm's outcome.
type Result struct {
	experiment.Result
	PodsPerSecond float64           `json:"pods_per_second"`
	Seconds       float64           `json:"seconds"`
	Placements    map[string]string `json:"-"`
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRD creates the NodeInterference CRD from the deploy base and waits until the
// API server serves it.
func InstallCRD(ctx context.Context, dc dynamic.Interface, c *testcluster.Cluster) error {
	b, err := deploy.FS.ReadFile(deploy.CRD)
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		return fmt.Errorf("%s: %w", deploy.CRD, err)
	}
	if _, err := dc.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the CRD of %s: %w", deploy.CRD, err)
	}
	gv := nodestate.Group + "/" + nodestate.Version
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := c.Client.Discovery().ServerResourcesForGroupVersion(gv); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s not served 30 s after creating its CRD", gv)
}

// FakeNode is a kwok node with the trace's CPU capacity.
func FakeNode(name string, milliCPU int64) *corev1.Node {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(milliCPU, resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels: map[string]string{"kubernetes.io/hostname": name, "type": "kwok"}},
		Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl},
	}
}

// TenantPod is a trace pod asking for schedulerName, with colo's annotations.
func TenantPod(p experiment.Pod, ns, schedulerName string) *corev1.Pod {
	ann := map[string]string{nodestate.ClassAnnotation: p.Class, nodestate.ProfileAnnotation: p.Profile}
	if p.Target > 0 {
		ann[nodestate.TargetAnnotation] = strconv.FormatFloat(p.Target, 'g', -1, 64)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns, Annotations: ann},
		Spec: corev1.PodSpec{SchedulerName: schedulerName, Containers: []corev1.Container{{
			Name: "tenant", Image: "colo.local/tenant:" + p.Profile,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(p.MilliCPU, resource.DecimalSI),
				corev1.ResourceMemory: resource.MustParse("256Mi")}},
		}}},
	}
}

// startKwokCluster starts a kube-apiserver and etcd, installs colo's CRD and starts
// kwok: what every experiment arm runs on. The caller stops the cluster.
func startKwokCluster(ctx context.Context) (*testcluster.Cluster, dynamic.Interface, error) {
	c, err := testcluster.Start(ctx, 90*time.Second)
	if err != nil {
		return nil, nil, err
	}
	dc, err := dynamic.NewForConfig(c.Config)
	if err == nil {
		err = InstallCRD(ctx, dc, c)
	}
	if err == nil {
		err = c.StartKwok()
	}
	if err != nil {
		c.Stop()
		return nil, nil, err
	}
	return c, dc, nil
}

// Run runs one arm on a fresh cluster and scores its placements.
func Run(ctx context.Context, t experiment.Trace, lib *placement.Library, arm Arm, logf func(string, ...any)) (Result, error) {
	c, dc, err := startKwokCluster(ctx)
	if err != nil {
		return Result{}, err
	}
	defer c.Stop()
	w := publish.Writer{Client: c.Client, Dynamic: dc, Annotation: true, Object: true}
	now := time.Now()
	for _, n := range t.Nodes {
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, FakeNode(n, t.NodeMilliCPU), metav1.CreateOptions{}); err != nil {
			return Result{}, fmt.Errorf("node %s: %w", n, err)
		}
		st := nodestate.State{FormatVersion: nodestate.FormatVersion, Node: n, Updated: now, Source: "kwok experiment",
			DialsMB: lib.Dials, Sockets: []nodestate.Socket{{ID: 0, FreeWays: 11, FreeMBA: 100, CLOSIDsLeft: 15}}}
		if err := w.Write(ctx, st); err != nil {
			return Result{}, err
		}
	}
	ns := "colo-exp"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return Result{}, err
	}
	// Precreate: all pods first, then the scheduler; pods/s then measures the scheduler
	// alone, but the queue's order among pods listed at start-up is not the trace's (equal
	// priorities and time stamps), so the placements are not comparable. Otherwise the
	// scheduler runs first and one client creates the pods in trace order.
	create := func() error {
		for _, p := range t.Pods {
			if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, TenantPod(p, ns, arm.SchedulerName), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("pod %s: %w", p.Name, err)
			}
		}
		return nil
	}
	if arm.Precreate {
		if err := create(); err != nil {
			return Result{}, err
		}
	}
	logf("%s: %d kwok nodes published; starting %s", arm.Name, len(t.Nodes), arm.Binary)
	start := time.Now()
	if err := c.StartScheduler(ctx, "scheduler", arm.Binary, arm.Config, 90*time.Second); err != nil {
		return Result{}, err
	}
	if !arm.Precreate {
		start = time.Now()
		if err := create(); err != nil {
			return Result{}, err
		}
	}
	// Wait until every pod is bound, or no pod was bound for 20 s (the rest are pending).
	where := map[string]string{}
	last, lastN := time.Now(), -1
	var end time.Time
	for {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			n := 0
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" {
					where[p.Name] = p.Spec.NodeName
					n++
				}
			}
			if n != lastN {
				last, lastN, end = time.Now(), n, time.Now()
			}
			if n == len(t.Pods) {
				break
			}
		}
		if time.Since(last) > 20*time.Second {
			logf("%s: %d of %d pods bound, none more for 20 s", arm.Name, lastN, len(t.Pods))
			break
		}
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		time.Sleep(100 * time.Millisecond)
	}
	// From the first pod's creation (Precreate: the scheduler's start) to the last binding.
	secs := end.Sub(start).Seconds()
	r := Result{Result: experiment.Evaluate(t, lib, where), Seconds: round(secs), Placements: where}
	if secs > 0 {
		r.PodsPerSecond = round(float64(len(where)) / secs)
	}
	logf("%s: %d pods bound in %.2f s", arm.Name, len(where), secs)
	return r, nil
}

func round(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// Diff counts the pods placed differently in a and b (a pod placed in one only counts).
func Diff(a, b map[string]string) (n int, examples []string) {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	ks := slices.Sorted(maps.Keys(keys))
	for _, k := range ks {
		if a[k] != b[k] {
			n++
			if len(examples) < 3 {
				examples = append(examples, fmt.Sprintf("%s: %q vs %q", k, a[k], b[k]))
			}
		}
	}
	return n, examples
}
