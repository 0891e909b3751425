package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue #26 item 10: every hostile input is refused with exit 2, naming the file or
// flag, before colo reads it whole or starts work it cannot finish: a symlink to a device
// given as any input file (before: colo ran out of memory reading /dev/zero), a device as
// a run directory's run.json, a --repeat that cannot finish, a max_t of 8e9 s, a
// workload line of 700 000 applications, --max-bw NaN or 1e308, --parallel -5. The time
// each refusal took is logged (CPU and wall; the machine may be loaded).
func TestHostileInputsExitTwo(t *testing.T) {
	dir := t.TempDir()
	link := func(name, to string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	zeroYAML := link("zero.yaml", "/dev/zero")
	randomCSV := link("random.csv", "/dev/urandom")
	zeroCSV := link("zero.csv", "/dev/zero")
	runDir := filepath.Join(dir, "run")
	os.Mkdir(runDir, 0o755)
	os.Symlink("/dev/zero", filepath.Join(runDir, "run.json"))
	small := "benchmark: {max_t: %s}\ncontainers: {a: {workload: x, core: 0, length: 1}}\n"
	huge := write("huge-max-t.yaml", strings.Replace(small, "%s", "8e9", 1))
	ok := write("ok.yaml", strings.Replace(small, "%s", "10", 1))
	wide := write("wide.csv", strings.Repeat("mcf,", 700000)+"mcf\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", zeroYAML}, zeroYAML},
		{[]string{"compare", zeroYAML}, zeroYAML},
		{[]string{"eval", "--profiles", randomCSV, "--workload", "mcf"}, randomCSV},
		{[]string{"partition", "--workloads", zeroCSV}, zeroCSV},
		{[]string{"partition", "--workloads", wide}, "at most 1024"},
		{[]string{"report", runDir, "-o", filepath.Join(dir, "r.html")}, "run.json: is a device"},
		{[]string{"run", huge}, "max_t"},
		{[]string{"run", ok, "--repeat", "1000000000"}, "--repeat"},
		{[]string{"eval", "--workload", "mcf,lbm", "--max-bw", "NaN"}, "--max-bw"},
		{[]string{"eval", "--workload", "mcf,lbm", "--max-bw", "1e308"}, "--max-bw"},
		{[]string{"run", ok, "--repeat", "2", "--parallel", "-5"}, "--parallel"},
	} {
		start, cpu0 := time.Now(), cpuTime()
		_, stderr, err := runSplit(t, c.args...)
		wall, cpu := time.Since(start), cpuTime()-cpu0
		code := exitStatus(err, nil, &strings.Builder{})
		if code != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("colo %s: exit %d, error %v (stderr %q); want exit 2 naming %q", strings.Join(c.args, " "), code, err, stderr, c.want)
			continue
		}
		t.Logf("colo %s: exit 2 in %v wall, %v CPU: %v", strings.Join(c.args, " "), wall.Round(time.Millisecond), cpu.Round(time.Millisecond), err)
	}
}

// cpuTime is this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
