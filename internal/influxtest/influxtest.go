// Package influxtest runs a real InfluxDB 1.x server (Debian package influxdb) for a test:
// on free loopback ports, with its own data directory, stopped when the test ends. A test
// that needs it fails in CI (CI=true, where scripts/setup.sh installs influxdb) and skips
// elsewhere (internal/testenv.Need).
package influxtest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"colo/internal/testenv"
)

// Start runs influxd until the test ends and returns its URL (http://127.0.0.1:PORT). A
// free port can be taken between probing and binding, so it tries three times with new
// ports before it fails the test.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("influxd")
	testenv.Need(t, "influxd (Debian package influxdb; scripts/setup.sh installs it)", err)
	for attempt := 1; ; attempt++ {
		u, err := try(t, bin)
		if err == nil {
			return u
		}
		if attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("influxd attempt %d: %v", attempt, err)
	}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// try starts one influxd and waits (events: its /ping answering, or its exit) until it
// answers, up to 30 s.
func try(t testing.TB, bin string) (string, error) {
	dir := t.TempDir()
	httpPort, rpcPort := freePort(t), freePort(t)
	conf := fmt.Sprintf(`reporting-disabled = true
bind-address = "127.0.0.1:%d"
[meta]
  dir = %q
  logging-enabled = false
[data]
  dir = %q
  wal-dir = %q
  query-log-enabled = false
[monitor]
  store-enabled = false
[subscriber]
  enabled = false
[continuous_queries]
  enabled = false
[http]
  enabled = true
  bind-address = "127.0.0.1:%d"
  log-enabled = false
  pprof-enabled = false
[logging]
  level = "warn"
  suppress-logo = true
`, rpcPort, filepath.Join(dir, "meta"), filepath.Join(dir, "data"), filepath.Join(dir, "wal"), httpPort)
	cfg := filepath.Join(dir, "influxdb.conf")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	cmd := exec.Command(bin, "run", "-config", cfg)
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	u := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	for i := 0; ; i++ {
		resp, err := http.Get(u + "/ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				break
			}
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			return "", fmt.Errorf("influxd exited: %v\n%s", err, logBuf.String())
		case <-time.After(100 * time.Millisecond):
		}
		if i > 300 {
			return "", fmt.Errorf("influxd did not answer /ping in 30 s\n%s", logBuf.String())
		}
	}
	return u, nil
}
