package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"colo/agent/api"
	"colo/stress/loadgen"
	"colo/tenantprofile"
)

// runHostContainer starts a container from the test image on the host network (so its
// metrics port is the host's) with labels; removed at cleanup.
func runHostContainer(t *testing.T, image, name string, labels []string, cmd ...string) string {
	t.Helper()
	args := []string{"run", "-d", "--name", name, "--network", "host", "--cpus", "0.5", "--label", testRunLabel}
	for _, l := range labels {
		args = append(args, "--label", l)
	}
	args = append(append(args, image), cmd...)
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", id).Run() })
	return id
}

// procUsage is a process's CPU seconds (user + system) and resident and peak memory (MB).
func procUsage(pid int) (cpu, rssMB, peakMB float64) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		var u, s float64
		fmt.Sscan(f[11], &u)
		fmt.Sscan(f[12], &s)
		cpu = (u + s) / 100 // USER_HZ
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			var kb float64
			if strings.HasPrefix(l, "VmRSS:") {
				fmt.Sscan(strings.TrimPrefix(l, "VmRSS:"), &kb)
				rssMB = kb / 1024
			}
			if strings.HasPrefix(l, "VmHWM:") {
				fmt.Sscan(strings.TrimPrefix(l, "VmHWM:"), &kb)
				peakMB = kb / 1024
			}
		}
	}
	return
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// The agent profiles, online and without anyone running colo predict, a colo stress serve
// container (its own p99 from its histogram, under a constant load) and a stress random
// batch container (its work counter): both get a profile, a predicted slowdown in
// /metrics, and the serve container's measured p99 slowdown next to the batch one is
// compared with the prediction (logged with the machine's load).
func TestAgentProfilesOnDocker(t *testing.T) {
	bin, image := colo(t)
	_, root := mountEmulator(t)
	state := t.TempDir()
	servePort, batchPort := freePort(t), freePort(t)
	servePort, batchPort = servePort[strings.LastIndexByte(servePort, ':')+1:], batchPort[strings.LastIndexByte(batchPort, ':')+1:]
	pfx := fmt.Sprintf("colotest-prof-%d", os.Getpid())
	serve := runHostContainer(t, image, pfx+"-serve", []string{"colo.io/class=priority",
		`colo.io/perf-metric=:` + servePort + `/metrics histogram_quantile(0.99, colo_serve_request_duration_seconds{op="get"})`},
		"stress", "serve", "--listen", "127.0.0.1:"+servePort, "--mb", "16", "--reads", "100")
	batch := runHostContainer(t, image, pfx+"-batch", []string{"colo.io/class=batch",
		"colo.io/perf-metric=:" + batchPort + "/metrics rate(colo_stress_work_total)"},
		"stress", "random", "--mb", "64", "--metrics", "127.0.0.1:"+batchPort)
	_ = serve
	url := "http://127.0.0.1:" + servePort + "/kv/{key}"
	// The service must answer before the load starts (it writes its working set first).
	for i := 0; ; i++ {
		if resp, err := http.Get("http://127.0.0.1:" + servePort + "/metrics"); err == nil {
			resp.Body.Close()
			break
		}
		if i > 600 {
			t.Fatal("colo stress serve does not answer")
		}
		time.Sleep(100 * time.Millisecond)
	}
	lctx, lstop := context.WithCancel(context.Background())
	ldone := make(chan struct{})
	go func() { // constant load while profiling: the p99 needs requests
		defer close(ldone)
		_, _ = loadgen.Run(lctx, loadgen.Config{URL: url, Rate: 200, Duration: time.Hour}, nil, time.Now)
	}()
	defer func() { lstop(); <-ldone }()

	start := time.Now()
	p := startAgentArgs(t, bin, "--runtime", "docker", "--policy", "static-cat", "--resctrl-root", root, "--state-dir", state,
		"--interval", "200ms", "--profile", "--profile-classes", "priority,batch,best-effort", "--profile-node",
		"--profile-segment", "1s", "--profile-repeats", "1", "--profile-dials", "8,32", "--profile-max-spread", "5",
		"--profile-cpus", "1", "--profile-retry", "5s")
	deadline := time.Now().Add(10 * time.Minute)
	var st api.Status
	for {
		var err error
		st, err = p.status()
		if err == nil {
			s, b := byName(st, pfx+"-serve"), byName(st, pfx+"-batch")
			if s != nil && b != nil && s.ProfileState == "profiled" && b.ProfileState == "profiled" && s.PredictedSlowdown != nil && b.PredictedSlowdown != nil {
				break
			}
			for _, c := range []*api.ContainerStatus{s, b} {
				if c != nil && c.ProfileState == "refused" {
					t.Logf("%s refused: %s (retried after --profile-retry)", c.Name, c.ProfileReason)
				}
			}
		}
		select {
		case err := <-p.done:
			t.Fatalf("agent exited: %v\n%s", err, p.log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not profiled after 10 min; last status %+v\n%s", st.Containers, p.log())
		}
		time.Sleep(200 * time.Millisecond)
	}
	profileTime := time.Since(start)
	cpuProf, rssProf, peakProf := procUsage(p.cmd.Process.Pid)
	lstop()
	<-ldone
	if st.ProfileRuns["profiled"] < 2 {
		t.Errorf("profile runs %v", st.ProfileRuns)
	}
	// /metrics carries both predictions and the runs; /api/v1/profiles and the store both.
	resp, err := http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`colo_predicted_slowdown{id=`, `name="` + pfx + `-serve"`, `colo_profile_runs_total{outcome="profiled"}`,
		`colo_container_profile{`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, n := range []string{pfx + "-serve", pfx + "-batch"} {
		found := false
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "colo_predicted_slowdown{") && strings.Contains(l, `name="`+n+`"`) {
				found = true
			}
		}
		if !found {
			t.Errorf("no colo_predicted_slowdown for %s", n)
		}
	}
	resp, err = http.Get("http://" + p.addr + api.Version + "/profiles")
	if err != nil {
		t.Fatal(err)
	}
	var ps []tenantprofile.Profile
	err = json.NewDecoder(resp.Body).Decode(&ps)
	resp.Body.Close()
	if err != nil || len(ps) != 2 {
		t.Fatalf("/api/v1/profiles: %d profiles, %v", len(ps), err)
	}
	out, err := exec.Command(bin, "agent", "profiles", "--state-dir", state, "--json").Output()
	var stored []tenantprofile.Profile
	if err != nil || json.Unmarshal(out, &stored) != nil || len(stored) != 2 {
		t.Fatalf("colo agent profiles: %v %s", err, out)
	}
	sv := byName(st, pfx+"-serve")
	for _, pr := range ps {
		t.Logf("profile %s (%s %v): perf %v at %v MB, score %.2f MB, spread %.1f %%, %.1f s", pr.Key, pr.Image, pr.Command, pr.Perf, pr.Dials, pr.Score, 100*pr.Spread, pr.Seconds)
		if pr.Key == sv.ProfileKey && !pr.LowerIsBetter {
			t.Errorf("serve's p99 profile should be lower-is-better")
		}
	}

	// The serve container's measured p99 slowdown next to the batch one: p99 with the
	// batch paused, running, paused again (A B A), compared with the prediction.
	measure := func() float64 {
		r, err := loadgen.Run(context.Background(), loadgen.Config{URL: url, Rate: 100, Duration: 8 * time.Second}, nil, time.Now)
		if err != nil || r.OK == 0 {
			t.Fatalf("load: %+v %v", r, err)
		}
		return r.P99Ms
	}
	pause := func(on bool) {
		verb := "unpause"
		if on {
			verb = "pause"
		}
		var out []byte
		var err error
		for range 5 { // runc's freeze gives up under heavy load ("unable to freeze"): retry
			if out, err = exec.Command("docker", verb, batch).CombinedOutput(); err == nil {
				return
			}
			time.Sleep(time.Second)
		}
		t.Fatalf("docker %s: %v %s", verb, err, out)
	}
	quietFrom := time.Now()
	pause(true)
	a1 := measure()
	pause(false)
	b := measure()
	pause(true)
	a2 := measure()
	pause(false)
	cpuQuiet, rssQuiet, _ := procUsage(p.cmd.Process.Pid)
	quiet := time.Since(quietFrom).Seconds()
	measured := b / ((a1 + a2) / 2)
	predicted := *sv.PredictedSlowdown
	rep := map[string]any{"profile_seconds": profileTime.Seconds(), "serve_p99_alone_ms": []float64{a1, a2}, "serve_p99_with_batch_ms": b,
		"measured_p99_slowdown": measured, "predicted_slowdown": predicted, "load_average": loadAvg(),
		"agent_cpu_s_while_profiling": cpuProf, "agent_rss_mb_after_profiling": rssProf, "agent_peak_rss_mb": peakProf,
		"agent_cpu_s_not_profiling": cpuQuiet - cpuProf, "not_profiling_wall_s": quiet, "agent_rss_mb_not_profiling": rssQuiet}
	js, _ := json.Marshal(rep)
	t.Logf("COLO_E2E_PROFILE_DOCKER %s", js)
	if !(measured > 0) || !(predicted > 0) {
		t.Errorf("measured %v, predicted %v", measured, predicted)
	}
	p.term()
}
