package kwokrun

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"colo/k8s/experiment"
	"colo/k8s/nodestate"
	"colo/k8s/placement"
	"colo/k8s/publish"
	"colo/k8s/testcluster"
	"colo/k8s/twin"
)

// WatcherAddress in an arm's Config is replaced by the URL of the experiment's
// load-watcher-compatible metrics source.
const WatcherAddress = "WATCHER_ADDRESS"

// TrimaranConfig is the profile of a Trimaran arm: plugin (TargetLoadPacking or
// LoadVariationRiskBalancing) as the only scorer, fed by the twin's measured utilisation
// through the load-watcher API, with its documented arguments.
func TrimaranConfig(schedulerName, plugin string) string {
	var args string
	if plugin == "TargetLoadPacking" {
		args = fmt.Sprintf(`{targetUtilization: 40, defaultRequests: {cpu: "1000m"}, defaultRequestsMultiplier: "1", watcherAddress: %s}`, WatcherAddress)
	} else {
		args = fmt.Sprintf(`{safeVarianceMargin: 1, safeVarianceSensitivity: 1, watcherAddress: %s}`, WatcherAddress)
	}
	return DefaultConfig + fmt.Sprintf(`- schedulerName: %s
  plugins:
    score:
      disabled: [{name: "*"}]
      enabled: [{name: %s, weight: 1}]
  pluginConfig:
  - name: %s
    args: %s
`, schedulerName, plugin, plugin, args)
}

// ColoStockConfig is colo's plugin added to the stock profile (its filter, and its score
// with weight 5 beside the default scorers), as deployed (deploy/scheduler).
func ColoStockConfig(seed uint64, maxAgeSeconds int, profiles string) string {
	return DefaultConfig + fmt.Sprintf(`- schedulerName: colo-stock
  plugins:
    preFilter:
      enabled: [{name: ColoInterference}]
    filter:
      enabled: [{name: ColoInterference}]
    preScore:
      enabled: [{name: ColoInterference}]
    score:
      enabled: [{name: ColoInterference, weight: 5}]
    reserve:
      enabled: [{name: ColoInterference}]
    bind:
      disabled: [{name: DefaultBinder}]
      enabled: [{name: ColoInterference}, {name: DefaultBinder}]
  pluginConfig:
  - name: ColoInterference
    args: {seed: %d, maxAgeSeconds: %d, profiles: %q}
`, seed, maxAgeSeconds, profiles)
}

// ChurnResult is one arm of the twin experiment on kwok.
type ChurnResult struct {
	experiment.Outcome
	// PodsPerSecond is pods bound per second of scheduling latency: one client creates
	// each pod and waits for its binding (or the scheduler's refusal) before the next.
	PodsPerSecond float64 `json:"pods_per_s"`
	Seconds       float64 `json:"seconds"`
	// SchedulerRSSMB is the scheduler's peak resident memory; SchedulerCPUSeconds its CPU
	// time over the run.
	SchedulerRSSMB      float64 `json:"scheduler_rss_mb"`
	SchedulerCPUSeconds float64 `json:"scheduler_cpu_seconds"`
}

// driver is experiment.Scheduler on a real control plane.
type driver struct {
	ctx context.Context
	c   *testcluster.Cluster
	arm Arm
	ns  string

	mu      sync.Mutex
	cond    *sync.Cond
	state   map[string]podSeen
	pending map[string]bool // created, neither bound nor taken yet

	latency time.Duration
	bound   int

	util  sync.Map // node → utilisation in [0, 1]
	nodes []string
}

type podSeen struct {
	node          string
	socket        int
	unschedulable bool
}

func (d *driver) seen(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	s := podSeen{node: p.Spec.NodeName, socket: -1}
	if v, ok := p.Annotations[nodestate.SocketAnnotation]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			s.socket = n
		}
	}
	for _, cd := range p.Status.Conditions {
		if cd.Type == corev1.PodScheduled && cd.Status == corev1.ConditionFalse && cd.Reason == corev1.PodReasonUnschedulable {
			s.unschedulable = true
		}
	}
	d.mu.Lock()
	d.state[p.Name] = s
	d.mu.Unlock()
	d.cond.Broadcast()
}

// Schedule implements experiment.Scheduler: delete the pods done, then create each
// arriving pod and wait until it is bound or refused; pods refused earlier and bound since
// are returned too.
func (d *driver) Schedule(_ int, arriving []experiment.ChurnPod, finished []string) (map[string]experiment.Binding, error) {
	zero := int64(0)
	for _, n := range finished {
		if err := d.c.Client.CoreV1().Pods(d.ns).Delete(d.ctx, n, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			return nil, fmt.Errorf("deleting pod %s: %w", n, err)
		}
	}
	out := map[string]experiment.Binding{}
	for _, p := range arriving {
		start := time.Now()
		if _, err := d.c.Client.CoreV1().Pods(d.ns).Create(d.ctx, TenantPod(p.Pod, d.ns, d.arm.SchedulerName), metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("pod %s: %w", p.Name, err)
		}
		d.mu.Lock()
		d.pending[p.Name] = true
		var s podSeen
		for {
			var ok bool
			s, ok = d.state[p.Name]
			if ok && (s.node != "" || s.unschedulable) {
				break
			}
			if d.ctx.Err() != nil {
				d.mu.Unlock()
				return nil, d.ctx.Err()
			}
			d.cond.Wait()
		}
		d.mu.Unlock()
		if s.node != "" {
			d.latency += time.Since(start)
			d.bound++
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for name := range d.pending {
		if s := d.state[name]; s.node != "" {
			out[name] = experiment.Binding{Node: s.node, Socket: s.socket}
			delete(d.pending, name)
		}
	}
	return out, nil
}

// Observe implements experiment.Observer: keep the twin's utilisation for the metrics
// source.
func (d *driver) Observe(c *twin.Cluster) {
	for _, n := range d.nodes {
		d.util.Store(n, c.Utilisation(n))
	}
}

// watcherMetrics answers GET /watcher in the load-watcher API's format (paypal/
// load-watcher WatcherMetrics: per node a CPU metric, operator AVG, value in percent):
// the twin's measured utilisation of the node's pod cores in the last tick.
func (d *driver) watcherMetrics(w http.ResponseWriter, _ *http.Request) {
	type metric struct {
		Name     string  `json:"name"`
		Type     string  `json:"type"`
		Operator string  `json:"operator"`
		Value    float64 `json:"value"`
	}
	type nodeMetrics struct {
		Metrics []metric `json:"metrics"`
	}
	nm := map[string]nodeMetrics{}
	for _, n := range d.nodes {
		u := 0.0
		if v, ok := d.util.Load(n); ok {
			u = v.(float64)
		}
		nm[n] = nodeMetrics{Metrics: []metric{{Name: "twin_cpu_utilisation", Type: "CPU", Operator: "AVG", Value: 100 * u}}}
	}
	now := time.Now().Unix()
	doc := map[string]any{"timestamp": now, "source": "colo twin",
		"window": map[string]any{"duration": "1m", "start": now - 60, "end": now},
		"data":   map[string]any{"NodeMetricsMap": nm}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
}

// RunChurn plays the churn trace on a fresh control plane with kwok nodes backed by the
// twin (experiment.RunChurn with the real scheduler of arm deciding), and reports the
// twin's outcome with the scheduler's rate, memory and CPU time.
func RunChurn(ctx context.Context, tr experiment.ChurnTrace, lib *placement.Library, arm Arm, logf func(string, ...any)) (ChurnResult, error) {
	c, dc, err := startKwokCluster(ctx)
	if err != nil {
		return ChurnResult{}, err
	}
	defer c.Stop()
	pw := publish.Writer{Client: c.Client, Dynamic: dc, Annotation: true, Object: true}
	now := time.Now()
	var socks []nodestate.Socket
	for s := range twin.Sockets {
		socks = append(socks, nodestate.Socket{ID: s, FreeWays: 11, FreeMBA: 100, CLOSIDsLeft: 15})
	}
	for _, n := range tr.Nodes {
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, FakeNode(n, tr.NodeMilliCPU), metav1.CreateOptions{}); err != nil {
			return ChurnResult{}, fmt.Errorf("node %s: %w", n, err)
		}
		st := nodestate.State{FormatVersion: nodestate.FormatVersion, Node: n, Updated: now, Source: "kwok twin experiment",
			DialsMB: lib.Dials, Sockets: socks}
		if err := pw.Write(ctx, st); err != nil {
			return ChurnResult{}, err
		}
	}
	ns := "colo-exp"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return ChurnResult{}, err
	}
	d := &driver{ctx: ctx, c: c, arm: arm, ns: ns, state: map[string]podSeen{}, pending: map[string]bool{}, nodes: tr.Nodes}
	d.cond = sync.NewCond(&d.mu)
	// wake waiters when the context ends
	stopWake := context.AfterFunc(ctx, func() { d.cond.Broadcast() })
	defer stopWake()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ChurnResult{}, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/watcher", d.watcherMetrics)
	mux.HandleFunc("/watcher/health", func(w http.ResponseWriter, _ *http.Request) {})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	f := informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: d.seen, UpdateFunc: func(_, o any) { d.seen(o) }}); err != nil {
		return ChurnResult{}, err
	}
	stop := make(chan struct{})
	defer close(stop)
	f.Start(stop)
	f.WaitForCacheSync(stop)

	cfg := strings.ReplaceAll(arm.Config, WatcherAddress, "http://"+ln.Addr().String())
	logf("%s: %d kwok nodes published; starting %s", arm.Name, len(tr.Nodes), arm.Binary)
	if err := c.StartScheduler(ctx, "scheduler", arm.Binary, cfg, 90*time.Second); err != nil {
		return ChurnResult{}, err
	}
	t0 := time.Now()
	o, err := experiment.RunChurn(tr, d, lib)
	if err != nil {
		return ChurnResult{}, fmt.Errorf("%s: %w (scheduler log: %s)", arm.Name, err, c.Log("scheduler", 5))
	}
	r := ChurnResult{Outcome: o, Seconds: round(time.Since(t0).Seconds())}
	if d.latency > 0 {
		r.PodsPerSecond = round(float64(d.bound) / d.latency.Seconds())
	}
	if rss, cpu, err := c.Usage("scheduler"); err == nil {
		r.SchedulerRSSMB, r.SchedulerCPUSeconds = round(float64(rss)/(1<<20)), round(cpu.Seconds())
	}
	logf("%s: %d pods placed, %d never, %d ticks in %.1f s", arm.Name, o.PodsPlaced, o.PodsPending, o.Ticks, r.Seconds)
	return r, nil
}
