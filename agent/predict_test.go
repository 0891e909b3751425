package agent

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"colo/agent/api"
	"colo/agent/core"
	"colo/agent/discovery"
	"colo/data"
	"colo/predict"
	"colo/resctrl/emu"
)

func bubbleUp(t *testing.T) (*Predictor, *predict.Dataset) {
	t.Helper()
	d, err := predict.LoadDir(data.FS, data.BubbleUp, "embedded:"+data.BubbleUp)
	if err != nil {
		t.Fatal(err)
	}
	return NewPredictor(d, predict.MethodNearest), d
}

// The predicted slowdown of a pair is the reciprocal of the prediction package's own
// pair matrix (P̂ = S_A(I_C)), alone it is 1, and images map to profiles by name.
func TestPredictorMatchesThePredictPackage(t *testing.T) {
	p, d := bubbleUp(t)
	for image, want := range map[string]string{"registry.local/spec/605.mcf_s:1": "605.mcf_s", "605.mcf_s": "605.mcf_s",
		"619.lbm_s@sha256:abc": "619.lbm_s", "nginx:latest": "", "": ""} {
		if got := p.Profile(image); got != want {
			t.Errorf("Profile(%q) = %q, want %q", image, got, want)
		}
	}
	apps := d.Names()
	ss := predict.ScoreAll(d, predict.MethodNearest)
	mat, err := predict.Matrix(d.Curves, apps, ss, predict.MethodNearest)
	if err != nil {
		t.Fatal(err)
	}
	pairs := 0
	for i, a := range apps {
		if v, note, err := p.Slowdown(a, nil); err != nil || v != 1 || note != "" {
			t.Errorf("%s alone: slowdown %v (%q, %v), want 1", a, v, note, err)
		}
		for j, s := range ss {
			if _, ok := d.Curves[s.Competitor]; !ok {
				continue
			}
			v, _, err := p.Slowdown(a, []string{s.Competitor})
			if err != nil || math.Abs(v-1/mat[i][j]) > 1e-12 {
				t.Errorf("%s next to %s: slowdown %v (%v), the predict package says 1/%v", a, s.Competitor, v, err, mat[i][j])
			}
			pairs++
		}
	}
	if pairs < 50 {
		t.Fatalf("only %d pairs checked", pairs)
	}
}

// Neighbours are the containers of the same socket; one without a profile is left out
// (and said), a container without a profile gets no prediction.
func TestPredictionsPerSocket(t *testing.T) {
	p, _ := bubbleUp(t)
	cs := []api.ContainerStatus{
		{Name: "mcf", Image: "spec/605.mcf_s:1", Socket: 0},
		{Name: "lbm", Image: "spec/619.lbm_s:1", Socket: 0},
		{Name: "web", Image: "nginx:1", Socket: 0},
		{Name: "gcc", Image: "spec/602.gcc_s:1", Socket: 1},
	}
	p.predictions(cs)
	want, _, _ := p.Slowdown("605.mcf_s", []string{"619.lbm_s"})
	if cs[0].PredictedSlowdown == nil || *cs[0].PredictedSlowdown != want {
		t.Errorf("mcf next to lbm (and an unprofiled web): %v, want %v", cs[0].PredictedSlowdown, want)
	}
	if !strings.Contains(cs[0].PredictionNote, "1 of 2 neighbours") {
		t.Errorf("note %q does not say a neighbour was left out", cs[0].PredictionNote)
	}
	if cs[2].PredictedSlowdown != nil || cs[2].Profile != "" {
		t.Errorf("a container without a profile got %v (%q)", *cs[2].PredictedSlowdown, cs[2].Profile)
	}
	if cs[3].PredictedSlowdown == nil || *cs[3].PredictedSlowdown != 1 {
		t.Errorf("gcc alone on socket 1: %v, want 1", cs[3].PredictedSlowdown)
	}
}

// With profiles, /metrics exports colo_predicted_slowdown for the containers whose
// image has one, and only for them.
func TestAgentExportsPredictedSlowdown(t *testing.T) {
	p, _ := bubbleUp(t)
	em, err := emu.NewNamed("intel", emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := startAgentWrapped(t, em, "static-cat", t.TempDir(), func(g Groups) Groups { return g },
		func(o *Options) { o.Predictor = p })
	mcf, lbm, other := newContainer("abab0001", core.Batch, []int{601}, h), newContainer("abab0002", core.Batch, []int{602}, h), newContainer("abab0003", core.Batch, []int{603}, h)
	mcf.Image, lbm.Image = "spec/605.mcf_s:1", "spec/619.lbm_s:1"
	h.rt.ch <- discovery.Event{Kind: discovery.Sync, Containers: []core.Container{mcf, lbm, other}}
	st := h.until("three containers", func(st api.Status) bool { return len(st.Containers) == 3 })
	_, m := get(h.a, "/metrics")
	for _, c := range []core.Container{mcf, lbm} {
		cs := find(st, c.ID)
		if cs.PredictedSlowdown == nil {
			t.Fatalf("%s: no prediction (%q)", c.Image, cs.PredictionNote)
		}
		line := fmt.Sprintf(`colo_predicted_slowdown{id="/%s",image="%s",name="%s"}`, c.ID, c.Image, c.Name)
		if !strings.Contains(m, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if strings.Contains(m, `colo_predicted_slowdown{id="/abab0003"`) {
		t.Error("a container without a profile has a predicted slowdown")
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}
