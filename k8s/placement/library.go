package placement

import (
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"colo/data"
	"colo/k8s/nodestate"
	"colo/predict"
)

// Profile is one application's Bubble-Up profile on a library's dial grid.
type Profile struct {
	ScoreMB  float64
	Slowdown []float64 // t(I_k)/t(0) at Library.Dials
}

// Library holds the profiles the scheduler knows by name (pod annotation colo.io/profile).
type Library struct {
	Source   string
	Dials    []float64
	Profiles map[string]Profile
}

// LoadLibrary reads a `colo predict` data directory; "" (or "embedded") means the
// embedded SPEC CPU2017 Bubble-Up data set (data/bubbleup-spec2017).
func LoadLibrary(dir string) (*Library, error) {
	var (
		d   *predict.Dataset
		err error
	)
	if dir == "" || dir == "embedded" {
		d, err = predict.LoadDir(data.FS, data.BubbleUp, "embedded:"+data.BubbleUp)
	} else {
		d, err = predict.LoadDir(os.DirFS(dir), ".", dir)
	}
	if err != nil {
		return nil, err
	}
	return FromDataset(d)
}

// FromDataset builds a library from a loaded data set: each curve is read at the reporter's
// dials and divided by its isolated value; the score is the recorded contentiousness score
// (contentiousness_scores.csv) or, without one, the nearest-dial score of its measured
// reporter latency (thesis Eq. 6.2, predict.ScoreOf).
func FromDataset(d *predict.Dataset) (*Library, error) {
	scores := map[string]float64{}
	for _, s := range predict.ScoreAll(d, predict.MethodNearest) {
		scores[s.Competitor] = s.MB
	}
	for n, mb := range d.Recorded {
		scores[n] = mb
	}
	lib := &Library{Source: d.Source, Dials: append([]float64(nil), d.Reporter.Dials...), Profiles: map[string]Profile{}}
	for _, name := range d.Names() {
		c := d.Curves[name]
		mb, ok := scores[name]
		if !ok {
			continue // no contentiousness measurement: it can be placed but not scored
		}
		p := Profile{ScoreMB: mb, Slowdown: make([]float64, len(lib.Dials))}
		base := c.At(0)
		for k, dial := range lib.Dials {
			p.Slowdown[k] = c.At(dial) / base
		}
		lib.Profiles[name] = p
	}
	if len(lib.Profiles) == 0 {
		return nil, fmt.Errorf("%s: no application has both a sensitivity curve and a contentiousness score", d.Source)
	}
	return lib, nil
}

// Names returns the profile names, sorted.
func (l *Library) Names() []string {
	return slices.Sorted(maps.Keys(l.Profiles))
}

// Tenant builds a tenant from a profile name ("" or unknown: an unknown tenant).
func (l *Library) Tenant(name, class string, target float64, profile string) Tenant {
	t := Tenant{Name: name, Class: class, Target: target, Profile: profile}
	if p, ok := l.Profiles[profile]; ok {
		t.Known, t.ScoreMB, t.Dials, t.Slowdown = true, p.ScoreMB, l.Dials, p.Slowdown
	}
	return t
}

// Resident turns a tenant into its published form.
func (t Tenant) Resident(uid string, socket int) nodestate.Resident {
	r := nodestate.Resident{Name: t.Name, UID: uid, Class: t.Class, Target: t.Target, Profile: t.Profile, Socket: socket}
	if t.Known {
		r.ScoreMB = t.ScoreMB
		r.Slowdown = make([]float64, len(t.Slowdown))
		for i, v := range t.Slowdown {
			r.Slowdown[i] = math.Round(v*1e4) / 1e4 // compact: 4 decimals of relative time
		}
	}
	return r
}

// PodSpec is what the pod's annotations ask for.
type PodSpec struct {
	Class   string
	Target  float64
	Profile string
}

// ParsePodAnnotations reads colo.io/class (default batch), colo.io/target-ipce and
// colo.io/profile. An invalid class or target is an error naming the annotation; the
// caller then treats the pod as an unprofiled batch tenant.
func ParsePodAnnotations(a map[string]string) (PodSpec, error) {
	s := PodSpec{Class: "batch", Profile: strings.TrimSpace(a[nodestate.ProfileAnnotation])}
	if c, ok := a[nodestate.ClassAnnotation]; ok {
		if !nodestate.ValidClass(c) {
			return PodSpec{Class: "batch"}, fmt.Errorf("annotation %s: %q, want one of %v", nodestate.ClassAnnotation, c, nodestate.Classes)
		}
		s.Class = c
	}
	if v, ok := a[nodestate.TargetAnnotation]; ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(f > 0 && f <= 1) {
			return PodSpec{Class: "batch"}, fmt.Errorf("annotation %s: %q, want a fraction of isolated performance in (0, 1], e.g. 0.9", nodestate.TargetAnnotation, v)
		}
		s.Target = f
	}
	return s, nil
}
