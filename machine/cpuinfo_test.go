package machine

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCPUModel(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cpuinfo")
	// the head of a GCE n2d host's /proc/cpuinfo
	in := "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC 7B13   64-Core Processor\nstepping\t: 0\n\nprocessor\t: 1\nmodel name\t: other\n"
	if err := os.WriteFile(p, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := CPUModel(p); got != "AMD EPYC 7B13 64-Core Processor" {
		t.Errorf("CPUModel = %q", got)
	}
	if got := CPUModel(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("missing file: %q", got)
	}
}
