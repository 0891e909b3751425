package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// a benchmark whose file asks for platform: linux, with simulator workload models (which
// the linux platform refuses): --platform sim must override the file.
const platformBench = `benchmark:
  name: on-linux
  platform: linux
  max_t: 20
  scheduler: {implementation: least-loaded}
containers:
  zip:
    workload: "7zip:2"
    num_cores: 2
    length: 10
`

func TestRunPlatformFlag(t *testing.T) {
	yml := filepath.Join(t.TempDir(), "b.yaml")
	if err := os.WriteFile(yml, []byte(platformBench), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runColo(t, "run", yml, "--platform", "sim", "--no-store", "--json")
	if err != nil {
		t.Fatalf("colo run --platform sim: %v\n%s", err, out)
	}
	var rep struct {
		Platform   string `json:"platform"`
		Machine    string `json:"machine"`
		Schedulers []struct {
			JobsCompleted int `json:"jobs_completed"`
		} `json:"schedulers"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if rep.Platform != "sim" || rep.Machine != "icx-4314-2s" || len(rep.Schedulers) != 1 || rep.Schedulers[0].JobsCompleted != 1 {
		t.Fatalf("--platform sim did not override the file's platform: %+v", rep)
	}
	_, err = runColo(t, "run", yml, "--platform", "vm", "--no-store")
	if err == nil || !isBadInput(err) {
		t.Fatalf("--platform vm: err %v, want bad input (exit 2)", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"vm"`) || !strings.Contains(msg, "linux") || !strings.Contains(msg, "sim") {
		t.Fatalf("--platform vm: %q does not list the known platforms", msg)
	}
}
