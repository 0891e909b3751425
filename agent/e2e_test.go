package agent_test

// End to end on this machine: a real dockerd, the resctrl emulator mounted with FUSE,
// the colo binary running `colo agent`, containers started with plain `docker run
// --label colo.io/class=...` from an image built by `colo image build`, and a real
// prometheus scraping /metrics.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"colo/agent"
	"colo/agent/api"
	"colo/internal/emutest"
	"colo/internal/testenv"
	"colo/resctrl/emu"
	"colo/workload/docker"
)

var (
	buildOnce sync.Once
	coloBin   string
	buildErr  error
	imageTag  string
)

// colo builds the colo binary (static, so it also goes into the image) once per test
// binary, and the image `colo image build` makes from it.
func colo(t testing.TB) (bin, image string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err := docker.Probe(ctx)
	cancel()
	testenv.Need(t, "dockerd (scripts/setup.sh installs and starts it)", err)
	emutest.NeedFUSE(t)
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "colo-agent-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		coloBin = filepath.Join(dir, "colo")
		cmd := exec.Command("go", "build", "-o", coloBin, "../cmd/colo")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		imageTag = fmt.Sprintf("colotest-agent-%d:e2e", os.Getpid())
		if out, err := exec.Command(coloBin, "image", "build", "--binary", coloBin, "--tag", imageTag).CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("colo image build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return coloBin, imageTag
}

func TestMain(m *testing.M) {
	code := m.Run()
	if imageTag != "" {
		exec.Command("docker", "rmi", "-f", imageTag).Run()
	}
	if coloBin != "" {
		os.RemoveAll(filepath.Dir(coloBin))
	}
	os.Exit(code)
}

func mountEmulator(t testing.TB) (*emu.Emulator, string) {
	t.Helper()
	return emutest.MountNamed(t, "intel", emu.Options{PIDExists: emutest.ProcExists})
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// testRunLabel marks the containers of this test process; the Docker agents the tests
// start manage only those (--select), not the containers other test packages run on the
// same dockerd at the same time.
var testRunLabel = fmt.Sprintf("colo.test.run=%d", os.Getpid())

// runContainer starts a throttled container from the test image with labels (and
// testRunLabel); it is removed at cleanup.
func runContainer(t testing.TB, image, name string, labels ...string) (id string, pid int) {
	t.Helper()
	args := []string{"run", "-d", "--name", name, "--cpus", "0.05", "--label", testRunLabel}
	for _, l := range labels {
		args = append(args, "--label", l)
	}
	args = append(args, image, "stress", "compute", "--duration", "900s")
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	id = strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", id).Run() })
	out, err = exec.Command("docker", "inspect", "-f", "{{.State.Pid}}", id).Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	return id, pid
}

type agentProc struct {
	t    testing.TB
	cmd  *exec.Cmd
	addr string
	logf string
	done chan error
}

func startAgent(t testing.TB, bin, root, state, policy string) *agentProc {
	t.Helper()
	return startAgentArgs(t, bin, "--runtime", "docker", "--policy", policy, "--resctrl-root", root, "--state-dir", state)
}

// startAgentArgs starts `colo agent ARGS --listen <free port> --no-perf` (--interval 100ms
// unless ARGS give one).
func startAgentArgs(t testing.TB, bin string, args ...string) *agentProc {
	t.Helper()
	p := &agentProc{t: t, addr: freePort(t), logf: filepath.Join(t.TempDir(), "agent.log"), done: make(chan error, 1)}
	args = append([]string{"agent"}, args...)
	if !strings.Contains(strings.Join(args, " "), "--interval") {
		args = append(args, "--interval", "100ms")
	}
	if !strings.Contains(strings.Join(args, " "), "--no-perf") {
		args = append(args, "--no-perf")
	}
	if strings.Contains(strings.Join(args, " "), "--runtime docker") {
		args = append(args, "--select", testRunLabel)
	}
	p.cmd = exec.Command(bin, append(args, "--listen", p.addr)...)
	f, err := os.Create(p.logf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p.cmd.Stderr = f
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("agent stderr:\n%s", p.log())
		}
	})
	return p
}

func (p *agentProc) log() string {
	b, _ := os.ReadFile(p.logf)
	return tail(string(b), 6000)
}

func (p *agentProc) status() (api.Status, error) {
	var st api.Status
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + p.addr + api.Version + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// until waits until the agent's status satisfies ok (the agent publishes one per
// interval; the deadline only turns a hang into a failure).
func (p *agentProc) until(what string, ok func(api.Status) bool) api.Status {
	p.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last api.Status
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			p.t.Fatalf("agent exited (%v) while waiting for %s:\n%s", err, what, p.log())
		default:
		}
		if st, err := p.status(); err == nil {
			last = st
			if ok(st) {
				return st
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Fatalf("timed out waiting for %s; last status %+v", what, last)
	return last
}

func (p *agentProc) term() {
	p.t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			p.t.Fatalf("agent after SIGTERM: %v\n%s", err, p.log())
		}
	case <-time.After(60 * time.Second):
		p.t.Fatalf("agent did not exit after SIGTERM:\n%s", p.log())
	}
}

func (p *agentProc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

func byName(st api.Status, name string) *api.ContainerStatus {
	for i := range st.Containers {
		if st.Containers[i].Name == name {
			return &st.Containers[i]
		}
	}
	return nil
}

// comparable is the emulator's state without what legitimately changes: the generation
// and the tasks of system/default (threads come back to it).
func comparable(e *emu.Emulator) emu.State {
	s := e.State()
	s.Generation = 0
	s.Groups[0].Tasks = nil
	return s
}

func equalState(a, b emu.State) bool { return reflect.DeepEqual(a, b) }

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestAgentDockerEndToEnd(t *testing.T) {
	bin, image := colo(t)
	for _, policy := range []string{"static-cat", "dynamic"} {
		t.Run(policy, func(t *testing.T) {
			e, root := mountEmulator(t)
			before := comparable(e)
			a := startAgent(t, bin, root, t.TempDir(), policy)
			a.until("first interval", func(st api.Status) bool { return st.Ticks > 0 && st.RuntimeConnected })
			pre := fmt.Sprintf("colotest-agent-%d-%s", os.Getpid(), strings.ReplaceAll(policy, "+", ""))
			_, ppid := runContainer(t, image, pre+"-prio", "colo.io/class=priority", "colo.io/target-ipce=0.9")
			bid, bpid := runContainer(t, image, pre+"-batch", "colo.io/class=batch")
			st := a.until("both containers monitored", func(st api.Status) bool {
				p, b := byName(st, pre+"-prio"), byName(st, pre+"-batch")
				ok := p != nil && b != nil && p.Monitoring != "none" && b.Monitoring != "none"
				if policy == "static-cat" {
					ok = ok && p.CtrlGroup != ""
				}
				return ok
			})
			es := e.State()
			for _, c := range []struct {
				name string
				pid  int
			}{{pre + "-prio", ppid}, {pre + "-batch", bpid}} {
				cs := byName(st, c.name)
				g, ok := es.Group(cs.MonGroup)
				if !ok || !g.IsMon || !contains(g.Tasks, c.pid) {
					t.Errorf("%s: monitoring group %q in the emulator: %v, tasks %v (pid %d)", c.name, cs.MonGroup, ok, g.Tasks, c.pid)
				}
			}
			p := byName(st, pre+"-prio")
			switch policy {
			case "static-cat":
				g, ok := es.Group(p.CtrlGroup)
				if !ok || fmt.Sprintf("%#x", g.Schemata["L3"][p.Socket]) != p.Mask || !contains(g.Tasks, ppid) {
					t.Errorf("priority control group %q: %v, L3 %v, tasks %v; the agent says mask %s", p.CtrlGroup, ok, g.Schemata["L3"], g.Tasks, p.Mask)
				}
				def, _ := es.Group("")
				var m uint64
				fmt.Sscanf(p.Mask, "0x%x", &m)
				if uint64(def.Schemata["L3"][p.Socket])&m != 0 {
					t.Errorf("system/default %#x still holds the priority ways %s", def.Schemata["L3"][p.Socket], p.Mask)
				}
			case "dynamic":
				// without a hardware PMU the dynamic scheduler neither probes nor allocates
				if p.CtrlGroup != "" {
					t.Errorf("dynamic without IPCE allocated %s", p.Mask)
				}
			}
			if policy == "static-cat" {
				scrape(t, a.addr, pre)
			}
			// stopping a container removes its groups
			mon := byName(st, pre+"-batch").MonGroup
			ctrl := byName(st, pre+"-batch").CtrlGroup
			if out, err := exec.Command("docker", "rm", "-f", bid).CombinedOutput(); err != nil {
				t.Fatalf("docker rm: %v %s", err, out)
			}
			a.until("batch released", func(st api.Status) bool { return byName(st, pre+"-batch") == nil })
			es = e.State()
			for _, g := range []string{mon, ctrl} {
				if _, ok := es.Group(g); g != "" && ok {
					t.Errorf("group %s of the stopped container still exists", g)
				}
			}
			a.term()
			if after := comparable(e); !reflect.DeepEqual(before, after) {
				t.Errorf("emulator after SIGTERM differs:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

// scrape runs a real prometheus against the agent and waits for a PromQL query to return
// one series per container.
func scrape(t testing.TB, agentAddr, prefix string) {
	t.Helper()
	prom, err := exec.LookPath("prometheus")
	testenv.Need(t, "prometheus (apt-get install prometheus; scripts/setup.sh installs it)", err)
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: colo-agent\n    static_configs:\n      - targets: ['%s']\n", agentAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	cmd := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	q := fmt.Sprintf(`container_llc_occupancy_bytes{name=~"%s-.*"}`, prefix)
	deadline := time.Now().Add(90 * time.Second)
	var names []string
	for time.Now().Before(deadline) {
		names, _ = query(addr, q)
		if len(names) == 2 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(names) != 2 {
		t.Fatalf("PromQL %s returned series %v, want one per container (2)\nprometheus:\n%s", q, names, tail(out.String(), 2000))
	}
	checkDashboard(t, addr, prefix+"-.*", deadline)
}

// checkDashboard runs every PromQL expression of dashboards/colo-agent.json on the real
// prometheus: each must be accepted, and each must return series except those that need
// a hardware PMU (IPC, IPCE).
func checkDashboard(t testing.TB, addr, containers string, deadline time.Time) {
	t.Helper()
	b, err := os.ReadFile("../dashboards/colo-agent.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			n++
			expr := strings.ReplaceAll(tg.Expr, "$container", containers)
			// only with a hardware PMU, or with --profiles: may have no series here
			optional := strings.Contains(expr, "colo_container_ipc") || strings.Contains(expr, "colo_predicted_slowdown")
			for {
				names, status := query(addr, expr)
				if status != "success" {
					t.Errorf("panel %q: prometheus does not accept %s: %s", p.Title, expr, status)
					break
				}
				if len(names) > 0 || optional {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("panel %q: %s returns no series", p.Title, expr)
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	if n < 10 {
		t.Errorf("dashboard has %d queries", n)
	}
}

// query runs an instant PromQL query and returns the series' name labels and the
// response status ("success", or the error).
func query(addr, q string) ([]string, string) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.Unmarshal(b, &r) != nil {
		return nil, string(b)
	}
	if r.Status != "success" {
		return nil, r.Status + ": " + r.Error
	}
	var names []string
	for _, s := range r.Data.Result {
		names = append(names, s.Metric["name"])
	}
	return names, r.Status
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// kill -9 at random moments (seeded; printed), restart: the next start undoes what the
// killed one left, picks the running containers up again, and SIGTERM at the end leaves
// the emulator as it was.
func TestAgentSurvivesKill9(t *testing.T) {
	bin, image := colo(t)
	e, root := mountEmulator(t)
	before := comparable(e)
	state := t.TempDir()
	pre := fmt.Sprintf("colotest-agentkill-%d", os.Getpid())
	_, ppid := runContainer(t, image, pre+"-prio", "colo.io/class=priority")
	_, bpid := runContainer(t, image, pre+"-batch")
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for round := 0; round < 10; round++ {
		a := startAgent(t, bin, root, state, "static-cat")
		switch k := rng.Intn(4); k {
		case 0: // during start-up (reconcile, first list)
			time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
		default: // after k more intervals with the containers managed
			st := a.until("containers managed", func(st api.Status) bool { return len(st.Containers) >= 2 })
			n := st.Ticks + uint64(k)
			a.until(fmt.Sprintf("tick %d", n), func(st api.Status) bool { return st.Ticks >= n })
		}
		a.kill()
	}
	a := startAgent(t, bin, root, state, "static-cat")
	st := a.until("containers picked up again", func(st api.Status) bool {
		p, b := byName(st, pre+"-prio"), byName(st, pre+"-batch")
		return p != nil && b != nil && p.CtrlGroup != "" && p.Monitoring == "container" && b.Monitoring != "none"
	})
	// no orphans: every monitoring group belongs to a running container (this test's
	// containers: the agent selects them by testRunLabel), every control group holds one
	es := e.State()
	out, err := exec.Command("docker", "ps", "-q", "--no-trunc").Output()
	if err != nil {
		t.Fatal(err)
	}
	running := strings.Fields(string(out))
	for _, g := range es.Groups {
		switch {
		case g.Path == "":
		case !strings.Contains(g.Path, agent.GroupPrefix(st.Instance)):
			t.Errorf("group %s is not the running instance's (%s): left by a killed one", g.Path, st.Instance)
		case g.IsMon:
			name := g.Path[strings.LastIndex(g.Path, "/")+1:]
			id := name[strings.LastIndex(name, ".")+1:]
			found := false
			for _, r := range running {
				found = found || strings.HasPrefix(r, id)
			}
			if !found {
				t.Errorf("orphaned monitoring group %s after 10 kills (no running container %s)", g.Path, id)
			}
		default:
			mons := 0
			for _, m := range es.Groups {
				if m.IsMon && m.Ctrl == g.Path {
					mons++
				}
			}
			if mons == 0 && len(g.Tasks) == 0 {
				t.Errorf("orphaned control group %s after 10 kills (no container in it)", g.Path)
			}
		}
	}
	p := byName(st, pre+"-prio")
	if g, _ := es.Group(p.CtrlGroup); !contains(g.Tasks, ppid) {
		t.Errorf("priority pid %d not in %s: %v", ppid, p.CtrlGroup, g.Tasks)
	}
	if g, _ := es.Group(byName(st, pre+"-batch").MonGroup); !contains(g.Tasks, bpid) {
		t.Errorf("batch pid %d not in its monitoring group", bpid)
	}
	a.term()
	if after := comparable(e); !reflect.DeepEqual(before, after) {
		t.Errorf("emulator after kills and SIGTERM differs:\nbefore %+v\nafter  %+v", before, after)
	}
}
