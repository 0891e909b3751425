package apitest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"colo/k8s/deploy"
)

// objects reads a kustomization directory of deploy.FS: its resources in order, a
// directory resource (../base) recursively. Only plain resource lists are used, so no
// kustomize is needed to read them.
func objects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	b, err := deploy.FS.ReadFile(path.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range k.Resources {
		p := path.Clean(path.Join(dir, r))
		if !strings.HasSuffix(p, ".yaml") {
			out = append(out, objects(t, p)...)
			continue
		}
		doc, err := deploy.FS.ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096)
		for {
			var m map[string]any
			if err := d.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if len(m) > 0 {
				out = append(out, &unstructured.Unstructured{Object: m})
			}
		}
	}
	return out
}

// Every manifest of the base and of both kustomizations is accepted by a real API server
// (server-side apply: schema, RBAC references, the CRD's structural schema).
func TestManifestsApply(t *testing.T) {
	c, dc, _ := cluster(t)
	ctx := context.Background()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))
	kinds := map[string]bool{}
	for _, dir := range deploy.Dirs {
		for _, o := range objects(t, dir) {
			gvk := o.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatalf("%s: %s %s: %v", dir, gvk, o.GetName(), err)
			}
			b, err := o.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			ri := dc.Resource(m.Resource).Namespace(o.GetNamespace())
			if o.GetNamespace() == "" {
				ri = dc.Resource(m.Resource)
			}
			force := true
			if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: "colo-test", Force: &force}); err != nil {
				t.Errorf("%s: %s %s/%s: %v", dir, gvk.Kind, o.GetNamespace(), o.GetName(), err)
			}
			kinds[gvk.Kind] = true
		}
	}
	for _, k := range []string{"CustomResourceDefinition", "DaemonSet", "Deployment", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "RoleBinding", "ServiceAccount", "Service", "Namespace"} {
		if !kinds[k] {
			t.Errorf("no %s in the manifests", k)
		}
	}
}

// deployedSchedulerConfig returns the KubeSchedulerConfiguration of the scheduler's
// ConfigMap, with leader election off and the test cluster's kubeconfig (the only
// changes from what users deploy).
func deployedSchedulerConfig(t *testing.T) string {
	t.Helper()
	for _, o := range objects(t, "scheduler") {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		cfg, _, _ := unstructured.NestedString(o.Object, "data", "config.yaml")
		var m map[string]any
		if err := yaml.Unmarshal([]byte(cfg), &m); err != nil {
			t.Fatalf("%s: config.yaml: %v", deploy.SchedulerConfig, err)
		}
		m["leaderElection"] = map[string]any{"leaderElect": false}
		m["clientConnection"] = map[string]any{"kubeconfig": "KUBECONFIG"}
		b, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	t.Fatalf("%s: no ConfigMap", deploy.SchedulerConfig)
	return ""
}
