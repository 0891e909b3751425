// Package testcluster starts a throw-away Kubernetes control plane from the binaries that
// scripts/k8s-build.sh caches: etcd (no fsync) and kube-apiserver on 127.0.0.1 with a
// static admin token, and on demand kwok (fake nodes) and a kube-scheduler. Everything
// lives in one temporary directory that Stop removes; each process logs to a file there.
package testcluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// BinDir returns the directory of the cached binaries: $COLO_K8S_BIN, or
// $HOME/.cache/colo-k8s/<version>/bin as scripts/k8s-build.sh --print-bin says.
func BinDir() string {
	if d := os.Getenv("COLO_K8S_BIN"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "colo-k8s", "1.36.3", "bin")
}

// Missing lists the binaries of names that BinDir lacks.
func Missing(names ...string) []string {
	var out []string
	for _, n := range names {
		if st, err := os.Stat(filepath.Join(BinDir(), n)); err != nil || st.Mode()&0o111 == 0 {
			out = append(out, n)
		}
	}
	return out
}

// Cluster is a running control plane.
type Cluster struct {
	Dir        string
	Kubeconfig string
	Config     *rest.Config
	Client     kubernetes.Interface
	procs      []*exec.Cmd
	names      []string
	stopped    []bool
	nodes      []*Node
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *Cluster) start(name string, bin string, args ...string) error {
	return c.startEnv(name, bin, nil, args...)
}

// startEnv starts a component with the environment env (nil: this process's).
func (c *Cluster) startEnv(name string, bin string, env []string, args ...string) error {
	if !filepath.IsAbs(bin) {
		bin = filepath.Join(BinDir(), bin)
	}
	logf, err := os.OpenFile(filepath.Join(c.Dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	c.procs, c.names, c.stopped = append(c.procs, cmd), append(c.names, name), append(c.stopped, false)
	return nil
}

// Log returns the tail of a component's log (for error messages).
func (c *Cluster) Log(name string, lines int) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, name+".log"))
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// Start runs etcd and kube-apiserver and waits (up to timeout) until the API server is
// ready.
func Start(ctx context.Context, timeout time.Duration) (*Cluster, error) {
	if m := Missing("etcd", "kube-apiserver"); len(m) > 0 {
		return nil, fmt.Errorf("%v missing in %s: run scripts/k8s-build.sh", m, BinDir())
	}
	dir, err := os.MkdirTemp("", "colo-k8s-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	client, peer, secure := fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1]), ports[2]
	if err := c.start("etcd", "etcd", "--data-dir", filepath.Join(dir, "etcd"), "--unsafe-no-fsync",
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "default="+peer,
		"--log-level", "warn"); err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	keyFile := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return nil, err
	}
	tb := make([]byte, 16)
	rand.Read(tb)
	token := hex.EncodeToString(tb)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	if err := c.start("kube-apiserver", "kube-apiserver", "--etcd-servers", client,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", fmt.Sprint(secure),
		"--cert-dir", filepath.Join(dir, "certs"), "--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", keyFile,
		"--service-account-signing-key-file", keyFile, "--service-cluster-ip-range", "10.96.0.0/16",
		"--authorization-mode", "RBAC", "--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition",
		"--enable-priority-and-fairness=false", "--allow-privileged=true", "--max-requests-inflight", "2000", "--max-mutating-requests-inflight", "1000"); err != nil {
		return nil, err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", secure)
	c.Config = &rest.Config{Host: server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 1000, Burst: 2000}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %q}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
`, server, token)
	if err := os.WriteFile(c.Kubeconfig, []byte(kc), 0o600); err != nil {
		return nil, err
	}
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return nil, err
	}
	if err := c.waitHTTP(ctx, "kube-apiserver", server+"/readyz", token, timeout); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// waitHTTP polls url until it answers 200 (the component has no event to wait on before
// it listens), failing early if the component's process exits.
func (c *Cluster) waitHTTP(ctx context.Context, name, url, token string, timeout time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if c.exited(name) {
			return fmt.Errorf("%s exited:\n%s", name, c.Log(name, 20))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready at %s within %s (%v):\n%s", name, url, timeout, last, c.Log(name, 20))
}

func (c *Cluster) exited(name string) bool {
	for i := len(c.names) - 1; i >= 0; i-- {
		if c.names[i] == name && !c.stopped[i] {
			p := c.procs[i]
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(p.Process.Pid, &ws, syscall.WNOHANG, nil)
			return pid == p.Process.Pid || errors.Is(err, syscall.ECHILD)
		}
	}
	return false
}

// StartKwok runs kwok managing the nodes annotated kwok.x-k8s.io/node=fake, with the stage
// file scripts/k8s-build.sh extracts from kwok's module (node-initialize, pod-ready, …).
func (c *Cluster) StartKwok() error {
	stages := filepath.Join(BinDir(), "kwok-stages.yaml")
	if _, err := os.Stat(stages); err != nil {
		return fmt.Errorf("kwok stages %s missing: run scripts/k8s-build.sh", stages)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	return c.start("kwok", "kwok", "--kubeconfig", c.Kubeconfig, "--config", stages,
		"--manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake",
		"--server-address", fmt.Sprintf("127.0.0.1:%d", port), "--cidr", "10.0.0.0/16")
}

// StartScheduler runs a kube-scheduler binary (a name in BinDir or an absolute path) with
// the given KubeSchedulerConfiguration (its clientConnection.kubeconfig is filled in) and
// waits until its /healthz answers.
func (c *Cluster) StartScheduler(ctx context.Context, name, bin, config string, timeout time.Duration) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	cfg := filepath.Join(c.Dir, name+".yaml")
	config = strings.ReplaceAll(config, "KUBECONFIG", c.Kubeconfig)
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return err
	}
	if err := c.start(name, bin, "--config", cfg, "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--authentication-skip-lookup", "--v", "2"); err != nil {
		return err
	}
	return c.waitHTTP(ctx, name, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), "", timeout)
}

// Restart stops a component and starts it again with the same arguments (for the
// API server: clients see it unreachable for a moment), then waits for the API server to
// be ready again.
func (c *Cluster) Restart(ctx context.Context, name string) error {
	for i := len(c.names) - 1; i >= 0; i-- {
		if c.names[i] == name {
			p := c.procs[i]
			if !c.stopped[i] {
				stop(p)
				c.stopped[i] = true
			}
			if err := c.start(name, p.Path, p.Args[1:]...); err != nil {
				return err
			}
			return c.waitHTTP(ctx, name, c.Config.Host+"/readyz", c.Config.BearerToken, 60*time.Second)
		}
	}
	return fmt.Errorf("no component %s", name)
}

// StopComponent stops one named component (the last one started under that name).
func (c *Cluster) StopComponent(name string) {
	for i := len(c.names) - 1; i >= 0; i-- {
		if c.names[i] == name && !c.stopped[i] {
			stop(c.procs[i])
			c.stopped[i] = true
			return
		}
	}
}

func stop(p *exec.Cmd) {
	if p.Process == nil {
		return
	}
	_ = syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _, _ = p.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Stop stops every component (last started first) and removes the directory, unless
// COLO_K8S_KEEP is set (then it says where the logs are).
func (c *Cluster) Stop() {
	for i := len(c.nodes) - 1; i >= 0; i-- {
		c.nodes[i].stop()
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		if !c.stopped[i] {
			stop(c.procs[i])
			c.stopped[i] = true
		}
	}
	if os.Getenv("COLO_K8S_KEEP") != "" {
		fmt.Fprintf(os.Stderr, "testcluster: logs kept in %s\n", c.Dir)
		return
	}
	os.RemoveAll(c.Dir)
}

// Usage returns a running component's peak resident memory (VmHWM, bytes) and its CPU
// time so far (user + system), from /proc.
func (c *Cluster) Usage(name string) (peakRSS int64, cpu time.Duration, err error) {
	for i := len(c.names) - 1; i >= 0; i-- {
		if c.names[i] != name || c.stopped[i] || c.procs[i].Process == nil {
			continue
		}
		pid := c.procs[i].Process.Pid
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return 0, 0, err
		}
		for _, l := range strings.Split(string(st), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				peakRSS = kb << 10
			}
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return peakRSS, 0, err
		}
		// fields after the command's closing parenthesis: state is field 3, utime 14, stime 15
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 12 {
			ut, _ := strconv.ParseInt(f[11], 10, 64)
			stt, _ := strconv.ParseInt(f[12], 10, 64)
			cpu = time.Duration(ut+stt) * time.Second / 100 // USER_HZ
		}
		return peakRSS, cpu, nil
	}
	return 0, 0, fmt.Errorf("no running component %s", name)
}
