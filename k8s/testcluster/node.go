package testcluster

// A real node for the control plane: containerd (CRI, NRI enabled) with runc, and a
// kubelet registered to the API server, everything under the cluster's temporary directory
// and one cgroup subtree of its own; Stop undoes all of it (processes, mounts, cgroups and
// the kernel settings the kubelet changes).

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"colo/internal/containerdtest"
)

// NodeOptions configure StartNode.
type NodeOptions struct {
	// ContainerdBin holds containerd, containerd-shim-runc-v2, runc, ctr and crictl
	// (scripts/build-containerd.sh prints it).
	ContainerdBin string
	// SandboxImage is the pod sandbox ("pause") image; it must be imported (ImportImage)
	// before a pod starts: no registry is reachable.
	SandboxImage string
}

// Node is a kubelet + containerd node.
type Node struct {
	Name string
	Dir  string // containerd's sockets, roots and logs
	opt  NodeOptions
	c    *Cluster
	// cgroup is the subtree (in every cgroup v1 hierarchy, or the v2 one) that the kubelet
	// uses as its cgroupRoot.
	cgroup  string
	sysctls map[string]string
	stopped bool
}

// Sock is containerd's CRI and API socket.
func (n *Node) Sock() string { return containerdtest.Sock(n.Dir) }

// NRISock is the socket NRI plugins (colo agent --runtime nri) connect to.
func (n *Node) NRISock() string { return containerdtest.NRISock(n.Dir) }

// kernelTunables are the settings the kubelet writes at start (protectKernelDefaults false);
// Stop writes back what they were.
var kernelTunables = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

func cgroupHierarchies() []string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"} // unified (v2)
	}
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	var out []string
	for _, e := range ents {
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// StartNode starts containerd and a kubelet registering node name with the cluster, and
// waits until containerd answers CRI and the kubelet's health endpoint answers (the Node
// object appears shortly after). The node is stopped by the cluster's Stop.
func (c *Cluster) StartNode(ctx context.Context, name string, opt NodeOptions, timeout time.Duration) (*Node, error) {
	if m := Missing("kubelet"); len(m) > 0 {
		return nil, fmt.Errorf("%v missing in %s: run scripts/k8s-build.sh", m, BinDir())
	}
	n := &Node{Name: name, Dir: filepath.Join(c.Dir, name), opt: opt, c: c, cgroup: "colo-" + filepath.Base(c.Dir) + "-" + name, sysctls: map[string]string{}}
	c.nodes = append(c.nodes, n)
	for _, d := range []string{"cni-conf", "cni-bin", "nri-plugins", "nri-conf", "kubelet", "pod-logs"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	cfg := containerdtest.Config(n.Dir, opt.ContainerdBin, opt.SandboxImage)
	if err := os.WriteFile(filepath.Join(n.Dir, "containerd.toml"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	env := append(os.Environ(), "PATH="+opt.ContainerdBin+":"+os.Getenv("PATH"))
	if err := c.startEnv(name+"-containerd", filepath.Join(opt.ContainerdBin, "containerd"), env, "--config", filepath.Join(n.Dir, "containerd.toml")); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		if _, err := n.Crictl(ctx, "version"); err == nil {
			break
		}
		if c.exited(name+"-containerd") || time.Now().After(deadline) {
			return nil, fmt.Errorf("containerd did not answer CRI:\n%s", c.Log(name+"-containerd", 20))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The kubelet's own cgroup subtree; the cpuset hierarchy needs its CPUs and memory
	// nodes copied from the parent before anything can join it.
	for _, h := range cgroupHierarchies() {
		d := filepath.Join(h, n.cgroup)
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			return nil, fmt.Errorf("cgroup %s: %w", d, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
					return nil, fmt.Errorf("cgroup %s/%s: %w", d, f, err)
				}
			}
		}
	}
	for _, k := range kernelTunables {
		if b, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			n.sysctls[k] = strings.TrimSpace(string(b))
		}
	}
	ports := make([]int, 2)
	for i := range ports {
		var err error
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	// cgroupfs and cgroup v1 (failCgroupV1: false): what this host has; the kubelet API
	// answers on loopback only; eviction and image GC thresholds low enough never to
	// remove the imported images or evict the test's pods on a shared disk.
	kcfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%[1]s
containerRuntimeEndpoint: unix://%[2]s
address: 127.0.0.1
port: %[3]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[4]d
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
failSwapOn: false
oomScoreAdj: 0
podLogsDir: %[5]s/pod-logs
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "1Mi", "nodefs.available": "1%%", "imagefs.available": "1%%", "nodefs.inodesFree": "1%%"}
resolvConf: ""
maxPods: 20
`, n.cgroup, n.Sock(), ports[0], ports[1], n.Dir)
	if err := os.WriteFile(filepath.Join(n.Dir, "kubelet.yaml"), []byte(kcfg), 0o644); err != nil {
		return nil, err
	}
	if err := c.start(name+"-kubelet", "kubelet", "--config", filepath.Join(n.Dir, "kubelet.yaml"),
		"--kubeconfig", c.Kubeconfig, "--root-dir", filepath.Join(n.Dir, "kubelet"), "--cert-dir", filepath.Join(n.Dir, "kubelet", "pki"),
		"--hostname-override", name, "--v", "2"); err != nil {
		return nil, err
	}
	if err := c.waitHTTP(ctx, name+"-kubelet", fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[1]), "", time.Until(deadline)); err != nil {
		return nil, err
	}
	return n, nil
}

// Crictl runs crictl against the node's containerd.
func (n *Node) Crictl(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return containerdtest.Crictl(ctx, n.opt.ContainerdBin, n.Sock(), args...)
}

// ImportImage moves a Docker image into containerd's k8s.io namespace (docker save | ctr
// images import): the node pulls nothing.
func (n *Node) ImportImage(ctx context.Context, ref string) error {
	return containerdtest.ImportImage(ctx, n.opt.ContainerdBin, n.Sock(), n.Dir, ref)
}

// stop tears the node down: the kubelet first (so it restarts nothing), then every pod
// sandbox and container through CRI, containerd, the mounts left under the node's
// directory, its cgroup subtree, and the kernel settings the kubelet changed.
func (n *Node) stop() {
	if n.stopped {
		return
	}
	n.stopped = true
	n.c.StopComponent(n.Name + "-kubelet")
	if !n.c.exited(n.Name + "-containerd") {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_, _ = n.Crictl(ctx, "rmp", "-fa")
		cancel()
	}
	n.c.StopComponent(n.Name + "-containerd")
	unmountUnder(n.Dir)
	for _, h := range cgroupHierarchies() {
		removeCgroupTree(filepath.Join(h, n.cgroup))
	}
	for k, v := range n.sysctls {
		_ = os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644)
	}
}

// unmountUnder detaches every mount point below dir, deepest first.
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fs := strings.Fields(s.Text())
		if len(fs) > 4 && (fs[4] == dir || strings.HasPrefix(fs[4], dir+"/")) {
			points = append(points, fs[4])
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// removeCgroupTree removes a cgroup directory and its children, leaves first (a cgroup
// directory is removed with rmdir, its files go with it). Processes still inside (none,
// once containerd stopped its shims) keep a cgroup alive: it is retried briefly.
func removeCgroupTree(root string) {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		for try := 0; try < 50; try++ {
			if err := syscall.Rmdir(dirs[i]); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// StartControllerManager runs kube-controller-manager with the given controllers (for
// example deployment-controller, replicaset-controller) and waits until it is healthy.
func (c *Cluster) StartControllerManager(ctx context.Context, controllers []string, timeout time.Duration) error {
	if m := Missing("kube-controller-manager"); len(m) > 0 {
		return fmt.Errorf("%v missing in %s: run K8S_BUILD_KCM=1 scripts/k8s-build.sh", m, BinDir())
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	if err := c.start("kube-controller-manager", "kube-controller-manager", "--kubeconfig", c.Kubeconfig,
		"--controllers", strings.Join(controllers, ","), "--leader-elect=false", "--use-service-account-credentials=false",
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port), "--v", "2"); err != nil {
		return err
	}
	return c.waitHTTP(ctx, "kube-controller-manager", fmt.Sprintf("https://127.0.0.1:%d/healthz", port), "", timeout)
}
