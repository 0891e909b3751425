package bench

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"colo/internal/inputfile"
	"colo/machine"
	"colo/policy/ctlsched"
	"colo/sched"
)

// PolicyFile is a scheduler block on its own (colo agent --policy-options FILE): the same
// keys as a benchmark's benchmark.scheduler block (implementation, tick_t, reserve_ways,
// reserve_mem, prober, options…), validated by the same code with file:line errors.
type PolicyFile struct {
	Scheduler Scheduler `yaml:"scheduler"`
}

// LoadScheduler reads a policy file and resolves it for machine m into a sched.Config;
// implementation, when not empty, overrides the file's (the --policy flag). The
// scheduler's own options are checked by building it once, so an unknown or bad
// scheduler.options key is reported at the options line.
func LoadScheduler(path string, m *machine.Profile, implementation string) (sched.Config, error) {
	var b []byte
	if path != "" {
		var err error
		if b, err = inputfile.Read(path, inputfile.Document); err != nil {
			return sched.Config{}, fmt.Errorf("policy options: %w", err)
		}
	}
	return ParseScheduler(path, b, m, implementation)
}

// ParseScheduler is LoadScheduler on bytes (empty: every default).
func ParseScheduler(file string, b []byte, m *machine.Profile, implementation string) (sched.Config, error) {
	var f PolicyFile
	root := &yaml.Node{Kind: yaml.MappingNode}
	if len(b) > 0 {
		r, err := decodeStrict(file, b, &f)
		if err != nil {
			return sched.Config{}, err
		}
		if r.Kind == yaml.DocumentNode && len(r.Content) > 0 {
			root = r.Content[0]
		}
	}
	if implementation != "" {
		f.Scheduler.Implementation = implementation
	}
	// schedConfig looks keys up under benchmark.scheduler: wrap the file's top level so
	// its lines stay the file's own.
	wrapped := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "benchmark"}, root}}
	c := &checker{}
	cfg := schedConfig(c, file, wrapped, m, f.Scheduler)
	if len(c.errs) > 0 {
		return cfg, c.errs
	}
	if _, err := sched.New(cfg.Implementation, sched.Env{Machine: m, Config: cfg}); err != nil {
		line := ctlsched.LineOf(err)
		if line == 0 {
			line = lineOf(wrapped, "benchmark", "scheduler", "options")
		}
		return cfg, Errors{{File: file, Line: line, Msg: err.Error()}}
	}
	return cfg, nil
}
