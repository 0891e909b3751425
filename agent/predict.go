package agent

import (
	"fmt"
	"sort"
	"strings"

	"colo/agent/api"
	"colo/predict"
)

// Predictor predicts each container's slowdown next to the other containers of its
// socket from Bubble-Up profiles (a `colo predict` data directory, package predict): the
// container's sensitivity curve S_A and its neighbours' contentiousness scores I_C
// (reporter latencies scored on the reporter curve, predict.ScoreAll; the recorded
// contentiousness_scores.csv when the directory has no contentiousness.csv), combined by
// Govindan's sum rule (predict.CombineScores) and read off S_A (predict.PredictMany):
//
//	P̂(A | C1…Cn) = S_A(Σ I_Ci) = t_A(0) / t_A(Σ I_Ci),  slowdown = 1 / P̂ = t_A(Σ I_Ci) / t_A(0)
//
// (thesis Eq. 4.2, seed002.md §1.4 and §2). It predicts sharing without partitioning, as
// Bubble-Up does: the allocation the policy gives is not taken into account.
type Predictor struct {
	d      *predict.Dataset
	method predict.Method
	scores map[string]float64
}

// NewPredictor builds a predictor over a loaded data directory.
func NewPredictor(d *predict.Dataset, m predict.Method) *Predictor {
	p := &Predictor{d: d, method: m, scores: map[string]float64{}}
	if len(d.Contention) > 0 {
		p.scores = predict.ScoreMap(predict.ScoreAll(d, m))
	} else {
		for n, v := range d.Recorded {
			p.scores[n] = v
		}
	}
	return p
}

// Profile is the data set's application name for a container image ("" when it has
// none): the image as given, without its tag or digest, or the last path component of
// that (registry.local/spec/605.mcf_s:1 → 605.mcf_s).
func (p *Predictor) Profile(image string) string {
	repo := image
	if i := strings.IndexByte(repo, '@'); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo = repo[:i]
	}
	base := repo[strings.LastIndexByte(repo, '/')+1:]
	for _, n := range []string{image, repo, base} {
		if _, ok := p.d.Curves[n]; ok && n != "" {
			return n
		}
	}
	return ""
}

// Slowdown predicts t / t_iso of application app next to the competitors (application
// names, "" for a neighbour without a profile). Competitors without a contentiousness
// score are left out, and the note names how many.
func (p *Predictor) Slowdown(app string, competitors []string) (slowdown float64, note string, err error) {
	c, ok := p.d.Curves[app]
	if !ok {
		return 0, "", fmt.Errorf("no sensitivity curve for %q", app)
	}
	var scores []float64
	var unscored []string
	for _, n := range competitors {
		if s, ok := p.scores[n]; ok && n != "" {
			scores = append(scores, s)
		} else {
			unscored = append(unscored, n)
		}
	}
	perf, _, pnote, err := predict.PredictMany(c, scores, p.method)
	if err != nil {
		return 0, "", err
	}
	if perf <= 0 {
		return 0, "", fmt.Errorf("%s: predicted performance %v", app, perf)
	}
	var notes []string
	if len(unscored) > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d neighbours without a contentiousness profile left out", len(unscored), len(competitors)))
	}
	if pnote != "" {
		notes = append(notes, pnote)
	}
	return 1 / perf, strings.Join(notes, "; "), nil
}

// predictions fills the containers' predicted slowdowns (neighbours: every other
// managed container on the same socket).
func (p *Predictor) predictions(cs []api.ContainerStatus) {
	bySocket := map[int][]int{}
	for i := range cs {
		cs[i].Profile = p.Profile(cs[i].Image)
		bySocket[cs[i].Socket] = append(bySocket[cs[i].Socket], i)
	}
	for _, idx := range bySocket {
		sort.Ints(idx)
		for _, i := range idx {
			if cs[i].Profile == "" {
				continue
			}
			var comp []string
			for _, j := range idx {
				if j != i {
					comp = append(comp, cs[j].Profile)
				}
			}
			if v, note, err := p.Slowdown(cs[i].Profile, comp); err == nil {
				cs[i].PredictedSlowdown, cs[i].PredictionNote = ptr(v), note
			} else {
				cs[i].PredictionNote = err.Error()
			}
		}
	}
}
