// Package twin backs every node of the Kubernetes experiment with colo's simulated machine
// (colo/sim): its own LLC occupancy, way sharing, memory-bus and MBA model. A pod bound to
// a node runs there as a simulated workload on one core of one socket; the twin measures,
// tick by tick, each pod's throughput relative to the same application alone on an idle
// node. That measurement is the experiment's outcome; it is not the Bubble-Up predictor
// that colo's scheduler plugin optimises (package placement), which only sees the
// applications' Bubble-Up profiles — measured on the same simulated machine by
// Library (predict/simprof), as an operator would profile on the real one.
//
// The apps are the 55 PBBCache per-way profiles embedded in colo (data/pbbcache-skylake,
// measured on an 11-way Skylake-SP LLC) and three phased apps alternating a memory-bound
// and a compute-bound profile every PhaseLength. The node is that Skylake-SP (skx-6138)
// with two sockets, of which PodCoresPerSocket cores per socket run pods.
package twin

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sync"
	"time"

	"colo/machine"
	"colo/profile"
	"colo/sim"
)

// Sockets and PodCoresPerSocket size a node: NodeMilliCPU = Sockets·PodCoresPerSocket·1000.
const (
	Sockets           = 2
	PodCoresPerSocket = 8
	NodeMilliCPU      = Sockets * PodCoresPerSocket * 1000
	// Tick is the twin's step of virtual time; PhaseLength the phase of a phased app.
	Tick        = time.Second
	PhaseLength = 10 * time.Second
	// Noise is the relative standard deviation of the simulated counters.
	Noise = 0.01
)

// NodeProfile is the twin's machine: skx-6138 (Xeon Gold 6138, 20 cores, 11-way 27.5 MB
// LLC, the machine the PBBCache profiles were measured on) with two sockets.
func NodeProfile() (*machine.Profile, error) {
	p, err := machine.Get("skx-6138")
	if err != nil {
		return nil, err
	}
	q := *p
	q.Name, q.Sockets = "skx-6138-2s", Sockets
	q.Description = "skx-6138 with two sockets (colo's Kubernetes twin)"
	return &q, q.Validate()
}

// phased are the phased apps: a memory-bound and a compute-bound PBBCache profile,
// alternating every PhaseLength.
var phased = [][2]string{{"mcf06", "povray06"}, {"lbm06", "gamess06"}, {"omnetpp06", "hmmer06"}}

// App is one application the twin runs.
type App struct {
	Name     string
	Workload sim.Workload
	// Solo is the app's instructions per second alone on an idle node, per phase index
	// (steady state, after the first tick).
	Solo []float64
}

var (
	appsOnce sync.Once
	apps     map[string]*App
	appNames []string
	appsErr  error
)

// Apps returns the twin's applications by name (sorted names), each with its solo rate.
func Apps() (map[string]*App, []string, error) {
	appsOnce.Do(func() { apps, appNames, appsErr = loadApps() })
	return apps, appNames, appsErr
}

func loadApps() (map[string]*App, []string, error) {
	set, err := profile.Default()
	if err != nil {
		return nil, nil, err
	}
	p, err := NodeProfile()
	if err != nil {
		return nil, nil, err
	}
	out := map[string]*App{}
	for _, n := range set.Names() {
		t, _ := set.Get(n)
		out[n] = &App{Name: n, Workload: sim.Single(sim.FromTable(t), 1)}
	}
	for _, ph := range phased {
		a, b := out[ph[0]], out[ph[1]]
		if a == nil || b == nil {
			return nil, nil, fmt.Errorf("phased app %v: profile missing from %s", ph, "PBBCache")
		}
		name := "phased-" + ph[0] + "-" + ph[1]
		out[name] = &App{Name: name, Workload: sim.Workload{Name: name, Loop: true, Threads: 1, Phases: []sim.Phase{
			{Model: a.Workload.Phases[0].Model, Duration: PhaseLength}, {Model: b.Workload.Phases[0].Model, Duration: PhaseLength}}}}
	}
	names := make([]string, 0, len(out))
	for n, a := range out {
		names = append(names, n)
		if a.Solo, err = soloRates(p, a.Workload); err != nil {
			return nil, nil, err
		}
	}
	slices.Sort(names)
	return out, names, nil
}

// soloRates runs w alone on core 0 of an idle noiseless node for two loops of its phases
// (at least 10 ticks) and returns its mean instructions per second per phase, skipping
// the first tick (cold cache).
func soloRates(p *machine.Profile, w sim.Workload) ([]float64, error) {
	m, err := sim.New(p, sim.Options{})
	if err != nil {
		return nil, err
	}
	if _, err := m.AddWorkload(w, []int{0}); err != nil {
		return nil, err
	}
	n := max(10, int(2*time.Duration(len(w.Phases))*PhaseLength/Tick))
	sum := make([]float64, len(w.Phases))
	cnt := make([]float64, len(w.Phases))
	for i := range n {
		c := m.Step(Tick)[0]
		if i > 0 {
			sum[c.Phase] += float64(c.Instructions)
			cnt[c.Phase]++
		}
	}
	for k := range sum {
		if cnt[k] == 0 || sum[k] == 0 {
			return nil, fmt.Errorf("%s: phase %d retired nothing alone", w.Name, k)
		}
		sum[k] /= cnt[k] * Tick.Seconds()
	}
	return sum, nil
}

// Pod is a pod the twin runs.
type Pod struct {
	Name   string
	App    string
	Class  string
	Target float64 // priority pods: normalised performance to keep every tick
	// Work is the pod's length in seconds alone on an idle node.
	Work float64
}

// Running is a pod bound to a node, with what the twin measured so far.
type Running struct {
	Pod
	Node   string
	Socket int
	Start  int // tick of binding
	// Done is the work done, in solo seconds; Elapsed the virtual seconds lived.
	Done, Elapsed float64
	// MinPerf is the lowest per-tick normalised performance after the first tick (1 if
	// none yet); Ticks counts the ticks lived.
	MinPerf float64
	Ticks   int
	// PerfSum sums the per-tick normalised performance (mean = PerfSum/Ticks).
	PerfSum float64

	id   sim.ID
	core int
	app  *App
}

// Slowdown is the measured slowdown over the pod's life so far: virtual time lived per
// second of solo work.
func (r *Running) Slowdown() float64 {
	if r.Done <= 0 {
		return math.Inf(1)
	}
	return r.Elapsed / r.Done
}

type node struct {
	name string
	m    *sim.Machine
	core []*Running // pod per pod-core (Sockets·PodCoresPerSocket), nil: free
	busy float64    // cycles of the last tick / capacity: measured CPU utilisation
}

// Cluster is the set of simulated nodes.
type Cluster struct {
	nodes  []*node
	byName map[string]*node
	apps   map[string]*App
	pods   map[string]*Running
	prof   *machine.Profile
	tick   int
}

// NewCluster builds one simulated machine per node name; the noise of node i is seeded
// from seed and the node's name.
func NewCluster(names []string, seed uint64) (*Cluster, error) {
	p, err := NodeProfile()
	if err != nil {
		return nil, err
	}
	as, _, err := Apps()
	if err != nil {
		return nil, err
	}
	c := &Cluster{byName: map[string]*node{}, apps: as, pods: map[string]*Running{}, prof: p}
	for _, n := range names {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s", seed, n)
		m, err := sim.New(p, sim.Options{Seed: h.Sum64(), Noise: Noise})
		if err != nil {
			return nil, err
		}
		nd := &node{name: n, m: m, core: make([]*Running, Sockets*PodCoresPerSocket)}
		c.nodes = append(c.nodes, nd)
		c.byName[n] = nd
	}
	return c, nil
}

// FreeCores returns the free pod cores of each socket of a node.
func (c *Cluster) FreeCores(nodeName string) [Sockets]int {
	var f [Sockets]int
	if nd := c.byName[nodeName]; nd != nil {
		for i, r := range nd.core {
			if r == nil {
				f[i/PodCoresPerSocket]++
			}
		}
	}
	return f
}

// Place starts pod p on a free core of the given socket of the node; socket < 0 picks
// the socket with the most free pod cores (the lower id on a tie), which is where an
// unpinned container's thread ends up under a balancing kernel.
func (c *Cluster) Place(p Pod, nodeName string, socket int) (*Running, error) {
	nd := c.byName[nodeName]
	if nd == nil {
		return nil, fmt.Errorf("twin: no node %s", nodeName)
	}
	app := c.apps[p.App]
	if app == nil {
		return nil, fmt.Errorf("twin: pod %s: unknown app %q", p.Name, p.App)
	}
	if _, dup := c.pods[p.Name]; dup {
		return nil, fmt.Errorf("twin: pod %s placed twice", p.Name)
	}
	free := c.FreeCores(nodeName)
	if socket < 0 {
		socket = 0
		for s := range free {
			if free[s] > free[socket] {
				socket = s
			}
		}
	}
	if socket >= Sockets || free[socket] == 0 {
		return nil, fmt.Errorf("twin: pod %s: node %s socket %d has no free pod core (free %v)", p.Name, nodeName, socket, free)
	}
	k := socket * PodCoresPerSocket
	for nd.core[k] != nil {
		k++
	}
	core := socket*c.prof.CoresPerSocket + k%PodCoresPerSocket
	id, err := nd.m.AddWorkload(app.Workload, []int{core})
	if err != nil {
		return nil, fmt.Errorf("twin: pod %s: %w", p.Name, err)
	}
	r := &Running{Pod: p, Node: nodeName, Socket: socket, Start: c.tick, MinPerf: 1, id: id, core: k, app: app}
	nd.core[k] = r
	c.pods[p.Name] = r
	return r, nil
}

// Pods returns the running pods of a node, socket by socket, core by core.
func (c *Cluster) Pods(nodeName string) []*Running {
	var out []*Running
	if nd := c.byName[nodeName]; nd != nil {
		for _, r := range nd.core {
			if r != nil {
				out = append(out, r)
			}
		}
	}
	return out
}

// Utilisation is a node's measured CPU utilisation over the last tick, in [0, 1]: busy
// pod cores / the node's pod cores (its allocatable CPU, what a metrics agent reports
// against the node's capacity).
func (c *Cluster) Utilisation(nodeName string) float64 {
	if nd := c.byName[nodeName]; nd != nil {
		return nd.busy
	}
	return 0
}

// Step advances every node by one Tick and returns the pods that finished their work in
// it (removed from their nodes), in node order. A pod's normalised performance in a tick
// is its instructions per second divided by its app's solo rate in the same phase; its
// work advances by that many solo seconds per second.
func (c *Cluster) Step() []*Running {
	var done []*Running
	dt := Tick.Seconds()
	for _, nd := range c.nodes {
		byID := map[sim.ID]*Running{}
		busy := 0
		for _, r := range nd.core {
			if r != nil {
				byID[r.id] = r
				busy++
			}
		}
		nd.busy = float64(busy) / float64(len(nd.core))
		if busy == 0 {
			continue
		}
		first := len(done)
		for _, ct := range nd.m.Step(Tick) {
			r := byID[ct.ID]
			if r == nil {
				continue
			}
			perf := float64(ct.Instructions) / dt / r.app.Solo[ct.Phase]
			if r.Ticks > 0 {
				r.MinPerf = math.Min(r.MinPerf, perf)
			}
			r.Ticks++
			r.PerfSum += perf
			if left := r.Work - r.Done; perf*dt >= left && perf > 0 {
				r.Elapsed += left / perf
				r.Done = r.Work
				done = append(done, r)
			} else {
				r.Elapsed += dt
				r.Done += perf * dt
			}
		}
		for _, r := range done[first:] {
			if nd.core[r.core] == r {
				nd.core[r.core] = nil
				_ = nd.m.RemoveWorkload(r.id) // the id was just stepped: it exists
				delete(c.pods, r.Name)
			}
		}
	}
	c.tick++
	return done
}

// Now is the number of Steps so far.
func (c *Cluster) Now() int { return c.tick }

// Running returns the number of running pods.
func (c *Cluster) Running() int { return len(c.pods) }
