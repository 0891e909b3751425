package tenantprofile

import (
	"math"
	"os"
	"reflect"
	"testing"
	"time"

	"colo/predict"
)

func sample(key string, score float64) Profile {
	return Profile{Key: key, Image: "colo:latest", Digest: "sha256:abc", Source: SourcePerfMetric,
		Metric: ":8080/metrics rate(x)", Baseline: 100, Dials: []float64{0, 8, 16}, Perf: []float64{1, 0.8, 0.5},
		Score: score, Spread: 0.02, Repeats: 3, Seconds: 12, At: time.Unix(1700000000, 0).UTC()}
}

func TestKey(t *testing.T) {
	a := Key("sha256:0123456789abcdef", []string{"colo", "stress", "serve"}, 2)
	if a != Key("sha256:0123456789abcdef", []string{"colo", "stress", "serve"}, 2) {
		t.Fatal("key not deterministic")
	}
	for _, b := range []string{Key("sha256:0123456789abcdee", []string{"colo", "stress", "serve"}, 2),
		Key("sha256:0123456789abcdef", []string{"colo", "stress", "load"}, 2),
		Key("sha256:0123456789abcdef", []string{"colo", "stress", "serve"}, 1),
		Key("sha256:0123456789abcdef", []string{"colo stress", "serve"}, 2)} {
		if a == b {
			t.Errorf("different tenants share key %s", a)
		}
	}
	if a[:13] != "0123456789ab-" {
		t.Errorf("key %s should start with the digest", a)
	}
}

// Profiles round-trip through the store; the export is a data directory predict loads
// and predicts from exactly as from the profiles themselves.
func TestStoreAndExportRoundTrip(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	ps := []Profile{sample("aaa", 4), sample("bbb", 12)}
	for _, p := range ps {
		if err := s.Save(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Save(Profile{Key: "bad", Dials: []float64{0}, Perf: []float64{1}}); err == nil {
		t.Error("saved a one-point profile")
	}
	got, err := s.All()
	if err != nil || !reflect.DeepEqual(got, ps) {
		t.Fatalf("All = %+v %v", got, err)
	}
	rep := Reporter{Dials: []float64{0, 8, 16}, Latency: []float64{100, 140, 200}}
	if err := s.SaveReporter(rep); err != nil {
		t.Fatal(err)
	}
	r2, ok, err := s.Reporter()
	if !ok || err != nil || !reflect.DeepEqual(r2.Dials, rep.Dials) {
		t.Fatalf("reporter %+v %v %v", r2, ok, err)
	}
	dir := t.TempDir()
	if err := Export(dir, rep, got); err != nil {
		t.Fatal(err)
	}
	d, err := predict.LoadDir(os.DirFS(dir), ".", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if d.Recorded[p.Key] != p.Score {
			t.Errorf("%s: exported score %v, want %v", p.Key, d.Recorded[p.Key], p.Score)
		}
		for _, mb := range []float64{0, 4, 8, 12, 16} {
			a, _ := predict.Predict(d.Curves[p.Key], mb, predict.MethodLinear)
			b, _ := predict.Predict(p.Curve(), mb, predict.MethodLinear)
			if math.Abs(a-b) > 1e-12 {
				t.Errorf("%s at %v MB: exported %v, profile %v", p.Key, mb, a, b)
			}
		}
		if v, _ := predict.Predict(d.Curves[p.Key], 16, predict.MethodLinear); math.Abs(v-0.5) > 1e-12 {
			t.Errorf("normalised perf at 16 MB %v, the profile says 0.5", v)
		}
	}
	bad := sample("ccc", 1)
	bad.Dials = []float64{0, 4, 16}
	if err := Export(t.TempDir(), rep, []Profile{bad}); err == nil {
		t.Error("exported a profile on other dials than the reporter's")
	}
}
