package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"colo/internal/testenv"
	"colo/k8s/deploy"
	"colo/k8s/nodestate"
	"colo/k8s/placement"
	"colo/k8s/profilecrd"
	"colo/k8s/scoring"
	"colo/k8s/testcluster"
	"colo/tenantprofile"
)

// The ColoProfile CRD of deploy/base is served by a real API server; the publisher's
// Apply of an agent's /api/v1/profiles creates one object per profile (and updates it when
// measured again); the scorer's index loads them and scores a pod of that image with its
// curve instead of neutrally.
func TestColoProfilePublishedAndLoaded(t *testing.T) {
	var err error
	if m := testcluster.Missing("etcd", "kube-apiserver"); len(m) > 0 {
		err = fmt.Errorf("%v missing in %s", m, testcluster.BinDir())
	}
	testenv.Need(t, need, err)
	ctx := context.Background()
	c, err := testcluster.Start(ctx, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	dc, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := placement.LoadLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	b, err := deploy.FS.ReadFile(deploy.ProfileCRD)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	crd := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dc.Resource(crd).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "coloprofiles served", func() (bool, string) {
		rl, err := c.Client.Discovery().ServerResourcesForGroupVersion(profilecrd.GVR.GroupVersion().String())
		if err != nil {
			return false, err.Error()
		}
		for _, r := range rl.APIResources {
			if r.Name == profilecrd.GVR.Resource {
				return true, ""
			}
		}
		return false, "not in discovery"
	})
	p := tenantprofile.Profile{Key: "e7f12d4bfdf0-c1cf801be316d155", Image: "colo.local/kv:1", Digest: "sha256:e7f12d4bfdf0",
		Command: []string{"/colo", "stress", "serve"}, Source: tenantprofile.SourcePerfMetric, Dials: []float64{0, 8, 32},
		Perf: []float64{1, 0.7, 0.4}, Score: 5, Spread: 0.04, Repeats: 2, Seconds: 30, At: time.Now().UTC().Truncate(time.Second), Node: "n1"}
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode([]tenantprofile.Profile{p})
	}))
	defer agent.Close()
	ps, err := profilecrd.FetchAgent(ctx, agent.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := profilecrd.Apply(ctx, dc, ps); err != nil {
		t.Fatal(err)
	}
	ps[0].Score = 6
	if err := profilecrd.Apply(ctx, dc, ps); err != nil {
		t.Fatalf("second apply (update): %v", err)
	}
	var ix profilecrd.Index
	if err := ix.Refresh(ctx, dc); err != nil || ix.Len() != 1 {
		t.Fatalf("index: %d, %v", ix.Len(), err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kv-2", Namespace: "default", UID: "uid-kv-2",
		Annotations: map[string]string{nodestate.ClassAnnotation: "priority"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kv", Image: "colo.local/kv:1", Args: []string{"stress", "serve"}}}}}
	tn := scoring.New(lib, scoring.Config{Profiles: &ix}).PodTenant(pod)
	if !tn.Known || tn.ScoreMB != 6 || tn.Profile != "coloprofile/"+p.Key {
		t.Errorf("pod tenant %+v: want the published profile (score 6 after the update)", tn)
	}
	if tn := scoring.New(lib, scoring.Config{}).PodTenant(pod); tn.Known {
		t.Error("without ColoProfiles the pod is known")
	}
}
