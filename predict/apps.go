package predict

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ErrNoApps is returned when a command needs applications and got none.
var ErrNoApps = errors.New("no applications: give --app NAME=CMD (repeatable)")

var appName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ParseApps reads the applications of a measurement, NAME=CMD each (an entry without a
// valid name is appN=ENTRY, N its position from 1); names must be unique and commands
// not empty.
func ParseApps(entries []string) ([]App, error) {
	if len(entries) == 0 {
		return nil, ErrNoApps
	}
	var out []App
	seen := map[string]bool{}
	for i, a := range entries {
		name, cmd, ok := strings.Cut(a, "=")
		if !ok || !appName.MatchString(name) || strings.ContainsAny(name, " \t") {
			name, cmd = fmt.Sprintf("app%d", i+1), a
		}
		if strings.TrimSpace(cmd) == "" {
			return nil, fmt.Errorf("--app %q: empty command", a)
		}
		if seen[name] {
			return nil, fmt.Errorf("--app %q: name %s given twice", a, name)
		}
		seen[name] = true
		out = append(out, App{Name: name, Cmd: cmd})
	}
	return out, nil
}

// ParseDials parses the SoI dials of a measurement (MB of its working set): FROM:TO:STEP
// or a comma list, ascending, each once; 0 (the isolated run) must be included.
func ParseDials(s string) ([]float64, error) {
	var out []float64
	if parts := strings.Split(s, ":"); len(parts) == 3 {
		var v [3]float64
		for i, p := range parts {
			x, err := strconv.ParseFloat(p, 64)
			if err != nil {
				return nil, fmt.Errorf("--dials %q: %q is not a number", s, p)
			}
			v[i] = x
		}
		if v[2] <= 0 || v[1] < v[0] {
			return nil, fmt.Errorf("--dials %q: want FROM:TO:STEP with STEP > 0 and TO ≥ FROM", s)
		}
		for i := 0; ; i++ {
			d := v[0] + float64(i)*v[2]
			if d > v[1]+1e-9 {
				break
			}
			out = append(out, d)
		}
	} else {
		for _, p := range strings.Split(s, ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || x < 0 {
				return nil, fmt.Errorf("--dials %q: %q is not a dial in MB ≥ 0", s, p)
			}
			out = append(out, x)
		}
	}
	sort.Float64s(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, fmt.Errorf("--dials %q: %v given twice", s, out[i])
		}
	}
	if len(out) == 0 || out[0] != 0 {
		return nil, fmt.Errorf("--dials %q: must include 0 (the isolated run)", s)
	}
	return out, nil
}
