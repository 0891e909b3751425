// Package bench is the benchmark orchestrator of the thesis (seed000.md §1): it reads a
// benchmark YAML, builds a static or seeded generated trace, runs it on a Platform under
// a scheduler on an injected clock, collects per-container samples, runs allocation
// probes, and summarises the run.
package bench

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"colo/internal/fileerr"
	"colo/internal/inputfile"
)

// File is the benchmark YAML (seed000.md §1.2, Listings 4.1–4.4). Exactly one of
// Containers (a static trace) or Arrival+Workloads (a generated trace) is given.
type File struct {
	Benchmark  Header                `yaml:"benchmark"`
	Containers map[string]*Container `yaml:"containers"`
	Arrival    *Arrival              `yaml:"arrival"`
	Workloads  *Workloads            `yaml:"workloads"`
	// Data is the collector configuration of generated jobs (Listing 4.3).
	Data *Data `yaml:"data"`
}

// Header is the benchmark block (Listing 4.1).
type Header struct {
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	MaxT        *float64  `yaml:"max_t"` // seconds
	LogLevel    string    `yaml:"log_level"`
	Platform    string    `yaml:"platform"` // sim (default) | linux
	Machine     string    `yaml:"machine"`  // built-in profile for sim (default icx-4314-2s)
	Seed        *uint64   `yaml:"seed"`     // platform noise seed (sim)
	Scheduler   Scheduler `yaml:"scheduler"`
	Data        Data      `yaml:"data"`
	Docker      *Docker   `yaml:"docker"`
	// PidSyncInterval (ms) is accepted for thesis files; the linux platform may use it.
	PidSyncInterval *float64 `yaml:"pid_sync_interval"`
}

// Scheduler is the scheduler block (Listing 4.1 plus the [repo] constants).
type Scheduler struct {
	Implementation     string         `yaml:"implementation"`
	RDT                *bool          `yaml:"rdt"`
	LogLevel           string         `yaml:"log_level"`
	TickT              *float64       `yaml:"tick_t"` // seconds
	ReserveWays        *int           `yaml:"reserve_ways"`
	ReserveMem         *int           `yaml:"reserve_mem"`
	Rebalance          *bool          `yaml:"rebalance"`
	RebalanceCooldownT *float64       `yaml:"rebalance_cooldown_t"`
	RebalanceThreshold *float64       `yaml:"rebalance_threshold"`
	RebalanceMinGain   *float64       `yaml:"rebalance_min_gain"`
	Defragment         *bool          `yaml:"defragment"`
	Reprobe            *bool          `yaml:"reprobe"`
	ForceMove          *bool          `yaml:"force_move_for_priority_admission"`
	Prober             Prober         `yaml:"prober"`
	Options            map[string]any `yaml:"options"`
}

// Prober is the prober block (Listings 4.16, 4.17 and the evaluation's [repo] keys).
type Prober struct {
	Implementation    string   `yaml:"implementation"`
	MinL3             *int     `yaml:"min_l3"`
	MaxL3             *int     `yaml:"max_l3"`
	StepL3            *int     `yaml:"step_l3"`
	MinMem            *int     `yaml:"min_mem"`
	MaxMem            *int     `yaml:"max_mem"`
	MemStep           *int     `yaml:"mem_step"`
	ProbingT          *float64 `yaml:"probing_t"`
	CooldownT         *float64 `yaml:"cooldown_t"`
	WarmupT           *float64 `yaml:"warmup_t"`
	BreakCondition    *float64 `yaml:"break_condition"`
	ReverseProbeOrder *bool    `yaml:"reverse_probe_order"`
	Order             string   `yaml:"order"` // asc | desc
	GreedyAllocation  *bool    `yaml:"greedy_allocation"`
	ProbingFrequency  *float64 `yaml:"probing_frequency"` // ms
	DropOutliers      *int     `yaml:"drop_outliers"`
	Allocate          *bool    `yaml:"allocate"`
	BufferWays        *int     `yaml:"buffer_ways"`
	BufferMemory      *int     `yaml:"buffer_memory"`
	// sensitivity-probe keys of Listings 4.1/4.17, kept for the sensitivity prober
	Isolated  *bool    `yaml:"isolated"`
	DefaultT  *float64 `yaml:"default_t"`
	Abortable *bool    `yaml:"abortable"`
}

// Data is a collector block: sampling frequency (ms) and sources (Listing 4.2).
type Data struct {
	Frequency *float64 `yaml:"frequency"`
	Perf      *Select  `yaml:"perf"`
	Docker    *Select  `yaml:"docker"`
	RDT       *bool    `yaml:"rdt"`
	DB        *DB      `yaml:"db"`
}

// DB is the optional time-series sink (InfluxDB), values usually ${ENV} references.
type DB struct {
	Host     string `yaml:"host"`
	Name     string `yaml:"name"`
	User     string `yaml:"user"`
	Password string `yaml:"password"`
	Org      string `yaml:"org"`
}

// Docker is the linux platform's registry access.
type Docker struct {
	Registry *struct {
		Host     string `yaml:"host"`
		Username string `yaml:"username"`
		Password string `yaml:"password"`
	} `yaml:"registry"`
}

// Select is `true`/`false` or a map of field names to booleans.
type Select struct {
	All    bool
	Fields map[string]bool
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *Select) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&s.All)
	}
	return n.Decode(&s.Fields)
}

// Container is one static-trace entry (Listing 4.2 plus the [repo] priority keys).
type Container struct {
	StartT      *float64          `yaml:"start_t"`
	StopT       *float64          `yaml:"stop_t"`
	Length      *float64          `yaml:"length"`
	Image       string            `yaml:"image"`
	Command     string            `yaml:"command"`
	Workload    string            `yaml:"workload"`
	NumCores    *CoreCount        `yaml:"num_cores"`
	Core        *CoreList         `yaml:"core"`
	Priority    bool              `yaml:"priority"`
	IPCE        *float64          `yaml:"ipce"`
	Environment map[string]string `yaml:"environment"`
	Privileged  bool              `yaml:"privileged"`
	Volumes     []string          `yaml:"volumes"`
	Port        string            `yaml:"port"`
	Data        *Data             `yaml:"data"`
	// SLOms makes the container a latency-critical server (sim): its p99 latency (M/M/1 on
	// the instructions it retires, metric.MM1P99) must stay under slo_ms; Rate is its
	// request rate (requests/s) and RequestMInstr the instructions per request (millions).
	SLOms         *float64 `yaml:"slo_ms"`
	Rate          *float64 `yaml:"rate"`
	RequestMInstr *float64 `yaml:"request_minstr"`
	// MBAMBps asks for a memory bandwidth in MB/s, held by the MB/s loop (policy/mbps).
	MBAMBps *float64 `yaml:"mba_mbps"`
	// Antagonist marks the scenario's known cause of interference (scores a guard's
	// blame; never shown to a scheduler).
	Antagonist bool `yaml:"antagonist"`
	// Phases replace workload: the models run in turn, for their seconds each, looping.
	Phases []PhaseSpec `yaml:"phases"`
}

// PhaseSpec is one phase of a container (sim): a workload model for For seconds.
type PhaseSpec struct {
	Workload string  `yaml:"workload"`
	For      float64 `yaml:"for"`
}

// Arrival is the generated-trace block (Listing 4.3).
type Arrival struct {
	Seed   *uint64 `yaml:"seed"`
	Mean   float64 `yaml:"mean"`  // inter-arrival mean, s
	Sigma  float64 `yaml:"sigma"` // inter-arrival sigma, s
	Length struct {
		Mean  float64 `yaml:"mean"`
		Sigma float64 `yaml:"sigma"`
		Min   float64 `yaml:"min"`
	} `yaml:"length"`
	Split         map[string]float64 `yaml:"split"`
	Sensitivities map[string]float64 `yaml:"sensitivities"`
	// Priority is the percentage of jobs drawn from the priority entries of the pool.
	Priority *float64 `yaml:"priority"`
	// Count caps the number of generated jobs (default: arrivals until max_t).
	Count *int `yaml:"count"`
}

// Workloads is the job pool: entries inline (jobs) and/or pool files (input).
type Workloads struct {
	Input []string   `yaml:"input"`
	Jobs  []*PoolJob `yaml:"jobs"`
	srcs  []poolSrc  // file of each job, parallel to Jobs after loading
}

type poolSrc struct {
	file string
	root *yaml.Node
	idx  int
	base []string
}

// PoolJob is one job-pool entry (Listing 4.4).
type PoolJob struct {
	Name        string            `yaml:"name"`
	Image       string            `yaml:"image"`
	Command     string            `yaml:"command"`
	Workload    string            `yaml:"workload"`
	NumCores    *CoreCount        `yaml:"num_cores"`
	Kind        string            `yaml:"kind"`
	Sensitivity string            `yaml:"sensitivity"`
	Priority    bool              `yaml:"priority"`
	IPCE        *float64          `yaml:"ipce"`
	Environment map[string]string `yaml:"environment"`
	Data        *Data             `yaml:"data"`
}

// CoreCount is num_cores: a count (2), a range ("2-4") or a set ("1, 2, 3, 12" or a list).
type CoreCount struct {
	Choices []int
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (c *CoreCount) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		var xs []int
		if err := n.Decode(&xs); err != nil {
			return err
		}
		c.Choices = xs
		for _, x := range xs {
			if x < 0 || x > MaxCPU {
				return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: num_cores %d must be in 1..%d", n.Line, x, MaxCPU)}}
			}
		}
	case yaml.ScalarNode:
		xs, err := parseIntSet(n.Value)
		if err != nil {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: num_cores %q: %v (write a count 2, a range 2-4 or a set 1, 2, 12)", n.Line, n.Value, err)}}
		}
		c.Choices = xs
	default:
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: num_cores must be a count, range or set", n.Line)}}
	}
	if len(c.Choices) == 0 {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: num_cores is empty", n.Line)}}
	}
	return nil
}

// CoreList is `core`: pinned cores as a list or a cpulist string "0-3,8".
type CoreList struct{ CPUs []int }

// UnmarshalYAML implements yaml.Unmarshaler.
func (c *CoreList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		if err := n.Decode(&c.CPUs); err != nil {
			return err
		}
		for _, x := range c.CPUs {
			if x < 0 || x > MaxCPU {
				return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: core %d must be in 0..%d", n.Line, x, MaxCPU)}}
			}
		}
		return nil
	}
	xs, err := parseIntSet(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: core %q: %v (write a list [0, 1] or a cpulist 0-3,8)", n.Line, n.Value, err)}}
	}
	c.CPUs = xs
	return nil
}

// MaxCPU is the largest CPU number or core count a benchmark may name (the kernel's
// NR_CPUS limit is 8192 on common configurations; 65535 leaves room). Checked at parse
// time so that a range such as 0-9999999999 is an error, not a loop.
const MaxCPU = 1<<16 - 1

// parseIntSet parses "2", "2-4", "1, 2, 3, 12" or "0-3,8" into distinct ascending ints,
// each at most MaxCPU.
func parseIntSet(s string) ([]int, error) {
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("empty element")
		}
		lo, hi := part, part
		if i := strings.Index(part, "-"); i > 0 {
			lo, hi = strings.TrimSpace(part[:i]), strings.TrimSpace(part[i+1:])
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%q is not a number or range", part)
		}
		if b > MaxCPU {
			return nil, fmt.Errorf("%q: %d is above the limit of %d", part, b, MaxCPU)
		}
		for x := a; x <= b; x++ {
			seen[x] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// Error is a bad-input error pointing at a file and line.
type Error = fileerr.Error

// Errors is a list of bad-input errors (all problems of a file at once).
type Errors []*Error

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Interpolate replaces ${NAME} with the environment variable NAME (via lookup). An unset
// variable is an error naming its line, unless it is only referenced in a comment.
func Interpolate(file string, b []byte, lookup func(string) (string, bool)) ([]byte, error) {
	var errs Errors
	lines := bytes.Split(b, []byte("\n"))
	for i, ln := range lines {
		code := ln
		if k := bytes.Index(ln, []byte(" #")); k >= 0 {
			code = ln[:k]
		} else if bytes.HasPrefix(bytes.TrimSpace(ln), []byte("#")) {
			continue
		}
		rest := ln[len(code):]
		code = envRef.ReplaceAllFunc(code, func(m []byte) []byte {
			name := string(m[2 : len(m)-1])
			v, ok := lookup(name)
			if !ok {
				errs = append(errs, &Error{File: file, Line: i + 1, Msg: fmt.Sprintf("environment variable %s is not set (export it or remove the reference)", name)})
				return m
			}
			if strings.ContainsAny(v, "\n") {
				errs = append(errs, &Error{File: file, Line: i + 1, Msg: fmt.Sprintf("environment variable %s contains a newline", name)})
				return m
			}
			return []byte(v)
		})
		lines[i] = append(append([]byte(nil), code...), rest...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return bytes.Join(lines, []byte("\n")), nil
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)
var notFound = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)

// yamlErrors turns a yaml.v3 error into file:line errors with plain words.
func yamlErrors(file string, err error) error {
	var msgs []string
	if te, ok := err.(*yaml.TypeError); ok {
		msgs = te.Errors
	} else {
		msgs = []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var out Errors
	for _, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		line := 0
		if sm := yamlLine.FindStringSubmatch(m); sm != nil {
			line, _ = strconv.Atoi(sm[1])
			m = sm[2]
		}
		if sm := notFound.FindStringSubmatch(m); sm != nil {
			m = fmt.Sprintf("unknown key %q in %s (check the spelling; see docs/bench.md)", sm[1], typeWord(sm[2]))
		}
		m = strings.ReplaceAll(m, "!!str", "string")
		m = strings.ReplaceAll(m, "!!int", "integer")
		m = strings.ReplaceAll(m, "!!float", "number")
		m = strings.ReplaceAll(m, "!!bool", "boolean")
		m = strings.ReplaceAll(m, "!!seq", "list")
		m = strings.ReplaceAll(m, "!!map", "mapping")
		out = append(out, &Error{File: file, Line: line, Msg: m})
	}
	return out
}

func typeWord(t string) string {
	t = strings.TrimPrefix(t, "bench.")
	switch t {
	case "File":
		return "the top level"
	case "Header":
		return "benchmark"
	case "Scheduler":
		return "benchmark.scheduler"
	case "Prober":
		return "benchmark.scheduler.prober"
	case "Data":
		return "a data block"
	case "Container":
		return "a container"
	case "Arrival":
		return "arrival"
	case "PoolJob":
		return "a job-pool entry"
	case "Workloads":
		return "workloads"
	}
	return t
}

// decodeStrict decodes b into v rejecting unknown keys, and also returns the node tree
// for line lookups.
func decodeStrict(file string, b []byte, v any) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if err.Error() == "EOF" {
			return nil, &Error{File: file, Msg: "file is empty"}
		}
		return nil, yamlErrors(file, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, yamlErrors(file, err)
	}
	return &root, nil
}

// nodeAt finds the value node of a key path of mapping keys (nil if absent).
func nodeAt(root *yaml.Node, path ...string) *yaml.Node {
	n := root
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, p := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == p {
				next = n.Content[i+1]
				break
			}
		}
		n = next
	}
	return n
}

// lineOf finds the line of a key path (mapping keys or sequence indexes as strings) in a
// node tree; it returns the deepest line found.
func lineOf(root *yaml.Node, path ...string) int {
	n := root
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	for _, p := range path {
		if n == nil {
			break
		}
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					line = n.Content[i].Line
					next = n.Content[i+1]
					break
				}
			}
			n = next
		case yaml.SequenceNode:
			k, err := strconv.Atoi(p)
			if err != nil || k < 0 || k >= len(n.Content) {
				return line
			}
			n = n.Content[k]
			line = n.Line
		default:
			return line
		}
	}
	return line
}

// Load reads, interpolates and validates a benchmark file.
func Load(path string) (*Benchmark, error) {
	b, err := inputfile.Read(path, inputfile.Document)
	if err != nil {
		return nil, fmt.Errorf("read benchmark: %w", err)
	}
	return Parse(path, b, os.LookupEnv)
}

// Parse interpolates, decodes and validates a benchmark given as bytes; file names the
// source in errors and anchors relative workload input paths.
func Parse(file string, b []byte, lookup func(string) (string, bool)) (*Benchmark, error) {
	b, err := Interpolate(file, b, lookup)
	if err != nil {
		return nil, err
	}
	var f File
	root, err := decodeStrict(file, b, &f)
	if err != nil {
		return nil, err
	}
	if f.Workloads != nil {
		for i := range f.Workloads.Jobs {
			f.Workloads.srcs = append(f.Workloads.srcs, poolSrc{file: file, root: root, idx: i, base: []string{"workloads", "jobs"}})
		}
		for k, in := range f.Workloads.Input {
			p := in
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(file), p)
			}
			pb, err := inputfile.Read(p, inputfile.Document)
			if err != nil {
				return nil, &Error{File: file, Line: lineOf(root, "workloads", "input", strconv.Itoa(k)), Msg: fmt.Sprintf("job pool %s: %v", in, err)}
			}
			if pb, err = Interpolate(p, pb, lookup); err != nil {
				return nil, err
			}
			var jobs []*PoolJob
			proot, err := decodeStrict(p, pb, &jobs)
			if err != nil {
				return nil, err
			}
			for i, j := range jobs {
				f.Workloads.Jobs = append(f.Workloads.Jobs, j)
				f.Workloads.srcs = append(f.Workloads.srcs, poolSrc{file: p, root: proot, idx: i})
			}
		}
	}
	return validate(file, root, &f)
}
