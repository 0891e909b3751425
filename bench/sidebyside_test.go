package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// RunAll with Parallel runs the schedulers side by side on the simulated testbed and
// must give what running them one after the other gives: the report (but wall times),
// every recorded row, the warnings in the same order, the progress steps in the same
// order. Run it under -race: the runs share no state.
func TestRunAllSideBySide(t *testing.T) {
	b, err := os.ReadFile("../examples/thesis/high-utilization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// 10 minutes of the trace, with a job the scheduler cannot place (a warning)
	y := strings.Replace(string(b), "max_t: 3600", "max_t: 600", 1)
	names := []string{"least-loaded", "dynamic", "static-cat"}
	run := func(parallel bool) (string, map[string]*Memory, []string, []string) {
		bm, err := Parse("../examples/thesis/t.yaml", []byte(y), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		recs := map[string]*Memory{}
		var warns, steps []string
		opt := RunOptions{Parallel: parallel,
			Warn: func(w string) { warns = append(warns, w) },
			Recorder: func(name string) (Recorder, func(Summary) error, error) {
				m := &Memory{}
				recs[name] = m
				return m, func(Summary) error { return nil }, nil
			},
			Hooks: Hooks{Progress: func(s Step) {
				if s.Final || s.Now%(60e9) == 0 {
					steps = append(steps, fmt.Sprint(s.Label, s.Now, s.Finished, s.Final))
				}
			}},
		}
		rep, err := RunAll(bm, names, opt)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rep.Schedulers {
			rep.Schedulers[i].WallSeconds = 0
		}
		j, _ := json.Marshal(rep)
		return string(j), recs, warns, steps
	}
	r1, m1, w1, s1 := run(false)
	r2, m2, w2, s2 := run(true)
	if r1 != r2 {
		t.Errorf("reports differ:\n%s\n%s", r1, r2)
	}
	for _, n := range names {
		a, b := m1[n], m2[n]
		for _, c := range [][2]any{{a.Jobs, b.Jobs}, {a.Samples, b.Samples}, {a.Allocations, b.Allocations}, {a.Events, b.Events}, {a.Probes, b.Probes}} {
			// printed, not DeepEqual: NaN (no IPCE target) is not equal to itself
			if fmt.Sprintf("%+v", c[0]) != fmt.Sprintf("%+v", c[1]) {
				t.Errorf("%s: recorded rows differ side by side: %T\n%v\n%v", n, c[0], firstRow(c[0]), firstRow(c[1]))
			}
		}
		if len(m1[n].Samples) == 0 {
			t.Errorf("%s: no samples recorded", n)
		}
	}
	if !reflect.DeepEqual(w1, w2) {
		t.Errorf("warnings differ:\n%q\n%q", w1, w2)
	}
	// progress: a run's steps are shown once the runs before it ended (those taken while
	// it waited are dropped), so the side-by-side steps are a subsequence of the
	// sequential ones, run after run, each run's final step included
	k := 0
	for _, s := range s2 {
		for k < len(s1) && s1[k] != s {
			k++
		}
		if k == len(s1) {
			t.Fatalf("progress step %q out of order or unknown:\n%q\n%q", s, s1, s2)
		}
	}
	finals := func(ss []string) (f []string) {
		for _, s := range ss {
			if strings.HasSuffix(s, "true") {
				f = append(f, s)
			}
		}
		return f
	}
	if f1, f2 := finals(s1), finals(s2); len(f1) != len(names) || !reflect.DeepEqual(f1, f2) {
		t.Errorf("final progress steps differ:\n%q\n%q", f1, f2)
	}
}

func firstRow(x any) string {
	v := reflect.ValueOf(x)
	if v.Kind() == reflect.Slice && v.Len() > 0 {
		return fmt.Sprintf("%d rows, first %+v", v.Len(), v.Index(0).Interface())
	}
	return fmt.Sprintf("%d", v.Len())
}
