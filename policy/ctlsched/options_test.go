package ctlsched

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"colo/sched"
)

type testOptions struct {
	Baseline *int     `yaml:"baseline"`
	Window   *int     `yaml:"window"`
	PeriodT  *float64 `yaml:"period_t"`
	Policy   *string  `yaml:"policy"`
}

func fromYAML(t *testing.T, text string) sched.Config {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(text), &n); err != nil {
		t.Fatal(err)
	}
	return sched.Config{OptionsNode: &n}
}

// Prefixed keys override plain ones for their own scheduler and are dropped for others.
func TestDecodeScopesPrefixes(t *testing.T) {
	cfg := fromYAML(t, "baseline: 2\ndcat.baseline: 3\nvp.window: 4\nperiod_t: 1.5\nlfoc+.x: 1\n")
	var d testOptions
	if err := Decode("dcat", cfg, &d, "dcat.", "static-cat."); err != nil {
		t.Fatal(err)
	}
	if *d.Baseline != 3 || *d.PeriodT != 1.5 || d.Window != nil {
		t.Errorf("dcat scope: %+v", d)
	}
	var v testOptions
	if err := Decode("vp", cfg, &v, "vp."); err != nil {
		t.Fatal(err)
	}
	if *v.Baseline != 2 || *v.Window != 4 {
		t.Errorf("vp scope: %+v", v)
	}
}

// Every bad option names its key and the line of the file it is on.
func TestDecodeErrorsCarryLines(t *testing.T) {
	for _, c := range []struct {
		text, want string
		line       int
	}{
		{"period_t: 1\nwindow: 1.5\n", "vp: scheduler.options.window = 1.5 must be a whole number", 2},
		{"window: 2\n\nperiod_t: soon\n", "vp: scheduler.options.period_t = soon is not a number", 3},
		{"window: 2\nbogus: 1\n", `vp: unknown scheduler.options key "bogus" (known: baseline, window, period_t, policy)`, 2},
		{"vp.windw: 2\n", `unknown scheduler.options key "windw"`, 1},
		{"window: [1, 2]\n", "is not a number", 1},
		{"- window\n", "must be a mapping", 1},
	} {
		var o testOptions
		err := Decode("vp", fromYAML(t, c.text), &o, "vp.")
		if err == nil || !strings.Contains(err.Error(), c.want) || LineOf(err) != c.line {
			t.Errorf("%q: %v (line %d), want %q at line %d", c.text, err, LineOf(err), c.want, c.line)
		}
	}
}

// Options built in code (a map, no file) decode the same way, without lines.
func TestDecodeMap(t *testing.T) {
	var o testOptions
	if err := Decode("x", sched.Config{Options: map[string]any{"window": 3, "policy": "max-fairness"}}, &o); err != nil || *o.Window != 3 || *o.Policy != "max-fairness" {
		t.Fatalf("%+v %v", o, err)
	}
	if err := Decode("x", sched.Config{Options: map[string]any{"window": 1.5}}, &o); err == nil || !strings.Contains(err.Error(), "whole number") || LineOf(err) != 0 {
		t.Fatalf("map 1.5: %v", err)
	}
	if err := Decode("x", sched.Config{}, &o); err != nil {
		t.Fatalf("no options: %v", err)
	}
}
