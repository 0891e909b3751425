package policy

import (
	"math/rand"
	"reflect"
	"testing"

	"colo/profile"
)

// A planner reused across decisions — applications coming and going, curves replaced by
// re-sampling (new slices with new values), classes changing — decides exactly what a
// fresh LFOC / LFOC+ run decides every time (seeded).
func TestLFOCPlannerMatchesFresh(t *testing.T) {
	set, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(18))
	var pl LFOCPlanner
	apps := randomWorkload(rng, set, 20)
	cv := CurvesOf(apps)
	for step := 0; step < 300; step++ {
		switch rng.Intn(3) {
		case 0: // re-sampling: new slices, perturbed values
			i := rng.Intn(len(cv))
			s := append([]float64(nil), cv[i].Slowdown...)
			m := append([]float64(nil), cv[i].LLCMPKC...)
			for k := range s {
				s[k] *= 1 + 0.1*rng.Float64()
				m[k] *= 1 + 0.3*rng.Float64()
			}
			cv[i] = AppCurves{Slowdown: s, LLCMPKC: m}
		case 1: // a departure or an arrival
			if len(cv) > 3 && rng.Intn(2) == 0 {
				i := rng.Intn(len(cv))
				cv = append(cv[:i:i], cv[i+1:]...)
			} else {
				cv = append(cv, CurvesOf(randomWorkload(rng, set, 1))...)
			}
		}
		cls := make([]Class, len(cv))
		for i, c := range cv {
			cls[i] = ClassifyCurves(c.Slowdown, c.LLCMPKC, PaperThresholds())
		}
		plus := step%4 != 0
		want, err1 := LFOCClusters(plus, cls, cv, 11, DefaultLFOCParams())
		got, err2 := pl.Plan(plus, cls, cv, 11, DefaultLFOCParams())
		if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(norm(want), norm(got)) {
			t.Fatalf("step %d: planner %v (%v), fresh %v (%v)", step, got, err2, want, err1)
		}
	}
}

func norm(cl []Cluster) []Cluster {
	out := make([]Cluster, len(cl))
	for i, c := range cl {
		out[i] = Cluster{Apps: append([]int{}, c.Apps...), Ways: c.Ways}
	}
	return out
}
