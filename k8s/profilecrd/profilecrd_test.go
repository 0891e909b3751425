package profilecrd

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"

	"colo/k8s/nodestate"
	"colo/k8s/placement"
	"colo/k8s/scoring"
	"colo/tenantprofile"
)

func prof(key, image string, cmd []string, cpus, score float64, at int64) tenantprofile.Profile {
	return tenantprofile.Profile{Key: key, Image: image, Digest: "sha256:" + key, Command: cmd, CPUs: cpus, Source: tenantprofile.SourcePerfMetric,
		Dials: []float64{0, 8, 32}, Perf: []float64{1, 0.8, 0.5}, Score: score, Spread: 0.03, Repeats: 2, At: time.Unix(at, 0).UTC()}
}

func fakeClient() *dynfake.FakeDynamicClient {
	return dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{GVR: "ColoProfileList"})
}

func pod(image string, cmd, args []string, cpus string) *corev1.Pod {
	c := corev1.Container{Name: "c", Image: image, Command: cmd, Args: args}
	if cpus != "" {
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpus)}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p",
		Annotations: map[string]string{nodestate.ClassAnnotation: "batch"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

// Profiles published from an agent's /api/v1/profiles round-trip through ColoProfile
// objects (created, then updated when measured again) into the index, and a pod of that
// image is scored with its curve.
func TestPublishIndexAndScore(t *testing.T) {
	ps := []tenantprofile.Profile{prof("aaa-1", "registry.local/kv:1", []string{"colo", "stress", "serve"}, 0, 6, 100),
		prof("bbb-2", "batch:latest", []string{"colo", "stress", "random"}, 2, 12, 100)}
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/profiles" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(ps)
	}))
	defer agent.Close()
	ctx := context.Background()
	got, err := FetchAgent(ctx, agent.URL)
	if err != nil || !reflect.DeepEqual(got, ps) {
		t.Fatalf("FetchAgent = %+v, %v", got, err)
	}
	dc := fakeClient()
	if err := Apply(ctx, dc, got); err != nil {
		t.Fatal(err)
	}
	again := ps[0]
	again.Score, again.At = 7, time.Unix(200, 0).UTC()
	if err := Apply(ctx, dc, []tenantprofile.Profile{again}); err != nil {
		t.Fatal(err)
	}
	var ix Index
	if err := ix.Refresh(ctx, dc); err != nil || ix.Len() != 2 {
		t.Fatalf("index: %d profiles, %v", ix.Len(), err)
	}
	p, ok := ix.Match(pod("registry.local/kv:1", []string{"colo"}, []string{"stress", "serve"}, ""))
	if !ok || p.Key != "aaa-1" || p.Score != 7 {
		t.Fatalf("match %+v %v: want the updated aaa-1", p, ok)
	}
	// a pod giving only the arguments (the image's entrypoint), another CPU limit, another image
	if _, ok := ix.Match(pod("batch", nil, []string{"stress", "random"}, "2")); !ok {
		t.Error("args-only pod of batch:latest with 2 CPUs not matched")
	}
	if _, ok := ix.Match(pod("batch", nil, []string{"stress", "random"}, "1")); ok {
		t.Error("a pod with another CPU limit matched")
	}
	if _, ok := ix.Match(pod("other:1", nil, nil, "")); ok {
		t.Error("another image matched")
	}
	// The scorer uses it for a pod the library does not know: its curve at the profile's
	// dials (slowdown 1/perf) and its score.
	lib, err := placement.LoadLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	s := scoring.New(lib, scoring.Config{Profiles: &ix})
	tn := s.PodTenant(pod("registry.local/kv:1", []string{"colo", "stress", "serve"}, nil, ""))
	if !tn.Known || tn.ScoreMB != 7 || tn.Profile != "coloprofile/aaa-1" || !reflect.DeepEqual(tn.Dials, []float64{0, 8, 32}) ||
		math.Abs(tn.Slowdown[2]-2) > 1e-12 {
		t.Errorf("tenant %+v", tn)
	}
	if tn := scoring.New(lib, scoring.Config{}).PodTenant(pod("registry.local/kv:1", nil, nil, "")); tn.Known {
		t.Error("without the index the pod should be unknown")
	}
	// Its performance next to 16 MB of neighbours is read off the profile's own curve:
	// t/t_iso interpolated between 1.25 (8 MB) and 2 (32 MB).
	if v, want := tn.PerfNextTo(16), 1/(1.25+(2-1.25)*8/24); math.Abs(v-want) > 1e-9 {
		t.Errorf("perf next to 16 MB = %v, want %v", v, want)
	}
}

func TestFromObjectRejectsBadSpecs(t *testing.T) {
	u, _ := ToObject(prof("k", "i", nil, 0, 1, 1))
	u.Object["spec"].(map[string]any)["perf"] = []any{1.0}
	if _, err := FromObject(u); err == nil {
		t.Error("a profile with 3 dials and 1 value read")
	}
}
