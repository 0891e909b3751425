// Package tenantprofile holds the profiles the agent measures online: a tenant's Bubble-Up
// sensitivity curve and contentiousness score, keyed by what determines its behaviour
// (the image digest, its command and its CPU limit), with the confidence of the
// measurement. Profiles live as JSON files in the agent's state dir (Store), are exported
// as a `colo predict` data directory (Export) and, in Kubernetes, published as ColoProfile
// objects whose spec is a Profile.
package tenantprofile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"colo/predict"
)

// Sources of performance a profile was measured with.
const (
	SourcePerfMetric = "perf-metric" // the tenant's own metric (colo.io/perf-metric)
	SourceIPS        = "ips"         // hardware instructions per second
)

// Profile is one tenant's online profile. Sensitivity is normalised performance
// t_iso/t at each SoI dial (Dials[0] = 0, Perf[0] = 1), the form predict.Curve takes as a
// latency after inversion (Curve).
type Profile struct {
	Key     string   `json:"key"`
	Image   string   `json:"image"`
	Digest  string   `json:"digest"`
	Command []string `json:"command,omitempty"`
	CPUs    float64  `json:"cpus,omitempty"`
	// Source is how performance was read (SourcePerfMetric or SourceIPS), Metric the
	// colo.io/perf-metric value for the former.
	Source string `json:"source"`
	Metric string `json:"metric,omitempty"`
	// Baseline is the tenant's performance alone (the metric's unit: seconds for a
	// latency, per second for a rate); LowerIsBetter says which way it points.
	Baseline      float64   `json:"baseline"`
	LowerIsBetter bool      `json:"lower_is_better"`
	Dials         []float64 `json:"dials_mb"`
	Perf          []float64 `json:"perf"` // normalised performance at each dial (1 = alone)
	// Score is the contentiousness (MB of SoI-equivalent pressure on the reporter).
	Score float64 `json:"score_mb"`
	// Spread is the largest relative spread of a dial's repeats (0.05 = 5 %); Repeats
	// how many A/B pairs each dial had.
	Spread  float64 `json:"spread"`
	Repeats int     `json:"repeats"`
	// Seconds is how long the profiling run took; At when it ended; Node where.
	Seconds float64   `json:"seconds"`
	At      time.Time `json:"at"`
	Node    string    `json:"node,omitempty"`
}

// Key is a profile's key: the image digest, plus the command and the CPU limit when
// given (the same image run differently is another tenant), as a short hash prefixed by
// the digest's first characters for readability.
func Key(digest string, command []string, cpus float64) string {
	h := sha256.New()
	h.Write([]byte(digest))
	for _, c := range command {
		h.Write([]byte{0})
		h.Write([]byte(c))
	}
	h.Write([]byte{1})
	h.Write([]byte(strconv.FormatFloat(cpus, 'g', -1, 64)))
	d := strings.TrimPrefix(digest, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	d = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(d))
	return d + "-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// Curve is the sensitivity as a predict.Curve (a latency-like t/t_iso = 1/Perf).
func (p Profile) Curve() predict.Curve {
	c := predict.Curve{Name: p.Key, Dials: slices.Clone(p.Dials)}
	for _, v := range p.Perf {
		c.Perf = append(c.Perf, 1/v)
	}
	return c
}

// Check validates a profile read from outside (a file, a cluster object).
func (p Profile) Check() error {
	switch {
	case p.Key == "":
		return errors.New("profile without a key")
	case len(p.Dials) < 2 || len(p.Dials) != len(p.Perf):
		return fmt.Errorf("profile %s: %d dials, %d values", p.Key, len(p.Dials), len(p.Perf))
	case p.Dials[0] != 0:
		return fmt.Errorf("profile %s: first dial %v, want 0 (isolation)", p.Key, p.Dials[0])
	}
	for i, v := range p.Perf {
		if !(v > 0) || i > 0 && !(p.Dials[i] > p.Dials[i-1]) {
			return fmt.Errorf("profile %s: bad point %v MB → %v", p.Key, p.Dials[i], v)
		}
	}
	return nil
}

// Store keeps profiles as DIR/KEY.json.
type Store struct{ Dir string }

// Save writes p atomically.
func (s Store) Save(p Profile) error {
	if err := p.Check(); err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.Dir, "."+p.Key+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.Dir, p.Key+".json"))
}

// All reads every profile, sorted by key (a missing dir is empty).
func (s Store) All() ([]Profile, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Profile
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") || e.Name() == reporterFile {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.Dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var p Profile
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if err := p.Check(); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Profile) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Reporter is the node's reporter curve: the reporter's latency (ns) next to the SoI at
// each dial, measured by the profiler before it scores contentiousness.
type Reporter struct {
	Dials   []float64 `json:"dials_mb"`
	Latency []float64 `json:"latency_ns"`
	At      time.Time `json:"at"`
}

// Curve is the reporter curve as a predict.Curve.
func (r Reporter) Curve() predict.Curve {
	return predict.Curve{Name: "reporter", Dials: slices.Clone(r.Dials), Perf: slices.Clone(r.Latency)}
}

const reporterFile = "reporter.json"

// SaveReporter writes the node's reporter curve.
func (s Store) SaveReporter(r Reporter) error {
	if len(r.Dials) < 2 || len(r.Dials) != len(r.Latency) {
		return fmt.Errorf("reporter curve: %d dials, %d latencies", len(r.Dials), len(r.Latency))
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.Dir, reporterFile), append(b, '\n'), 0o644)
}

// Reporter reads the node's reporter curve (ok false when none was measured yet).
func (s Store) Reporter() (Reporter, bool, error) {
	var r Reporter
	b, err := os.ReadFile(filepath.Join(s.Dir, reporterFile))
	if errors.Is(err, fs.ErrNotExist) {
		return r, false, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	return r, err == nil, err
}

// Export writes the profiles as a `colo predict` data directory: reporter_sensitivity.csv
// (the node's reporter curve), sensitivity/KEY_data.csv (t/t_iso per dial, the reporter's
// dials) and contentiousness_scores.csv, loadable with predict.LoadDir (colo predict …
// --data DIR, colo agent --profiles DIR).
func Export(dir string, rep Reporter, ps []Profile) error {
	if err := os.MkdirAll(filepath.Join(dir, "sensitivity"), 0o755); err != nil {
		return err
	}
	var rows []predict.ReporterRow
	for i, d := range rep.Dials {
		rows = append(rows, predict.ReporterRow{Key: strconv.FormatFloat(d, 'g', -1, 64), Avg: rep.Latency[i], Functions: map[string]float64{}})
	}
	if err := writeFile(filepath.Join(dir, "reporter_sensitivity.csv"), func(f *os.File) error { return predict.WriteReporterTable(f, rows) }); err != nil {
		return err
	}
	var scores []predict.Score
	for _, p := range ps {
		if !slices.Equal(p.Dials, rep.Dials) {
			return fmt.Errorf("profile %s: dials %v differ from the reporter curve's %v", p.Key, p.Dials, rep.Dials)
		}
		if err := writeFile(filepath.Join(dir, "sensitivity", predict.CurveFileName(p.Key)), func(f *os.File) error { return predict.WriteCurve(f, p.Curve()) }); err != nil {
			return err
		}
		scores = append(scores, predict.Score{Competitor: p.Key, MB: p.Score})
	}
	return writeFile(filepath.Join(dir, "contentiousness_scores.csv"), func(f *os.File) error { return predict.WriteScores(f, scores) })
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
