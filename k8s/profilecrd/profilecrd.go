// Package profilecrd is the ColoProfile custom resource (colo.io/v1alpha1, cluster-scoped,
// plural coloprofiles): one online profile the colo agent measured on a node
// (tenantprofile.Profile as the spec, named after its key). The publisher applies the
// agent's GET /api/v1/profiles (Apply); the scheduler plugin and the extender keep an Index
// of them and give a pod whose image has no profile in the static library the tenant its
// ColoProfile describes (Index.Tenant), matched by image, command and arguments, and CPU
// limit: what the profile's key is made of on the node.
package profilecrd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"colo/k8s/placement"
	"colo/tenantprofile"
)

// GVR is the ColoProfile resource.
var GVR = schema.GroupVersionResource{Group: "colo.io", Version: "v1alpha1", Resource: "coloprofiles"}

// Kind is the resource's kind.
const Kind = "ColoProfile"

// ToObject is p as a ColoProfile object named after its key.
func ToObject(p tenantprofile.Profile) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(GVR.GroupVersion().String())
	u.SetKind(Kind)
	u.SetName(p.Key)
	u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "colo"})
	return u, nil
}

// FromObject reads a ColoProfile's spec and checks it.
func FromObject(u *unstructured.Unstructured) (tenantprofile.Profile, error) {
	var p tenantprofile.Profile
	spec, ok := u.Object["spec"]
	if !ok {
		return p, fmt.Errorf("coloprofile %s: no spec", u.GetName())
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("coloprofile %s: %w", u.GetName(), err)
	}
	if err := p.Check(); err != nil {
		return p, fmt.Errorf("coloprofile %s: %w", u.GetName(), err)
	}
	return p, nil
}

// Apply creates or updates one ColoProfile per profile (a profile measured again
// replaces the object's spec).
func Apply(ctx context.Context, dyn dynamic.Interface, ps []tenantprofile.Profile) error {
	rc := dyn.Resource(GVR)
	for _, p := range ps {
		u, err := ToObject(p)
		if err != nil {
			return err
		}
		cur, err := rc.Get(ctx, p.Key, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = rc.Create(ctx, u, metav1.CreateOptions{})
		case err == nil:
			u.SetResourceVersion(cur.GetResourceVersion())
			_, err = rc.Update(ctx, u, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("coloprofile %s: %w", p.Key, err)
		}
	}
	return nil
}

// FetchAgent reads the agent's GET <base>/api/v1/profiles (an agent without --profile
// answers 404: no profiles).
func FetchAgent(ctx context.Context, base string) ([]tenantprofile.Profile, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/api/v1/profiles", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s: HTTP %d: %s", req.URL, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var ps []tenantprofile.Profile
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&ps); err != nil {
		return nil, fmt.Errorf("%s: %w", req.URL, err)
	}
	return ps, nil
}

// Index holds the cluster's ColoProfiles for scoring. Safe for concurrent use.
type Index struct {
	mu       sync.RWMutex
	profiles []tenantprofile.Profile
	loaded   time.Time
}

// Set replaces the index's profiles.
func (ix *Index) Set(ps []tenantprofile.Profile, at time.Time) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.profiles, ix.loaded = slices.Clone(ps), at
}

// Len is the number of profiles indexed.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.profiles)
}

// Refresh lists the ColoProfiles (objects that do not read are skipped, the error of the
// first returned beside the rest).
func (ix *Index) Refresh(ctx context.Context, dyn dynamic.Interface) error {
	l, err := dyn.Resource(GVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var ps []tenantprofile.Profile
	var first error
	for i := range l.Items {
		p, err := FromObject(&l.Items[i])
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		ps = append(ps, p)
	}
	ix.Set(ps, time.Now())
	return first
}

// Run refreshes the index every period until ctx ends (logf gets list errors).
func (ix *Index) Run(ctx context.Context, dyn dynamic.Interface, period time.Duration, logf func(string, ...any)) {
	for {
		if err := ix.Refresh(ctx, dyn); err != nil && logf != nil && ctx.Err() == nil {
			logf("colo: coloprofiles: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(period):
		}
	}
}

// imageMatches says whether a pod's image reference names the profile's image: equal,
// or equal once a default tag (":latest") or registry prefix is ignored on either side.
func imageMatches(pod, prof string) bool {
	norm := func(s string) string {
		if i := strings.IndexByte(s, '@'); i >= 0 {
			s = s[:i]
		}
		if i := strings.LastIndexByte(s, ':'); i > strings.LastIndexByte(s, '/') {
			s = s[:i]
		}
		for _, p := range []string{"docker.io/library/", "docker.io/"} {
			s = strings.TrimPrefix(s, p)
		}
		return s
	}
	return pod == prof || norm(pod) == norm(prof) && !strings.Contains(pod, "@") && !strings.Contains(prof, "@")
}

// Match returns the profile of the pod's first container that has one: same image, same
// command and arguments (when the profile records them), same CPU limit (when it records
// one). The newest profile wins when several match.
func (ix *Index) Match(pod *corev1.Pod) (tenantprofile.Profile, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var best tenantprofile.Profile
	found := false
	for _, c := range pod.Spec.Containers {
		cmd := append(slices.Clone(c.Command), c.Args...)
		cpus := 0.0
		if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
			cpus = q.AsApproximateFloat64()
		}
		for _, p := range ix.profiles {
			if !imageMatches(c.Image, p.Image) {
				continue
			}
			if len(p.Command) > 0 && len(cmd) > 0 && !commandMatches(cmd, p.Command) {
				continue
			}
			if p.CPUs > 0 && cpus > 0 && p.CPUs != cpus {
				continue
			}
			if !found || p.At.After(best.At) {
				best, found = p, true
			}
		}
		if found {
			return best, true
		}
	}
	return best, false
}

// commandMatches compares a pod container's command+args with the runtime's
// entrypoint+cmd: equal, or equal after the profile's leading entrypoint elements the pod
// leaves to the image (a pod that gives only args).
func commandMatches(pod, prof []string) bool {
	if slices.Equal(pod, prof) {
		return true
	}
	return len(pod) < len(prof) && slices.Equal(pod, prof[len(prof)-len(pod):])
}

// Tenant is the pod as a placement tenant from its ColoProfile (ok false: none matches).
// The profile's own dials carry its curve: slowdown t/t_iso = 1/perf at each dial.
func (ix *Index) Tenant(pod *corev1.Pod, name, class string, target float64) (placement.Tenant, bool) {
	p, ok := ix.Match(pod)
	if !ok {
		return placement.Tenant{}, false
	}
	t := placement.Tenant{Name: name, Class: class, Target: target, Profile: "coloprofile/" + p.Key, Known: true,
		ScoreMB: p.Score, Dials: slices.Clone(p.Dials)}
	for _, v := range p.Perf {
		t.Slowdown = append(t.Slowdown, 1/v)
	}
	return t, true
}
