package bench_test

import (
	"testing"

	"colo/bench"
	"colo/internal/machinetest"
	_ "colo/policy/dcat" // the controllers register their schedulers and options
	_ "colo/policy/lfocplus"
	_ "colo/policy/vp"
	"colo/sched"
)

// FuzzControllerOptions: a scheduler policy file (the scheduler: block and its typed
// controller options) never panics the parser or any controller's option parsing, for
// every registered scheduler; what is accepted builds.
func FuzzControllerOptions(f *testing.F) {
	f.Add([]byte("scheduler:\n  implementation: dcat\n  options:\n    baseline: 2\n    policy: max-fairness\n"))
	f.Add([]byte("scheduler: {tick_t: 0.5, options: {window: 3, lfoc+.period_t: 0.1}}\n"))
	f.Add([]byte("scheduler: {options: {baselines: {a: 40}, dcat.period_t: 1e300}}\n"))
	m := machinetest.Get(f, "skx-6138")
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, name := range sched.Names() {
			cfg, err := bench.ParseScheduler("p.yaml", b, m, name)
			if err != nil {
				continue
			}
			if _, err := sched.New(name, sched.Env{Machine: m, Config: cfg}); err != nil {
				t.Fatalf("%s: ParseScheduler accepted %q but the scheduler refuses it: %v", name, b, err)
			}
		}
	})
}
