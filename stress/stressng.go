package stress

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"
)

// thesisStressNG holds the thesis's exact stress-ng commands per sensitivity stressor
// (seed000.md §2.6, Table 4.2). The leading "0" worker count (one per online CPU) is
// replaced by the requested worker count when one is given.
var thesisStressNG = map[string][]string{
	KindLLC:      {"--cache", "0", "--cache-level", "3"},
	KindMemRead:  {"--memrate", "0", "--memrate-rd-mbs", "1000000", "--memrate-wr-mbs", "0", "--memrate-bytes", "500M"},
	KindMemWrite: {"--memrate", "0", "--memrate-wr-mbs", "1000000", "--memrate-rd-mbs", "0", "--memrate-method", "write64nt"},
	KindSyscall:  {"--futex", "0"},
	KindPrefetch: {"--stream", "0", "--stream-madvise", "hugepage", "--stream-index", "0"},
}

// StressNGArgs returns the thesis's stress-ng arguments for a stressor kind, with workers
// instances (0 keeps the thesis's "0", one per CPU) and a --timeout when duration > 0.
func StressNGArgs(kind string, workers int, duration time.Duration) ([]string, error) {
	base, ok := thesisStressNG[kind]
	if !ok {
		return nil, fmt.Errorf("no thesis stress-ng command for %q: only %v have one", kind, ThesisStressors)
	}
	args := append([]string(nil), base...)
	if workers > 0 {
		args[1] = strconv.Itoa(workers)
	}
	if duration > 0 {
		args = append(args, "--timeout", fmt.Sprintf("%ds", max(1, int(duration.Round(time.Second).Seconds()))))
	}
	return args, nil
}

// StressNGAvailable reports the path of stress-ng if it is installed.
func StressNGAvailable() (string, bool) {
	p, err := exec.LookPath("stress-ng")
	return p, err == nil
}

// RunStressNG runs stress-ng with the thesis's command for kind until it times out or ctx
// is done (then it is sent SIGINT, which makes it stop and still write its metrics), and
// returns its bogo-ops throughput as a final Report (unit "bogo-ops"). stress-ng's own
// output goes to stdout/stderr.
func RunStressNG(ctx context.Context, kind string, workers int, duration time.Duration, stdout, stderr *os.File) (Report, error) {
	bin, ok := StressNGAvailable()
	if !ok {
		return Report{}, errors.New("stress-ng is not installed (Debian: apt-get install stress-ng); drop --stress-ng to use the built-in stressor")
	}
	args, err := StressNGArgs(kind, workers, duration)
	if err != nil {
		return Report{}, err
	}
	dir, err := os.MkdirTemp("", "colo-stress-ng")
	if err != nil {
		return Report{}, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "metrics.yaml")
	args = append(args, "--metrics-brief", "--yaml", out)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 10 * time.Second
	runErr := cmd.Run()
	if runErr != nil && ctx.Err() == nil {
		return Report{}, fmt.Errorf("stress-ng %v: %w", args, runErr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return Report{}, fmt.Errorf("stress-ng wrote no metrics (%v): %w", runErr, err)
	}
	r, err := parseStressNGYAML(kind, b)
	r.Workers = workers
	if workers == 0 {
		r.Workers = runtime.NumCPU()
	}
	return r, err
}

// parseStressNGYAML reads the summed bogo-ops and wall-clock time from stress-ng --yaml output.
func parseStressNGYAML(kind string, b []byte) (Report, error) {
	var doc struct {
		Metrics []struct {
			Stressor string  `yaml:"stressor"`
			BogoOps  float64 `yaml:"bogo-ops"`
			Rate     float64 `yaml:"bogo-ops-per-second-real-time"`
			Wall     float64 `yaml:"wall-clock-time"`
		} `yaml:"metrics"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return Report{}, fmt.Errorf("stress-ng metrics: %w", err)
	}
	if len(doc.Metrics) == 0 {
		return Report{}, errors.New("stress-ng metrics: no metrics section")
	}
	m := doc.Metrics[0]
	return Report{Kind: kind, Final: true, Elapsed: m.Wall, Window: m.Wall, Work: m.BogoOps, Unit: "bogo-ops", Rate: m.Rate}, nil
}
