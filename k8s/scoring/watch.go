package scoring

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"colo/k8s/nodestate"
)

// GVR is the NodeInterference resource.
var GVR = schema.GroupVersionResource{Group: nodestate.Group, Version: nodestate.Version, Resource: nodestate.Resource}

func unwrap(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

// WatchNodes keeps the cache's annotations in step with a node informer (the scheduler's
// own shared informer, so no second watch).
func WatchNodes(inf cache.SharedIndexInformer, c *Cache) error {
	set := func(obj any) {
		if n, ok := unwrap(obj).(*corev1.Node); ok {
			v, present := n.Annotations[nodestate.Annotation]
			c.SetAnnotation(n.Name, v, present)
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if n, ok := unwrap(obj).(*corev1.Node); ok {
				c.SetAnnotation(n.Name, "", false)
			}
		},
	})
	return err
}

// WatchObjects follows the NodeInterference objects when the API server serves the
// resource (if not, it says so and the cache uses annotations only). It waits up to wait
// for the first list; an API server that is briefly unreachable is retried by the
// informer while the last known states stay in the cache (and turn stale by age).
func WatchObjects(ctx context.Context, disc discovery.DiscoveryInterface, dc dynamic.Interface, c *Cache, wait time.Duration, logf func(string, ...any)) error {
	if _, err := disc.ServerResourcesForGroupVersion(GVR.GroupVersion().String()); err != nil {
		logf("colo: %s not served (%v): reading node annotations %s only", GVR.GroupResource(), err, nodestate.Annotation)
		return nil
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(dc, 0)
	inf := f.ForResource(GVR).Informer()
	set := func(obj any) {
		if u, ok := unwrap(obj).(*unstructured.Unstructured); ok {
			spec, found, err := unstructured.NestedMap(u.Object, "spec")
			if err != nil || !found {
				spec = map[string]any{"error": fmt.Sprintf("spec missing or not an object: %v", err)}
			}
			c.SetObject(u.GetName(), spec)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if u, ok := unwrap(obj).(*unstructured.Unstructured); ok {
				c.SetObject(u.GetName(), nil)
			}
		},
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
		logf("colo: %s not listed within %s: nodes score neutrally until it is", GVR.GroupResource(), wait)
	}
	return nil
}
